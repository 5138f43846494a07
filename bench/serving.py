"""Serving a fine-tuned classifier on CPU: our SavedModel and TFLite
models beside transformers.

  python bench/serving.py --data-dir D --model-name M --task sst \\
      [--trial 1] [--tsv dev.tsv --column sentence] [--sentences N] \\
      [--batch-sizes 1,32] [--threads 2] [--rounds 3] [--json out.json] \\
      [--sides ours,ours_tflite,...] [--label-column label]

Trial `--trial` of task `--task` fine-tuned in D/models/M (a one-text
classification task) is exported twice into a work directory
(`--work-dir`, default a temporary one): as the text-in SavedModel of
`export_model.py --task` (export/saved_model.py), and through our HF export
as an `ElectraModel` folder with its vocabulary (interop/hf.py) plus the
task head's weights. The head is applied in PyTorch as ours computes it
(the [CLS] state, or the mean over real tokens, times a dense layer):
transformers' `ElectraForSequenceClassification` has another head (dense,
GELU, dense), which these weights do not fill.

The sides (`--sides`, default all): `ours` (that SavedModel),
`ours_tflite` and `ours_tflite_int8` (the text-in .tflite of
`export_model.py --format tflite`, float32 and `--quantize dynamic`),
`transformers` and `transformers_int8` (its Linear layers quantized by
PyTorch's `torch.ao.quantization.quantize_dynamic`, qint8).
Each side runs in a process of its own (bench/serving_worker.py), on CPU,
with `--threads` threads (TensorFlow's inter-op pool, and an intra-op pool
of half as many, since the export computes two groups of heads and FFN
units side by side (export/inference_encoder.py); the TFLite
interpreter's threads; torch.set_num_threads
and the fast tokenizer's pool): ours with only
tensorflow and tensorflow_text imported, the TFLite sides with only
ai_edge_litert and tensorflow_text, transformers with its
AutoTokenizer (fast) and AutoModel. Both read the same sentences (column
`--column` of `--tsv`). Per round, each side in turn (alternating who goes
first) times, at each batch size:
  e2e       text -> label, tokenisation included (ours: serving_default);
  tokenize  text -> ids (ours: the SavedModel's tokenizer alone);
  model     ids -> label on the tokenised batches (ours: from_ids).
The table shows sentences/s of e2e (median of the rounds, and their
spread), p50/p99 latency per call, the median tokenize and model time per
call, and the padded length each side computes on (ours pads to
max_seq_length, transformers to the longest sentence of the batch; a
.tflite has its tokenizer inside: "-"), the accuracy against the TSV's
`--label-column` (when it has one), the model's file size (SavedModel
directory, .tflite, model.safetensors; the quantized PyTorch state dict)
and the worker process's peak resident memory (the runtime included).
The predicted labels of ours and transformers are compared. The JSON
(`--json`) holds the same and every call's time.

Needs torch and transformers (requirements-test.txt); without them it says
how to install them and exits 2.
"""

import argparse
import datetime
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from util.cli import tensorflow_startup  # pylint: disable=g-import-not-at-top

tensorflow_startup()

from bench import serving_exports  # pylint: disable=g-import-not-at-top
from bench import serving_report as report
from util.cli import require_at_least
from util.cli import run_main
from util.errors import UserError

SIDES = ("ours", "ours_tflite", "ours_tflite_int8", "transformers",
         "transformers_int8")
# The throughput and p50 ratios the table states, where both sides ran.
RATIOS = (("ours", "transformers"), ("ours_tflite", "ours"),
          ("ours_tflite_int8", "ours"),
          ("ours_tflite_int8", "transformers_int8"))
