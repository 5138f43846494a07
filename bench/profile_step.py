"""Where one pre-training step's time goes: a TensorFlow profiler breakdown.

Builds our train step (bench/harness.py, the step of run_pretraining.py) for
one sampling mode, warms it up, traces `--steps` steps with
`tf.profiler.experimental`, reads the trace (`*.xplane.pb`) and prints the op
time per step grouped three ways: by part of the model (forward and backward
of D and G, the optimizer, the rest), by op type (TF kernels, and XLA thunks
by kind under `--jit`), and the costliest single ops.

Op time is each op's own (exclusive) time summed over every thread, with the
tracer's overhead, so it ranks costs but is not wall time: the untraced
s/step of the same steps is printed beside it. The TensorBoard profile
plugin reads the same trace in `--logdir`.

Usage:
  python bench/profile_step.py --mode hp_loss --batch-size 16
  python bench/profile_step.py --mode hp_dist --batch-size 16 --jit --top 30
  python bench/profile_step.py --size tiny --batch-size 2 --seq-len 32 \\
      --vocab-size 64 --json out.json
"""

import argparse
import collections
import glob
import json
import os
import re
import tempfile

from util.cli import tensorflow_startup  # pylint: disable=g-import-not-at-top

tensorflow_startup()

import tensorflow as tf  # pylint: disable=g-import-not-at-top
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top

from bench import harness
from util import hparams as hparams_lib
from util.cli import require_at_least
from util.cli import run_main
from util.errors import UserError

# Events that only contain the ops that run inside them (executors, thread
# pools, XLA's thunk loop); their exclusive time is scheduling overhead.
_CONTAINERS = re.compile(
    r"^(ExecutorState::|ThreadpoolListener::|ThunkExecutor::|ParallelFor|"
    r"EagerExecute|EagerKernelExecute|KernelAndDeviceFunc::|ExecutorDoneCallback)")
_XLA_SUFFIX = re.compile(r"(\.\d+)*(\.clone)*$")


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--mode", default="hp_loss",
                      help="sampling mode (mlm, hp_loss, hp_dist, uniform)")
  harness.add_step_flags(parser)
  parser.add_argument("--jit", action="store_true",
                      help="compile the train step with XLA")
  parser.add_argument("--steps", type=int, default=3, help="traced steps")
  parser.add_argument("--top", type=int, default=20,
                      help="rows of the op-type and single-op tables")
  parser.add_argument("--logdir", default=None,
                      help="where the trace goes (default: a temporary "
                      "directory)")
  parser.add_argument("--json", default=None,
                      help="also write the breakdown to this JSON file")
  parser.add_argument("--hparams", default=None,
                      help="extra PretrainingConfig hparams (JSON)")
  args = parser.parse_args(argv)
  harness.parse_modes(args.mode)
  harness.check_step_flags(args)
  require_at_least(args, ("steps", "top"))
  return args


def exclusive_times(events):
  """[(name, exclusive_ps)] of one thread's events.

  Args:
    events: [(name, offset_ps, duration_ps)] of one trace line; an event
      that starts inside another and ends by its end is its child.
  """
  out, stack = [], []  # stack: [name, end_ps, exclusive_ps]
  for name, start, duration in sorted(events, key=lambda e: (e[1], -e[2])):
    while stack and start >= stack[-1][1]:
      out.append(tuple(stack.pop()[::2]))
    if stack:
      stack[-1][2] -= duration
    stack.append([name, start + duration, duration])
  out.extend(tuple(entry[::2]) for entry in reversed(stack))
  return out


def read_op_times(xplane_path):
  """{event name: exclusive ps summed over threads} of the host plane's
  compute threads (the Python thread, which only waits, is left out)."""
  space = xplane_pb2.XSpace()
  with open(xplane_path, "rb") as f:
    space.ParseFromString(f.read())
  totals = collections.Counter()
  for plane in space.planes:
    metadata = plane.event_metadata
    for line in plane.lines:
      if line.name == "python":
        continue
      events = [(metadata[e.metadata_id].name, e.offset_ps, e.duration_ps)
                for e in line.events]
      for name, ps in exclusive_times(events):
        if not _CONTAINERS.match(name):
          totals[name] += ps
  return totals


