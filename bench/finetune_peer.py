"""Fine-tuning a released model: ours beside transformers, seed by seed.

Both sides fine-tune the Hugging Face BERT folder `--model` on the SST-2
files of `--task-dir` (train.tsv, dev.tsv: header `sentence<TAB>label`)
with one recipe, our fine-tuning defaults: ours by run_finetuning.py as a
user runs it, transformers by bench/finetune_peer_hf.py, each run in a
child process (torch and TensorFlow never share one), alternating (seed 1
ours, seed 1 transformers, seed 2 ours, ...) so load drift hits both.

Reported: dev accuracy at the end of training and at the best epoch;
training examples/s (no loading, no evaluation), also after the first
`--log-every` steps (ours traces its step in them); evaluation
examples/s of a first pass over dev (ours traces its predict step in it)
and a second. Ours is timed from the outside, by when its lines arrive
(`add_training_time`, `run_ours`).

Usage:
  python bench/finetune_peer.py --model MODEL_DIR --task-dir TASK_DIR \\
      --seeds 1,2,3,4,5 --out runs.jsonl [--train-rows 500] [--dtype bfloat16]
  python bench/finetune_peer.py --report runs.jsonl   (table of saved lines)
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

from util.cli import run_main
from util.errors import UserError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIDES = ("ours", "transformers")
# Our fine-tuning defaults (configure_fields.py, FINETUNE_FIELDS; the
# learning rate of model_size "small", configure.py's presets).
DEFAULTS = dict(learning_rate=3e-4, warmup_proportion=0.1,
                weight_decay=0.01, adam_epsilon=1e-6, clip_norm=1.0,
                layerwise_lr_decay=0.8)
# The settings that make runs comparable: the table groups by them.
_KEYS = ("model", "task_dir", "train_rows", "dev_rows", "max_seq_length",
         "batch_size", "epochs", "threads", "dtype", "log_every") + tuple(
             DEFAULTS)


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  add = parser.add_argument
  add("--model", help="Hugging Face BERT folder")
  add("--task-dir", help="holds train.tsv and dev.tsv")
  add("--train-rows", type=int, default=0, help="the first N (0: all)")
  add("--dev-rows", type=int, default=0, help="the first N (0: all)")
  add("--max-seq-length", type=int, default=128)
  add("--batch-size", type=int, default=32)
  add("--epochs", type=float, default=1.0)
  for key, value in DEFAULTS.items():
    add("--" + key.replace("_", "-"), type=float, default=value)
  add("--log-every", type=int, default=10,
      help="steps of a progress window (ours' hparam log_every)")
  add("--threads", type=int, default=2)
  add("--dtype", default="float32", choices=("float32", "bfloat16"))
  add("--seeds", default="1,2,3,4,5",
      type=lambda text: [int(seed) for seed in text.split(",")])
  add("--sides", default=",".join(SIDES), type=lambda text: text.split(","))
  add("--out", help="append each run's JSON line to this file")
  add("--report", metavar="JSONL", help="print the table of saved lines")
  add("--work-dir", help="keep the runs' files here (default: removed)")
  add("--seed", type=int, help=argparse.SUPPRESS)
  for hidden in ("--side", "--data-dir", "--run-dir"):
    add(hidden, help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if not args.report and not (args.model and args.task_dir):
    parser.error("--model and --task-dir are required (or --report)")
  if args.threads < 1 or args.batch_size < 1 or args.max_seq_length < 8:
    parser.error("--threads and --batch-size must be >= 1, "
                 "--max-seq-length >= 8")
  if set(args.sides) - set(SIDES):
    parser.error("--sides takes %s" % ",".join(SIDES))
  return args


def cpu_flags():
  """{flag: bool}: the CPU's native bfloat16 instructions (/proc/cpuinfo)."""
  with open("/proc/cpuinfo") as f:
    flags = set(re.findall(r"^flags\s*:(.*)$", f.read(), re.M)[0].split())
  return {flag: flag in flags for flag in ("avx512_bf16", "amx_bf16")}


