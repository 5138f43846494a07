"""Does bfloat16 change what pre-training learns? A numerics check.

Runs one pre-training schedule (default: the quick start's,
scripts/quickstart_hparams.json) in float32 and in mixed bfloat16 with
several seeds each, through run_pretraining.py as a user would, and compares
the held-out results: the final metrics (masked-LM accuracy and loss, the
discriminator's AUC, loss and accuracy, the replacement rate) and the
held-out loss curves (every `--eval-every` steps). Each pair is tested with
Welch's t-test over the seeds (studies/statistics.py). The pairs are one
family of a dozen tests, so one in twenty comes out below p 0.05 by chance
alone: the verdict uses Holm's adjustment of the family's p-values, and the
check passes when no adjusted p is below 0.05. The raw p of each pair is
shown too.

The runs are `<data-dir>/models/numerics-<dtype>-s<seed>`; a finished run
is not run again, so an interrupted check resumes. The report goes to
`--output` as numerics.md and numerics.json, with each run's wall time.

Usage (after the quick start built runs/quickstart):
  python bench/dtype_numerics.py --data-dir runs/quickstart --seeds 1,2,3
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from studies import statistics  # pylint: disable=g-import-not-at-top
from util import io_utils
from util.cli import run_main
from util.errors import UserError
from util.io_utils import write_json_atomic
from util.io_utils import write_text_atomic

DTYPES = ("float32", "bfloat16")
# Final held-out metrics compared, and the losses compared along the curve.
FINAL_METRICS = ("masked_lm_accuracy", "masked_lm_loss", "disc_auc",
                 "disc_loss", "disc_accuracy", "replacement_rate")
CURVE_METRICS = ("masked_lm_loss", "disc_loss")


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--data-dir", required=True,
                      help="holds vocab.txt and pretrain_tfrecords/")
  parser.add_argument("--hparams", default=os.path.join(
      ROOT, "scripts", "quickstart_hparams.json"),
                      help="JSON file or string of the schedule")
  parser.add_argument("--seeds", default="1,2,3")
  parser.add_argument("--dtypes", default=",".join(DTYPES),
                      help="mixed_precision values compared (two)")
  parser.add_argument("--eval-every", type=int, default=100)
  parser.add_argument("--steps", type=int, default=0,
                      help="a shorter schedule (warm-up 10%%); 0 keeps it")
  parser.add_argument("--output", default=None,
                      help="report directory (default <data-dir>/numerics)")
  return parser.parse_args(argv)


def load_hparams(text):
  """The schedule: a JSON file's path or a JSON object string."""
  try:
    if text.lstrip().startswith("{"):
      return json.loads(text)
    if not os.path.isfile(text):
      raise UserError("--hparams: %s is neither a file nor a JSON object"
                      % text)
    return io_utils.read_json(text)
  except ValueError as e:
    raise UserError("--hparams %s: not valid JSON (%s)" % (text, e))


def parse_list(text, name, kind=str):
  try:
    values = [kind(v.strip()) for v in text.split(",") if v.strip()]
  except ValueError:
    raise UserError("--%s %r: expected comma-separated %s values"
                    % (name, text, kind.__name__))
  if len(values) != len(set(values)) or not values:
    raise UserError("--%s %r: give distinct values" % (name, text))
  return values


def check_data_dir(data_dir):
  for name in ("vocab.txt", "pretrain_tfrecords"):
    path = os.path.join(data_dir, name)
    if not os.path.exists(path):
      raise UserError("%s not found: --data-dir needs a vocabulary and "
                      "shards (bash scripts/quickstart.sh builds them in "
                      "runs/quickstart)" % path)


