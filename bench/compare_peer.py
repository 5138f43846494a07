"""Our pre-training step beside tf-models-official's ElectraPretrainer, one run.

Ours in each sampling mode (--modes) and the peer
(`official.nlp.modeling.models.ElectraPretrainer` over
`official.nlp.modeling.networks.BertEncoder`s, bench/peer.py), built at the
same shapes (ELECTRA-Small by default: hidden 256, 12 layers, 4 heads, FFN
1024, embedding 128, generator 1/4 wide; vocab 30522, seq 128, batch 16),
each trained by the same AdamW step (training/train_step.py) on the same random
batches. All are built and warmed up first, then timed in interleaved rounds
(bench/harness.py).

MFU divides the analytic FLOPs of a step (pretrain/flops.py; the peer's are
those of our "mlm" mode, the same network) by a matmul peak measured in this
run (pretrain/peak.py's probe, not its cache), and on a GPU of
pretrain/peak.py's table also by the published dense peak.

Usage:
  python bench/compare_peer.py
  python bench/compare_peer.py --size base --dtype mixed_bfloat16 --jit --json
  python bench/compare_peer.py --report results.jsonl   (table of saved lines)

`--fuse-elementwise` (hparam fuse_elementwise, util/xla_fusion.py) is a
process-wide setting: every model of the run, the peer included, gets it.

Memory: on CPU the process's peak RSS (all models together); on a GPU each
row's peak device memory during its own steps. "cpu s/step" (process CPU
seconds, all threads) is the steadier figure when other jobs share a CPU.
"""

import argparse
import json
import statistics
import sys
import time

from util.cli import tensorflow_startup  # pylint: disable=g-import-not-at-top

tensorflow_startup()

import tensorflow as tf  # pylint: disable=g-import-not-at-top

from bench import harness
from pretrain import peak as peak_lib
from util.cli import require_at_least
from util.cli import run_main
from util.errors import UserError

# Table columns: (row key, header, format of a value).
_COLUMNS = (("model", "model", "%s"), ("size", "size", "%s"),
            ("seq_len", "seq", "%d"), ("batch_size", "batch", "%d"),
            ("dtype", "dtype", "%s"), ("jit", "jit", "%s"),
            ("fuse", "fuse", "%s"),
            ("s_per_step", "s/step", "%.4f"), ("spread", "spread", "%.1f%%"),
            ("cpu_s_per_step", "cpu s/step", "%.3f"),
            ("seq_per_s", "seq/s", "%.1f"), ("vs_peer", "vs peer", "%.2fx"),
            ("mfu_probe", "MFU probe", "%.2f%%"),
            ("mfu_published", "MFU published", "%.2f%%"),
            ("memory_mib", "mem MiB", "%.0f"), ("max_batch", "max batch", "%s"))


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  harness.add_step_flags(parser)
  parser.add_argument("--jit", action="store_true",
                      help="XLA-compile every model's forward/backward pass")
  parser.add_argument("--modes", default="mlm,hp_loss,hp_dist",
                      help="comma-separated sampling modes of ours")
  parser.add_argument("--no-peer", action="store_true",
                      help="time ours only")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--steps", type=int, default=5,
                      help="timed steps per model and round")
  parser.add_argument("--warmup-steps", type=int, default=2,
                      help="untimed steps per model after compiling")
  parser.add_argument("--threads", type=int, default=0,
                      help="TF intra- and inter-op threads (0: TF's default)")
  parser.add_argument("--max-batch-seconds", type=float, default=0.0,
                      help="per model, search the largest batch that fits "
                      "(doubling from --batch-size) for at most this long; "
                      "0: no search")
  parser.add_argument("--max-batch-limit", type=int, default=65536,
                      help="largest batch the search tries")
  parser.add_argument("--hparams", default=None,
                      help="extra PretrainingConfig hparams (JSON)")
  parser.add_argument("--json", action="store_true",
                      help="print one JSON line per model instead of the "
                      "table")
  parser.add_argument("--report", metavar="JSONL", default=None,
                      help="print the table of JSON lines saved by --json "
                      "runs, and exit")
  args = parser.parse_args(argv)
  args.modes = harness.parse_modes(args.modes, allow_empty=True)
  if not args.modes and args.no_peer:
    raise UserError("nothing to time: give --modes or drop --no-peer.")
  harness.check_step_flags(args)
  require_at_least(args, ("rounds", "steps", "max_batch_limit"))
  if args.warmup_steps < 0 or args.threads < 0 or args.max_batch_seconds < 0:
    raise UserError("--warmup-steps, --threads and --max-batch-seconds "
                    "must be >= 0.")
  args.hparams = _parse_hparams(args.hparams)
  return args


def _parse_hparams(text):
  if not text:
    return {}
  try:
    value = json.loads(text)
  except ValueError as e:
    raise UserError("--hparams is not valid JSON (%s); give an object, e.g. "
                    "'{\"max_predictions_per_seq\": 5}'." % e)
  if not isinstance(value, dict):
    raise UserError("--hparams must be a JSON object, got %r." % text)
  return value


def _config(args, mode, batch_size=None):
  return harness.make_config(args.size, mode, batch_size or args.batch_size,
                             args.seq_len, args.vocab_size, args.dtype,
                             args.jit, args.hparams)