def prepare_data(args, work_dir):
  """Both sides' data dir: finetuning_data/sst/ with the first rows of
  train.tsv and dev.tsv, and test.tsv (index, sentence) of dev's."""
  task = os.path.join(work_dir, "data", "finetuning_data", "sst")
  os.makedirs(task, exist_ok=True)
  for split, keep in (("train", args.train_rows), ("dev", args.dev_rows)):
    path = os.path.join(args.task_dir, split + ".tsv")
    if not os.path.isfile(path):
      raise UserError("no %s in --task-dir" % path)
    with open(path, encoding="utf-8") as f:
      rows = [line.rstrip("\r\n").split("\t") for line in f if line.strip()]
    if "sentence" not in rows[0] or "label" not in rows[0]:
      raise UserError("%s: the header must name sentence and label" % path)
    rows = rows[:keep + 1] if keep else rows
    with open(os.path.join(task, split + ".tsv"), "w", encoding="utf-8") as f:
      f.writelines("\t".join(r) + "\n" for r in rows)
  column = rows[0].index("sentence")
  with open(os.path.join(task, "test.tsv"), "w", encoding="utf-8") as f:
    f.writelines(["index\tsentence\n"] + ["%d\t%s\n" % (i, r[column])
                                          for i, r in enumerate(rows[1:])])
  return os.path.join(work_dir, "data")


def _timed_lines(command, env, log_path):
  """Runs `command`; [(arrival time, line)] of its output (also logged)."""
  lines = []
  with open(log_path, "a") as log:
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, cwd=REPO,
                            stderr=subprocess.STDOUT, text=True, env=env)
    for line in proc.stdout:
      lines.append((time.perf_counter(), line.rstrip("\n")))
      log.write(line)
  if proc.wait():
    sys.stderr.write("".join(line + "\n" for _, line in lines[-30:]))
    raise UserError("%s failed (output above)" % command[1])
  return lines


def _first(lines, pattern, after=0.0):
  """(time, match) of the first line after `after` matching `pattern`."""
  found = next(((t, m) for t, line in lines if t > after
                for m in [re.search(pattern, line)] if m), None)
  if found is None:
    raise UserError("run_finetuning.py printed no line %r" % pattern)
  return found


def run_ours(args):
  """One run of run_finetuning.py, timed by when its lines arrive:
  training from "N training features" to each progress line, evaluations
  from a progress line to its "dev" line. Then an evaluation-only run (no
  checkpoint saved): "evaluating the fine-tuned model" to "dev", and its
  write_test_outputs over the dev sentences, the second pass."""
  model_dir = os.path.join(args.run_dir, "model")
  hparams = dict(
      task_names=["sst"], num_trials=1, init_checkpoint=args.model,
      model_dir=model_dir, seed=args.seed, num_train_epochs=args.epochs,
      train_batch_size=args.batch_size, eval_batch_size=args.batch_size,
      weight_decay_rate=args.weight_decay, mixed_precision=args.dtype,
      **{k: getattr(args, k) for k in (
          "max_seq_length", "learning_rate", "warmup_proportion",
          "adam_epsilon", "clip_norm", "layerwise_lr_decay", "log_every")})
  env = dict(os.environ, CUDA_VISIBLE_DEVICES="",
             TF_NUM_INTRAOP_THREADS=str(args.threads),
             TF_NUM_INTEROP_THREADS=str(args.threads))
  log = os.path.join(args.run_dir, "ours.log")

  def finetune(**extra):
    return _timed_lines(
        [sys.executable, os.path.join(REPO, "run_finetuning.py"),
         "--data-dir", args.data_dir, "--model-name", "peer", "--hparams",
         json.dumps(dict(hparams, **extra))], env, log)

  lines = finetune()
  start, steps = _first(lines, r": \d+ training features, (\d+) steps of ")
  windows = {int(m.group(1)): t for t, line in lines
             for m in [re.search(r": step (\d+)/\d+ \(epoch", line)] if m}
  evals = {int(m.group(1)): t - windows[int(m.group(1))] for t, line in lines
           for m in [re.search(r": step (\d+) \(epoch [\d.]+\): dev ", line)]
           if m}
  with open(os.path.join(model_dir, "results", "sst_results.json")) as f:
    trial = json.load(f)["trials"][0]
  result = dict(num_steps=int(steps.group(1)), start=start, windows=windows,
                evals=evals,
                dev_accuracy=trial["final"]["dev"]["accuracy"] / 100.0,
                dev_accuracy_best=(
                    trial["best"]["results"]["dev"]["accuracy"] / 100.0),
                eval_examples=trial["final"]["dev"]["num_examples"])
  lines = finetune(do_train=False, write_test_outputs=True)
  begin, _ = _first(lines, r"evaluating the fine-tuned model")
  done, _ = _first(lines, r": dev ", after=begin)
  again, _ = _first(lines, r": test predictions: ", after=done)
  result.update(eval_seconds=done - begin, eval2_seconds=again - done)
  return result