def run_hparams(base, dtype, seed, eval_every, steps):
  """The hparams of one run of the check."""
  hparams = dict(base, mixed_precision=dtype, seed=seed,
                 eval_every=eval_every, do_eval=True)
  if steps:
    hparams.update(num_train_steps=steps, num_warmup_steps=max(1, steps // 10))
  return hparams


def final_results(model_dir, steps):
  """The run's held-out history (a list of dicts with "step") when its
  final evaluation at `steps` is there, else None."""
  path = os.path.join(model_dir, "results", "pretrain_eval_history.json")
  if not os.path.isfile(path):
    return None
  history = io_utils.read_json(path)
  return history if history and history[-1]["step"] >= steps else None


def run_one(data_dir, name, hparams, log):
  """Runs run_pretraining.py; its wall seconds. Exit codes pass through."""
  argv = [sys.executable, os.path.join(ROOT, "run_pretraining.py"),
          "--data-dir", data_dir, "--model-name", name,
          "--hparams", json.dumps(hparams)]
  log("== %s" % name)
  start = time.time()
  code = subprocess.call(argv, cwd=ROOT)
  if code:
    raise UserError("%s exited with %d (its output is above); run the check "
                    "again to resume" % (name, code))
  return time.time() - start


def compare(histories, dtypes):
  """Rows comparing the dtypes: one per final metric, then one per curve
  point. `histories`: {dtype: [history per seed]}. A row is a dict with
  metric, step, the values per dtype, and Welch's (diff, se, p)."""
  rows = []
  first, second = dtypes

  def row(metric, step, pick):
    values = {d: [pick(h) for h in histories[d]] for d in dtypes}
    rows.append(dict(metric=metric, step=step, values=values,
                     welch=statistics.welch(values[second], values[first])))

  for metric in FINAL_METRICS:
    row(metric, "final", lambda h, m=metric: h[-1][m])
  steps = sorted({e["step"] for hs in histories.values() for h in hs
                  for e in h} - {histories[first][0][-1]["step"]})
  for metric in CURVE_METRICS:
    for step in steps:
      row(metric, step, lambda h, m=metric, s=step: next(
          (e[m] for e in h if e["step"] == s), None))
  tested = [r for r in rows if r["welch"] is not None]
  for r, adjusted in zip(tested, statistics.holm(
      [r["welch"][2] for r in tested])):
    r["holm_p"] = adjusted
  for r in rows:
    r["verdict"] = ("n/a (fewer than 2 runs)" if r["welch"] is None else
                    "separated" if r["holm_p"] < statistics.SEPARATION_P
                    else "not separated")
  return rows


def format_report(rows, dtypes, seeds, seconds, hparams):
  first, second = dtypes

  def cell(values, digits=4):
    mean, std, n = statistics.summary(values)
    return "n/a" if mean is None else "%.*f ± %.*f (n=%d)" % (
        digits, mean, digits, std, n)

  separated = [r for r in rows if r["verdict"] == "separated"]
  lines = [
      "# Numerics check: %s vs %s" % (second, first), "",
      "Schedule: %d steps, batch %s, seq %s, sampling %s, focal_gamma %s; "
      "seeds %s. Mean ± sample std over the seeds; Welch's test of %s "
      "minus %s." % (hparams["num_train_steps"],
                     hparams.get("train_batch_size"),
                     hparams.get("max_seq_length"),
                     hparams.get("sampling", "(default)"),
                     hparams.get("focal_gamma", "(default)"),
                     ", ".join(map(str, seeds)), second, first), "",
      "| metric | step | %s | %s | %s - %s (raw p) | Holm p | verdict |" % (
          first, second, second, first),
      "|---|---|---|---|---|---|---|"]
  for r in rows:
    holm = r.get("holm_p")
    lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
        r["metric"], r["step"], cell(r["values"][first]),
        cell(r["values"][second]),
        statistics.difference(r["values"][second], r["values"][first]),
        "n/a" if holm is None else "%.3f" % holm,
        r["verdict"]))
  lines += ["", "Wall time per run (s): " + "; ".join(
      "%s %s" % (d, cell(seconds[d], 0)) for d in dtypes), "",
            "Verdict (Holm-adjusted p < %.2f): %s." % (
                statistics.SEPARATION_P,
                "none of the %d comparisons separated" % len(rows)
                if not separated else "%d of %d separated: %s" % (
                    len(separated), len(rows), ", ".join(
                        "%s@%s" % (r["metric"], r["step"])
                        for r in separated)))]
  return "\n".join(lines) + "\n"


def main(argv=None):
  args = parse_args(argv)
  seeds = parse_list(args.seeds, "seeds", int)
  dtypes = parse_list(args.dtypes, "dtypes")
  if len(dtypes) != 2:
    raise UserError("--dtypes %r: give two dtypes to compare" % args.dtypes)
  check_data_dir(args.data_dir)
  base = load_hparams(args.hparams)
  if not args.steps and "num_train_steps" not in base:
    raise UserError("--hparams %s sets no num_train_steps; set it or give "
                    "--steps" % args.hparams)
  output = args.output or os.path.join(args.data_dir, "numerics")
  timings_path = os.path.join(output, "timings.json")
  timings = (io_utils.read_json(timings_path)
             if os.path.isfile(timings_path) else {})
  histories = {d: [] for d in dtypes}
  hparams = None
  for seed in seeds:
    for dtype in dtypes:
      hparams = run_hparams(base, dtype, seed, args.eval_every, args.steps)
      name = "numerics-%s-s%d" % (dtype, seed)
      model_dir = os.path.join(args.data_dir, "models", name)
      if final_results(model_dir, hparams["num_train_steps"]) is None:
        timings[name] = run_one(args.data_dir, name, hparams, print)
        write_json_atomic(timings_path, timings)
      history = final_results(model_dir, hparams["num_train_steps"])
      if history is None:
        raise UserError("%s finished without a final evaluation at step %d"
                        % (model_dir, hparams["num_train_steps"]))
      histories[dtype].append(history)
  rows = compare(histories, dtypes)
  seconds = {d: [timings.get("numerics-%s-s%d" % (d, s)) for s in seeds]
             for d in dtypes}
  report = format_report(rows, dtypes, seeds, seconds, hparams)
  write_text_atomic(os.path.join(output, "numerics.md"), report)
  write_json_atomic(os.path.join(output, "numerics.json"), dict(
      dtypes=dtypes, seeds=seeds, hparams=hparams, rows=rows,
      seconds=seconds))
  print(report)
  print("Report: %s" % os.path.join(output, "numerics.md"))


if __name__ == "__main__":
  run_main(main)