def measure(args):
  """Builds, warms up and times every model; returns one dict per model."""
  dtype = harness.DTYPES[args.dtype]
  harness.set_dtype(args.dtype)
  fuse, reason = harness.set_fusion(args.fuse_elementwise, dtype)
  sys.stderr.write("fuse_elementwise %s -> %s (%s)\n" % (
      args.fuse_elementwise, fuse, reason))
  probe_start = time.perf_counter()
  probe = peak_lib.measure_matmul_peak(dtype)
  gpu = peak_lib.gpu_name()
  published = peak_lib.published_peak(gpu, dtype)
  device = gpu or peak_lib.cpu_name()
  sys.stderr.write("%s: %s matmul probe %.3g TFLOP/s (%.1f s)%s\n" % (
      device, dtype, probe / 1e12, time.perf_counter() - probe_start,
      ", published peak %.4g TFLOP/s" % (published / 1e12)
      if published else ""))
  builds = [(mode, harness.ours, _config(args, mode)) for mode in args.modes]
  if not args.no_peer:
    builds.append(("peer", harness.peer, _config(args, "mlm")))
  runners = []
  batches = harness.make_batches(builds[0][2])
  for name, build, config in builds:
    start = time.perf_counter()
    runner = build(config)
    runner.run(batches, 1 + args.warmup_steps)
    runners.append(runner)
    sys.stderr.write("  %-8s built, compiled and warmed up in %.1f s\n" % (
        name, time.perf_counter() - start))
  times = harness.time_interleaved(runners, batches, args.rounds, args.steps)
  rows = []
  for runner in runners:
    t = times[runner.name]
    median = statistics.median(t["wall"])
    achieved = harness.step_flops(runner.config) / median
    rows.append(dict(
        model=runner.name, size=args.size, seq_len=args.seq_len,
        batch_size=args.batch_size, dtype=args.dtype, jit=args.jit, fuse=fuse,
        device=device, tf_version=tf.__version__,
        s_per_step=median, s_per_step_min=min(t["wall"]),
        s_per_step_max=max(t["wall"]),
        spread=100.0 * (max(t["wall"]) - min(t["wall"])) / median,
        cpu_s_per_step=statistics.median(t["cpu"]),
        seq_per_s=args.batch_size / median, rounds=args.rounds,
        steps=args.steps, tflops_per_s=achieved / 1e12,
        probe_tflops=probe / 1e12, mfu_probe=100.0 * achieved / probe,
        published_tflops=published / 1e12 if published else None,
        mfu_published=100.0 * achieved / published if published else None,
        device_peak_bytes=t["device_peak"],
        peak_rss_bytes=harness.peak_rss_bytes()))
  peer_row = next((r for r in rows if r["model"] == "peer"), None)
  for row in rows:
    row["vs_peer"] = (peer_row["s_per_step"] / row["s_per_step"]
                      if peer_row else None)
    memory = row["device_peak_bytes"] or row["peak_rss_bytes"]
    row["memory_mib"] = memory / 2.0 ** 20
  if args.max_batch_seconds:
    for runner, row in zip(runners, rows):
      best, why = harness.find_max_batch(
          runner, args.batch_size, args.max_batch_limit,
          args.max_batch_seconds)
      row["max_batch"], row["max_batch_stop"] = best, why
  return rows


def _cell(row, key, fmt):
  value = row.get(key)
  if value is None:
    return "-"
  if key == "max_batch" and row.get("max_batch_stop") != "oom":
    return ">=%d" % value  # stopped before running out of memory
  return fmt % value


def format_table(rows):
  """The rows (dicts as `measure` returns them) as a fixed-width table."""
  measured = [row for row in rows if "skipped" not in row]
  table = [[head for _, head, _ in _COLUMNS]]
  table += [[_cell(row, key, fmt) for key, _, fmt in _COLUMNS]
            for row in measured]
  widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS))]
  lines = ["  ".join(cell.rjust(width) for cell, width in
                     zip(line, widths)).rstrip() for line in table]
  if measured and measured[0].get("device"):
    lines.append("device: %s, TF %s" % (measured[0]["device"],
                                        measured[0].get("tf_version")))
  lines += ["skipped: %s seq %s batch %s %s%s: %s" % (
      row.get("size"), row.get("seq_len"), row.get("batch_size"),
      row.get("dtype"), " jit" if row.get("jit") else "", row["skipped"])
            for row in rows if "skipped" in row]
  return "\n".join(lines)


def _read_report(path):
  rows = []
  try:
    with open(path) as f:
      for number, line in enumerate(f, 1):
        if line.strip():
          try:
            rows.append(json.loads(line))
          except ValueError:
            raise UserError("%s line %d is not JSON; give a file of "
                            "compare_peer.py --json lines." % (path, number))
  except OSError as e:
    raise UserError("cannot read --report %s (%s)." % (path, e.strerror))
  return rows


def main(argv=None):
  args = parse_args(argv)
  if args.report:
    print(format_table(_read_report(args.report)))
    return 0
  harness.set_threads(args.threads)
  rows = measure(args)
  if args.json:
    for row in rows:
      print(json.dumps(row, sort_keys=True))
  else:
    print(format_table(rows))
  return 0


if __name__ == "__main__":
  run_main(main)