_INSTALL = (
    "bench/serving.py compares with transformers on PyTorch, which this "
    "Python lacks (%s). Install them into the venv: pip install "
    "\"transformers<5\" torch (or the CPU-only wheel: pip install torch "
    "--index-url https://download.pytorch.org/whl/cpu), or the pinned "
    "versions: pip install -r requirements-test.txt -c constraints.txt.")


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--data-dir", required=True)
  parser.add_argument("--model-name", required=True)
  parser.add_argument("--task", required=True,
                      help="a one-text classification task fine-tuned in "
                      "D/models/M/finetuning_models/<task>/")
  parser.add_argument("--trial", type=int, default=1)
  parser.add_argument("--model-dir", default=None,
                      help="the model directory, if not D/models/M")
  parser.add_argument("--tsv", default=None,
                      help="sentences to serve (default: the task's "
                      "<data-dir>/finetuning_data/<task>/dev.tsv)")
  parser.add_argument("--column", default="sentence")
  parser.add_argument("--sentences", type=int, default=0,
                      help="use the first N sentences (0: all)")
  parser.add_argument("--batch-sizes", default="1,32")
  parser.add_argument("--threads", type=int, default=_cores())
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--work-dir", default=None,
                      help="where the exports go (new or empty; kept); "
                      "default a temporary directory, removed")
  parser.add_argument("--json", default=None, help="write the results here")
  parser.add_argument("--sides", default=",".join(SIDES),
                      help="which of %s to run (default all)" % (
                          ", ".join(SIDES)))
  parser.add_argument("--label-column", default="label",
                      help="the TSV's gold labels, for the accuracy (none "
                      "if the TSV has no such column)")
  args = parser.parse_args(argv)
  wanted = args.sides.split(",")
  unknown = sorted(set(wanted) - set(SIDES))
  args.sides = [side for side in SIDES if side in wanted]
  if unknown or not args.sides:
    raise UserError("--sides takes some of %s, not %s." % (
        ", ".join(SIDES), ", ".join(unknown) or "none"))
  try:
    args.batch_sizes = sorted({int(b) for b in args.batch_sizes.split(",")})
  except ValueError:
    raise UserError("--batch-sizes must be integers separated by commas, "
                    "got %r." % args.batch_sizes)
  require_at_least(args, ("trial", "threads", "rounds"))
  if args.sentences < 0 or min(args.batch_sizes) < 1:
    raise UserError("--sentences must be >= 0 and --batch-sizes >= 1.")
  return args


def _cores():
  if hasattr(os, "sched_getaffinity"):
    return len(os.sched_getaffinity(0))
  return os.cpu_count() or 1


def check_transformers():
  """UserError (exit 2) naming the install command when torch or
  transformers cannot be imported."""
  missing = [name for name in ("torch", "transformers")
             if importlib.util.find_spec(name) is None]
  if missing:
    raise UserError(_INSTALL % " and ".join(missing))


def read_sentences(path, column, limit=0, required=True):
  """The `column` of a TSV file with a header line (first `limit`; 0: all);
  None if it has no such column and not `required`."""
  try:
    with open(path, encoding="utf-8") as f:
      lines = f.read().splitlines()
  except OSError as e:
    raise UserError("cannot read --tsv %s (%s)." % (path, e.strerror))
  header = lines[0].split("\t") if lines else []
  if column not in header and not required:
    return None
  if column not in header:
    raise UserError("%s has no column %r (its header: %s)." % (
        path, column, ", ".join(header) or "none"))
  index = header.index(column)
  rows = [line.split("\t") for line in lines[1:] if line.strip()]
  sentences = [row[index] for row in rows if len(row) > index]
  sentences = sentences[:limit] if limit else sentences
  if not sentences:
    raise UserError("%s holds no sentences in column %r." % (path, column))
  return sentences


def _worker_env(threads):
  """A plain user's environment (no TF_USE_LEGACY_KERAS), CPU only, every
  thread pool at `threads`."""
  env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS=str(threads),
             MKL_NUM_THREADS=str(threads), RAYON_NUM_THREADS=str(threads))
  return env


class _Worker(object):
  """A bench/serving_worker.py process of one side."""

  def __init__(self, side, spec_path, work_dir, threads):
    self.side = side
    self.log_path = os.path.join(work_dir, "%s.log" % side)
    self._log = open(self.log_path, "w")
    self.proc = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "bench", "serving_worker.py"),
         side, spec_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=self._log, text=True, env=_worker_env(threads))

  def read(self):
    line = self.proc.stdout.readline()
    if not line:
      self.proc.wait()
      self._log.close()
      with open(self.log_path) as f:
        tail = f.read()[-3000:]
      raise RuntimeError("the %s worker ended (exit %s):\n%s" % (
          self.side, self.proc.returncode, tail))
    return json.loads(line)

  def round(self):
    self.proc.stdin.write("round\n")
    self.proc.stdin.flush()
    return self.read()

  def close(self):
    if self.proc.poll() is None:
      self.proc.stdin.close()
      self.proc.wait(timeout=60)
    self._log.close()


