"""Throughput of build_pretraining_dataset.py, end to end, 1 and 2 processes.

Runs the builder's command line on CORPUS_DIR with --num-processes 1 and 2
into temporary directories, prints MB of raw text per second for each, and
checks that both wrote byte-identical shards (exit code 1 if not).

Rates printed per run (MB = 10**6 bytes of raw text read):
  build:      MB / the builder's own elapsed time (manifest.json: tokenizer
              set-up, reading, tokenizing, packing, writing);
  processing: MB / (elapsed - set-up), i.e. without building the tokenizer
              (a fixed ~0.2 s);
  per CPU-s:  MB / CPU seconds of the builder and its workers: the rate of
              one busy process, little affected by other load on the machine;
  wall:       MB / wall time of the whole command, which adds Python's start
              and the TensorFlow import (a fixed few seconds).
Each configuration runs --repeats times and the fastest run is reported.

Usage:
  python bench/build_dataset.py CORPUS_DIR [--vocab-file F] \
      [--max-seq-length 128] [--repeats 3]
Without --vocab-file, an 8000-token vocabulary is first learned from the
corpus (not timed).
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(args, env):
  start = time.time()
  proc = subprocess.run([sys.executable] + args, cwd=ROOT, env=env,
                        capture_output=True, text=True)
  wall = time.time() - start
  if proc.returncode:
    sys.stderr.write(proc.stderr[-3000:])
    sys.exit("command failed: %s" % " ".join(args))
  return wall


def _shards(directory):
  out = {}
  for path in sorted(glob.glob(os.path.join(directory, "*.tfrecord-*"))):
    with open(path, "rb") as f:
      out[os.path.basename(path)] = f.read()
  return out


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("corpus_dir")
  parser.add_argument("--vocab-file")
  parser.add_argument("--max-seq-length", type=int, default=128)
  parser.add_argument("--repeats", type=int, default=3)
  args = parser.parse_args(argv)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
    vocab = args.vocab_file
    if not vocab:
      vocab = os.path.join(tmp, "vocab.txt")
      print("learning an 8000-token vocabulary from %s ..." % args.corpus_dir)
      _run(["build_vocab.py", "--corpus-dir", args.corpus_dir, "--output",
            vocab, "--vocab-size", "8000"], env)
    outputs = {}
    for processes in (1, 2):
      best = None
      for r in range(args.repeats):
        out = os.path.join(tmp, "p%d-%d" % (processes, r))
        wall = _run(["build_pretraining_dataset.py", "--corpus-dir",
                     args.corpus_dir, "--vocab-file", vocab, "--output-dir",
                     out, "--max-seq-length", str(args.max_seq_length),
                     "--num-processes", str(processes)], env)
        with open(os.path.join(out, "manifest.json")) as f:
          manifest = json.load(f)
        if best is None or manifest["elapsed_seconds"] < best[1][
            "elapsed_seconds"]:
          best = (wall, manifest)
        outputs.setdefault(processes, out)
      wall, manifest = best
      mb = manifest["bytes_read"] / 1e6
      elapsed, setup = manifest["elapsed_seconds"], manifest["setup_seconds"]
      print("processes=%d  %.2f MB  build %.2f s = %.1f MB/s  processing "
            "%.1f MB/s  per CPU-s %.1f MB/s (%.2f CPU-s)  wall %.1f s = %.1f "
            "MB/s  coverage %.4f  examples %d" % (
                processes, mb, elapsed, mb / elapsed, mb / (elapsed - setup),
                mb / manifest["cpu_seconds"], manifest["cpu_seconds"], wall,
                mb / wall, manifest["coverage"], manifest["examples"]["train"]))
    one, two = _shards(outputs[1]), _shards(outputs[2])
    identical = one == two and bool(one)
    print("shards of 1 and 2 processes byte-identical: %s (%d files)" %
          ("yes" if identical else "NO", len(one)))
    if hasattr(os, "getloadavg"):
      print("load average: %.2f %.2f %.2f on %d CPUs" %
            (os.getloadavg() + (os.cpu_count(),)))
  return 0 if identical else 1


if __name__ == "__main__":
  sys.exit(main())