def op_type(name):
  """"scope/op:Type" -> Type (a TF kernel); "fusion.12.clone" -> "xla fusion"
  (an XLA thunk, by kind)."""
  if ":" in name:
    return name.rsplit(":", 1)[1]
  return "xla " + _XLA_SUFFIX.sub("", name)


def model_part(name):
  """The part of the step an op belongs to, from its name scope."""
  if ":" not in name:
    return "XLA-compiled (no name scope)"
  scope = name.rsplit(":", 1)[0]
  if "AdamWeightDecay" in scope or scope.startswith("update"):
    return "optimizer"
  direction = "backward" if scope.startswith("gradient") else "forward"
  for net, label in (("discriminator", "D"), ("generator", "G")):
    if net in scope.split("/")[:4]:
      return "%s %s" % (label, direction)
  return "other %s" % direction


def breakdown(totals, steps):
  """{"total_ms", "by_part", "by_type", "by_op"}: ms per step, largest first."""
  def grouped(key):
    sums = collections.Counter()
    for name, ps in totals.items():
      sums[key(name)] += ps
    return [(k, v / 1e9 / steps) for k, v in sums.most_common()]
  return dict(total_ms=sum(totals.values()) / 1e9 / steps,
              by_part=grouped(model_part), by_type=grouped(op_type),
              by_op=grouped(lambda name: name))


def format_table(title, rows, total_ms, top=None):
  lines = ["%s (ms per step, share of op time):" % title]
  for key, ms in rows[:top]:
    lines.append("  %9.1f  %5.1f%%  %s" % (ms, 100.0 * ms / total_ms, key))
  if top is not None and len(rows) > top:
    rest = sum(ms for _, ms in rows[top:])
    lines.append("  %9.1f  %5.1f%%  (%d more)" % (
        rest, 100.0 * rest / total_ms, len(rows) - top))
  return "\n".join(lines)


def trace(runner, batches, steps, logdir):
  """Traces `steps` steps; returns the path of the trace's xplane file."""
  tf.profiler.experimental.start(logdir)
  try:
    runner.run(batches, steps)
  finally:
    tf.profiler.experimental.stop()
  found = sorted(glob.glob(os.path.join(logdir, "plugins", "profile", "*",
                                        "*.xplane.pb")), key=os.path.getmtime)
  if not found:
    raise UserError("the profiler wrote no trace under %s" % logdir)
  return found[-1]


def main(argv=None):
  args = parse_args(argv)
  harness.set_dtype(args.dtype)
  fuse, reason = harness.set_fusion(args.fuse_elementwise,
                                    harness.DTYPES[args.dtype])
  print("fuse_elementwise %s -> %s (%s)" % (args.fuse_elementwise, fuse,
                                            reason))
  config = harness.make_config(
      args.size, args.mode, args.batch_size, args.seq_len, args.vocab_size,
      args.dtype, jit=args.jit, hparams=hparams_lib.load_hparams(args.hparams))
  runner = harness.ours(config)
  batches = harness.make_batches(config)
  runner.run(batches, 2)  # compile and warm up
  wall, _ = runner.run(batches, args.steps)
  logdir = args.logdir or tempfile.mkdtemp(prefix="profile_step_")
  result = breakdown(read_op_times(trace(runner, batches, args.steps,
                                         logdir)), args.steps)
  result.update(mode=args.mode, size=args.size, batch_size=args.batch_size,
                seq_len=args.seq_len, vocab_size=args.vocab_size,
                dtype=args.dtype, jit=args.jit, fuse=fuse, steps=args.steps,
                untraced_s_per_step=wall / args.steps, trace=logdir)
  print("%s %s, batch %d, seq %d, vocab %d, %s, jit %s: %.3f s/step "
        "untraced; %.1f ms of op time per step traced (all threads)" % (
            args.mode, args.size, args.batch_size, args.seq_len,
            args.vocab_size, args.dtype, args.jit,
            result["untraced_s_per_step"], result["total_ms"]))
  total = result["total_ms"] or 1.0
  print(format_table("by part of the step", result["by_part"], total))
  print(format_table("by op type", result["by_type"], total, args.top))
  print(format_table("costliest ops", result["by_op"], total, args.top))
  print("trace: %s (TensorBoard's profile plugin reads it)" % logdir)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(result, f, indent=1)
  return 0


if __name__ == "__main__":
  run_main(main)