def run_rounds(spec_path, work_dir, threads, rounds, sides=SIDES):
  """Starts a worker per side and times `rounds` interleaved rounds (the
  order of the sides reversed every other round).

  Returns ({side: its ready line: "version", "size_mb"}, {side: [round
  results]}).
  """
  workers = [_Worker(side, spec_path, work_dir, threads) for side in sides]
  try:
    versions = {w.side: w.read() for w in workers}
    results = {side: [] for side in sides}
    for r in range(rounds):
      for worker in (workers if r % 2 == 0 else workers[::-1]):
        sys.stderr.write("round %d/%d: %s\n" % (r + 1, rounds, worker.side))
        results[worker.side].append(worker.round())
    return versions, results
  finally:
    for worker in workers:
      if worker.proc.poll() is None:
        worker.close()


def measure(args, work_dir):
  """Exports, times both sides; returns the result dict (the JSON)."""
  from pretrain import peak  # pylint: disable=g-import-not-at-top
  if args.tsv is None:
    args.tsv = os.path.join(args.data_dir, "finetuning_data", args.task,
                            "dev.tsv")
  sentences = read_sentences(args.tsv, args.column, args.sentences)
  gold = read_sentences(args.tsv, args.label_column, args.sentences,
                        required=False)
  model_dir = args.model_dir or os.path.join(args.data_dir, "models",
                                             args.model_name)
  spec = serving_exports.export_both(
      model_dir, args.data_dir, args.task, args.trial, work_dir,
      log=lambda line: sys.stderr.write(line + "\n"))
  spec.update(sentences=sentences, batch_sizes=args.batch_sizes,
              threads=args.threads)
  spec_path = os.path.join(work_dir, "spec.json")
  with open(spec_path, "w", encoding="utf-8") as f:
    json.dump(spec, f)
  ready, results = run_rounds(spec_path, work_dir, args.threads,
                              args.rounds, args.sides)
  rows, labels = {}, {}
  for side in args.sides:
    labels[side] = results[side][0]["labels"]
    extra = dict(size_mb=ready[side]["size_mb"],
                 peak_rss_mb=max(r["peak_rss_mb"] for r in results[side]),
                 accuracy=report.accuracy(labels[side], spec["labels"], gold))
    rows[side] = [dict(row, **extra)
                  for row in report.summarise(results[side], len(sentences))]
  ratios = {"%s/%s" % pair: report.compare(rows, *pair) for pair in RATIOS
            if set(pair) <= set(rows)}
  both = "ours" in labels and "transformers" in labels
  return dict(
      rows=rows, ratios=ratios,
      ours_vs_transformers=ratios.get("ours/transformers"), labels=labels,
      labels_agree=sum(a == b for a, b in zip(
          labels["ours"], labels["transformers"])) if both else None,
      num_sentences=len(sentences), tsv=args.tsv, task=args.task,
      threads=args.threads, rounds=args.rounds,
      versions={side: ready[side]["version"] for side in args.sides},
      cpu=peak.cpu_name(), max_seq_length=spec["max_seq_length"],
      date=datetime.datetime.now(datetime.timezone.utc).strftime(
          "%Y-%m-%d %H:%M UTC"))


def main(argv=None):
  args = parse_args(argv)
  if any(side.startswith("transformers") for side in args.sides):
    check_transformers()
  work_dir = args.work_dir or tempfile.mkdtemp(prefix="serving_bench_")
  if args.work_dir:
    if os.path.isdir(work_dir) and os.listdir(work_dir):
      raise UserError("--work-dir %s is not empty; give a new or empty "
                      "directory." % work_dir)
    os.makedirs(work_dir, exist_ok=True)
  try:
    result = measure(args, work_dir)
  finally:
    if not args.work_dir:
      shutil.rmtree(work_dir, ignore_errors=True)
  print(report.format_table(result))
  if args.json:
    with open(args.json, "w", encoding="utf-8") as f:
      json.dump(result, f, indent=1, sort_keys=True)
  return 0


if __name__ == "__main__":
  run_main(main)