def add_training_time(result, batch_size, start, windows, evals):
  """Training examples and seconds of both sides: from `start` to the last
  step's time in `windows` ({step: time}: every --log-every steps, each
  evaluation, the last step), and from the first (steady_*), less the
  evaluations between (`evals`: {step: seconds of the one after it})."""
  steps = result["num_steps"]
  first, end = min(windows), windows[steps]

  def evaluating(low):
    return sum(s for k, s in evals.items() if low <= k < steps)

  result.update(train_examples=steps * batch_size,
                train_seconds=end - start - evaluating(0))
  if first < steps:
    result.update(steady_examples=(steps - first) * batch_size,
                  steady_seconds=end - windows[first] - evaluating(first))


def run_side(args):
  """The child: one side, one seed; prints its JSON line."""
  shutil.rmtree(args.run_dir, ignore_errors=True)  # No earlier trial kept.
  os.makedirs(args.run_dir)
  if args.side == "ours":
    result = run_ours(args)
  else:
    from bench import finetune_peer_hf  # pylint: disable=g-import-not-at-top
    spec = {k: getattr(args, k) for k in _KEYS}
    result = finetune_peer_hf.run(dict(spec, data_dir=args.data_dir,
                                       seed=args.seed))
  add_training_time(result, args.batch_size,
                    *[result.pop(k) for k in ("start", "windows", "evals")])
  result.update(side=args.side, seed=args.seed, cpu=cpu_flags(),
                config={k: getattr(args, k) for k in _KEYS})
  for key, examples, seconds in (
      ("train_examples_per_s", "train_examples", "train_seconds"),
      ("steady_examples_per_s", "steady_examples", "steady_seconds"),
      ("eval_examples_per_s", "eval_examples", "eval_seconds"),
      ("eval2_examples_per_s", "eval_examples", "eval2_seconds")):
    if result.get(seconds):
      result[key] = result[examples] / result[seconds]
  print(json.dumps(result, sort_keys=True), flush=True)


def _child(args, side, seed, data_dir, work_dir):
  """Runs one side and seed in a child process; its JSON row."""
  run_dir = os.path.join(work_dir, "%s-seed%d" % (side, seed))
  argv = [sys.executable, os.path.abspath(__file__), "--side", side,
          "--seed", str(seed), "--data-dir", data_dir, "--run-dir", run_dir]
  for key in _KEYS:
    argv += ["--" + key.replace("_", "-"), str(getattr(args, key))]
  # CPU only; USE_TF=0: transformers does not load TensorFlow as well.
  proc = subprocess.run(argv, stdout=subprocess.PIPE, text=True, env=dict(
      os.environ, CUDA_VISIBLE_DEVICES="", USE_TF="0"))
  if proc.returncode:
    raise UserError("the %s run of seed %d failed (exit %d)" % (
        side, seed, proc.returncode))
  if not args.work_dir:
    shutil.rmtree(run_dir, ignore_errors=True)  # Ours' checkpoint.
  return json.loads(proc.stdout.strip().splitlines()[-1])


