"""Masked examples/s of the pre-training input function alone, per CPU core.

Runs pretrain/pretrain_data.py's training input function (read, shuffle,
batch, parse, dynamic masking, prefetch: exactly what run_pretraining.py
feeds its step) and consumes its batches without training. Without
--data-dir it builds TFRecords from data/corpus in a temporary directory
first (build_vocab.py, then build_pretraining_dataset.py).

It reports examples/s (wall clock) and examples per CPU-second of this
process (the rate one core gives; the pipeline runs in TF's threads). Given
a train step's measured --step-seconds at --step-batch, it also prints how
many times faster the pipeline feeds than the step consumes.

Usage:
  python bench/input_pipeline.py --batch-size 128 --step-seconds 1.3 \
      --step-batch 16
"""

import argparse
import contextlib
import os
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from util.cli import tensorflow_startup  # pylint: disable=g-import-not-at-top

tensorflow_startup()

import build_pretraining_dataset  # pylint: disable=g-import-not-at-top
import build_vocab
import configure
import configure_specs
from pretrain import pretrain_data
from util.cli import require_at_least
from util.cli import run_main
from util.errors import UserError


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--data-dir", default=None,
                      help="a data dir with vocab.txt and pretrain_tfrecords/ "
                      "(default: build one from --corpus-dir in a temp dir)")
  parser.add_argument("--corpus-dir", default=os.path.join(ROOT, "data",
                                                           "corpus"))
  parser.add_argument("--seq-len", type=int, default=128)
  parser.add_argument("--batch-size", type=int, default=128)
  parser.add_argument("--batches", type=int, default=50,
                      help="timed batches")
  parser.add_argument("--warmup-batches", type=int, default=5)
  parser.add_argument("--step-seconds", type=float, default=0.0,
                      help="a train step's measured s/step, for the "
                      "feed/consumption ratio")
  parser.add_argument("--step-batch", type=int, default=0,
                      help="the batch of --step-seconds (default "
                      "--batch-size)")
  args = parser.parse_args(argv)
  require_at_least(args, ("seq_len", "batch_size", "batches"))
  if args.warmup_batches < 0 or args.step_seconds < 0 or args.step_batch < 0:
    raise UserError("--warmup-batches, --step-seconds and --step-batch must "
                    "be >= 0.")
  args.step_batch = args.step_batch or args.batch_size
  return args


def build_data(corpus_dir, data_dir, seq_len):
  """vocab.txt and pretrain_tfrecords/ under `data_dir`, from `corpus_dir`."""
  vocab = os.path.join(data_dir, "vocab.txt")
  build_vocab.main(["--corpus-dir", corpus_dir, "--output", vocab,
                    "--vocab-size", "8000"])
  build_pretraining_dataset.main([
      "--corpus-dir", corpus_dir, "--vocab-file", vocab, "--output-dir",
      os.path.join(data_dir, "pretrain_tfrecords"), "--max-seq-length",
      str(seq_len)])


def time_input_fn(data_dir, seq_len, batch_size, batches, warmup_batches):
  """Iterates the training input function; returns (examples/s wall,
  examples per CPU-second)."""
  config = configure.PretrainingConfig(
      "bench", data_dir, max_seq_length=seq_len, train_batch_size=batch_size)
  specs = configure_specs.pretraining_specs(config)
  dataset = pretrain_data.get_input_fn(specs.data, specs.masking,
                                       is_training=True)()
  iterator = iter(dataset)
  for _ in range(warmup_batches):
    next(iterator)
  wall, cpu = time.perf_counter(), time.process_time()
  for _ in range(batches):
    batch = next(iterator)
  batch["masked_lm_ids"].numpy()
  wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
  examples = batches * batch_size
  return examples / wall, examples / max(cpu, 1e-9)


def main(argv=None):
  args = parse_args(argv)
  with contextlib.ExitStack() as stack:
    data_dir = args.data_dir
    if data_dir is None:
      data_dir = stack.enter_context(
          tempfile.TemporaryDirectory(prefix="electra_input_bench_"))
      build_data(args.corpus_dir, data_dir, args.seq_len)
    per_second, per_cpu_second = time_input_fn(
        data_dir, args.seq_len, args.batch_size, args.batches,
        args.warmup_batches)
  print("input pipeline, seq %d, batch %d, %d batches: %.0f masked "
        "examples/s, %.0f per CPU-second (one core), %d cores here" % (
            args.seq_len, args.batch_size, args.batches, per_second,
            per_cpu_second, len(os.sched_getaffinity(0))))
  if args.step_seconds:
    consumed = args.step_batch / args.step_seconds
    print("train step: %.1f examples/s (batch %d at %.4g s/step); the "
          "pipeline feeds %.1fx that, %.1fx on one core" % (
              consumed, args.step_batch, args.step_seconds,
              per_second / consumed, per_cpu_second / consumed))
  return 0


if __name__ == "__main__":
  run_main(main)