def _cell(values, fmt):
  """The "mean ± sample std" of the values given; "-" if none."""
  values = [v for v in values if v is not None]
  if not values:
    return "-"
  std = statistics.stdev(values) if len(values) > 1 else 0.0
  return (fmt + " ± " + fmt) % (statistics.mean(values), std)


_COLUMNS = (("dev_accuracy", "dev acc (final)", "%.4f"),
            ("dev_accuracy_best", "dev acc (best)", "%.4f"),
            ("train_examples_per_s", "train ex/s", "%.1f"),
            ("steady_examples_per_s", "train ex/s after window 1", "%.1f"),
            ("eval_examples_per_s", "eval ex/s", "%.1f"),
            ("eval2_examples_per_s", "eval ex/s 2nd pass", "%.1f"))


def _comparison(by_side, column):
  """The last row's cell: Welch's p for accuracies, the ratio of the means
  (ours / transformers) for speeds."""
  ours, peer = ([r[column] for r in by_side[s] if r.get(column) is not None]
                for s in SIDES)
  if column.startswith("dev_") and min(len(ours), len(peer)) > 1:
    from scipy import stats  # pylint: disable=g-import-not-at-top
    with warnings.catch_warnings():  # No spread on either side: NaN.
      warnings.simplefilter("ignore")
      p = stats.ttest_ind(ours, peer, equal_var=False).pvalue
    return "Welch p %.3g" % p if p == p else "-"
  if column.startswith("dev_") or not ours or not peer:
    return "-"
  return "%.2fx" % (statistics.mean(ours) / statistics.mean(peer))


def format_table(rows):
  """Markdown tables of run rows, one per configuration."""
  groups = {}
  for row in rows:
    groups.setdefault(json.dumps(row["config"], sort_keys=True),
                      []).append(row)
  out = []
  for key, group in groups.items():
    by_side = {s: [r for r in group if r["side"] == s] for s in SIDES}
    cpu = group[0].get("cpu", {})
    out += ["", "config: " + key, "CPU native bfloat16: " + ", ".join(
        "%s %s" % (k, "yes" if v else "no") for k, v in sorted(cpu.items())),
            "", "| side | runs | %s |" % " | ".join(c[1] for c in _COLUMNS),
            "|---|---|%s" % ("---|" * len(_COLUMNS))]
    for side in SIDES:
      if by_side[side]:
        out.append("| %s | %d | %s |" % (side, len(by_side[side]), " | ".join(
            _cell([r.get(c) for r in by_side[side]], fmt)
            for c, _, fmt in _COLUMNS)))
    out.append("| ours / transformers | | %s |" % " | ".join(
        _comparison(by_side, c) for c, _, _ in _COLUMNS))
  return "\n".join(out[1:])


def read_report(path):
  """The rows of a JSON-lines file written by --out."""
  try:
    with open(path) as f:
      return [json.loads(line) for line in f if line.strip()]
  except OSError as e:
    raise UserError("cannot read --report %s (%s)." % (path, e.strerror))


def main(argv=None):
  args = parse_args(argv)
  if args.report:
    print(format_table(read_report(args.report)))
    return
  if args.side:
    run_side(args)
    return
  args.model = os.path.abspath(args.model)
  args.task_dir = os.path.abspath(args.task_dir)
  work_dir = args.work_dir or tempfile.mkdtemp(prefix="finetune_peer_")
  rows = []
  try:
    data_dir = prepare_data(args, work_dir)
    for seed in args.seeds:
      for side in args.sides:
        row = _child(args, side, seed, data_dir, work_dir)
        rows.append(row)
        print("%s seed %d: dev accuracy %.4f, train %.1f ex/s" % (
            side, seed, row["dev_accuracy"], row["train_examples_per_s"]),
              flush=True)
        if args.out:
          with open(args.out, "a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
  finally:
    if not args.work_dir:
      shutil.rmtree(work_dir, ignore_errors=True)
  print(format_table(rows))


if __name__ == "__main__":
  run_main(main)
