"""The matmul floor of a pre-training step: its matmuls, each timed alone.

Traces the train step (bench/harness.py: ours in one sampling mode, or the
tf-models-official peer), lists every matmul-like op of its graph (MatMul,
BatchMatMul*, Einsum) with its input shapes, dtype and attributes, and runs
each distinct one alone through the same TensorFlow kernel, `--rounds`
rounds of `--calls` calls two ways (`time_op`): in a row on the same
cache-warm inputs, each call after the one before, and side by side on
distinct inputs, which the executor runs on its inter-op threads at once as
it does a step's independent ops. The floor is the sum over the step's ops
of count x the better of the two medians: what the step would take if
nothing but its matmuls ran, each as fast as TensorFlow's kernel runs it
alone or beside its like.

Against the matmul probe (pretrain/peak.py: large square matmuls) the floor
bounds MFU: analytic FLOPs / floor / probe is the most the step can reach
with these kernels at these shapes, however little the rest costs. The
FLOPs counted from the graph's ops are printed beside the analytic count
(pretrain/flops.py) as a check of both.

One part of the rest cannot cost nothing: the optimizer's update reads
every gradient and reads and writes every variable and its two Adam
moments (`update_bytes`). At the best rate TensorFlow reads memory here
(`peak.measure_read_bandwidth`) those bytes take at least the update
floor, and the matmul floor plus it bounds MFU again (`mfu_ceiling_with_
update`), for any implementation that runs these matmul kernels.

Usage:
  python bench/matmul_floor.py --dtype mixed_bfloat16
  python bench/matmul_floor.py --model peer --dtype mixed_bfloat16 --top 15
  python bench/matmul_floor.py --size tiny --batch-size 2 --seq-len 32 \\
      --vocab-size 64 --probe-tflops 1 --json out.json
"""

import argparse
import collections
import statistics
import string
import sys
import time

from util.cli import tensorflow_startup  # pylint: disable=g-import-not-at-top

tensorflow_startup()

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf

from bench import harness
from pretrain import peak as peak_lib
from util.cli import require_at_least
from util.cli import run_main
from util.errors import UserError
from util.io_utils import write_json_atomic

MATMUL_TYPES = ("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3",
                "Einsum")
_ATTRS = ("transpose_a", "transpose_b", "adj_x", "adj_y", "equation")

# One distinct matmul of a graph: op type, input shapes, input dtype name and
# its attributes as sorted (name, value) pairs.
OpKey = collections.namedtuple("OpKey", "type shapes dtype attrs")


def matmul_ops(graph):
  """Counter {OpKey: how many ops of the graph have it} of `graph`'s
  matmul-like ops. Raises ValueError on one whose shapes are not static."""
  found = collections.Counter()
  for op in graph.get_operations():
    if op.type not in MATMUL_TYPES:
      continue
    shapes = tuple(tuple(t.shape.as_list()) for t in op.inputs)
    if any(d is None for shape in shapes for d in shape):
      raise ValueError("%s has a dynamic input shape %s" % (op.name, shapes))
    attrs = []
    for name in _ATTRS:
      if name in op.node_def.attr:
        value = op.get_attr(name)
        attrs.append((name, value.decode() if isinstance(value, bytes)
                      else value))
    found[OpKey(op.type, shapes, op.inputs[0].dtype.name,
                tuple(attrs))] += 1
  return found


def _einsum_flops(equation, shapes):
  """2 x the product of every index's size (each index once)."""
  inputs, _ = equation.split("->")
  sizes = {}
  for labels, shape in zip(inputs.split(","), shapes):
    if "..." in labels:  # name the broadcast axes like any other index
      extra = len(shape) - len(labels) + 3
      labels = labels.replace("...", string.ascii_uppercase[:extra])
    sizes.update(zip(labels, shape))
  return 2 * int(np.prod(list(sizes.values())))


def op_flops(key):
  """Multiply-add FLOPs (2 per multiply-add) of one op `key`."""
  attrs = dict(key.attrs)
  if key.type == "Einsum":
    return _einsum_flops(attrs["equation"], key.shapes)
  a, b = key.shapes
  m, k = a[-2:][::-1] if attrs.get("transpose_a") or attrs.get(
      "adj_x") else a[-2:]
  n = b[-2] if attrs.get("transpose_b") or attrs.get("adj_y") else b[-1]
  batch = int(np.prod(np.broadcast_shapes(a[:-2], b[:-2])))
  return 2 * batch * m * k * n


def _op_function(key):
  """x, y -> the op of `key`, through the raw op the graph holds."""
  attrs = dict(key.attrs)
  if key.type == "Einsum":
    return lambda x, y: tf.raw_ops.Einsum(inputs=[x, y], **attrs)
  if key.type == "MatMul":
    return lambda x, y: tf.raw_ops.MatMul(a=x, b=y, **attrs)
  return lambda x, y: getattr(tf.raw_ops, key.type)(x=x, y=y, **attrs)


# Memory accesses of an Adam-family update per parameter, at the least:
# the gradient read; the variable and its two moments read and written.
UPDATE_ACCESSES = 1 + 2 * 3


def update_bytes(variables):
  """Bytes an Adam update of `variables` moves at the least (each access
  of a gradient or a slot as large as its variable)."""
  return sum(v.shape.num_elements() * v.dtype.size * UPDATE_ACCESSES
             for v in variables)


def _first_entries_sum(tensors):
  """The sum of each tensor's first entry: needs every tensor computed
  (an op whose output only feeds control edges is pruned), reads little."""
  return tf.add_n([tf.reshape(x, [-1])[0] for x in tensors])


def time_op(key, calls, rounds, side_by_side=False):
  """Seconds per call of op `key` in each of `rounds` rounds of `calls`
  calls, less the time of the same function without them (the call's own
  overhead is not the op's).

  In a row (default), each call waits for the one before (so none is
  merged with another or runs beside it) and all share their inputs, warm
  in the caches as a step's freshly made operands mostly are. Side by
  side, the calls have distinct inputs (so none is merged) and no order:
  TensorFlow's executor runs them on its inter-op threads at once, as it
  runs a step's independent ops. Small ops that keep the cores half idle
  gain from that (up to 1.7x measured), large ones do not.
  """
  op = _op_function(key)
  dtype = tf.as_dtype(key.dtype)
  inputs = [[tf.cast(tf.random.stateless_normal(shape, [j, i]), dtype)
             for j, shape in enumerate(key.shapes)]
            for i in range(calls if side_by_side else 1)]

  @tf.function
  def ops():
    outputs = []
    for i in range(calls):
      x, y = inputs[i % len(inputs)]
      if side_by_side:
        outputs.append(op(x, y))
        continue
      with tf.control_dependencies(outputs[-1:]):
        outputs.append(op(x, y))
    return _first_entries_sum(outputs)

  @tf.function
  def no_ops():
    return _first_entries_sum([inputs[i % len(inputs)][0]
                               for i in range(calls)])

  def seconds(fn):
    start = time.perf_counter()
    fn().numpy()
    return time.perf_counter() - start

  seconds(ops), seconds(no_ops)  # traces and warms up
  return [max(0.0, seconds(ops) - seconds(no_ops)) / calls
          for _ in range(rounds)]


def _per_second(amount, seconds):
  """amount / seconds; inf for an op too quick to time (0 s after the
  call's overhead is taken out)."""
  return amount / seconds if seconds > 0 else float("inf")


def _label(key):
  attrs = dict(key.attrs)
  detail = attrs.get("equation") or ",".join(
      name for name, value in key.attrs if value) or "-"
  return "%s %s %s %s" % (key.type, detail, " x ".join(
      str(list(s)) for s in key.shapes), key.dtype)


def measure(args):
  """The floor of `args`' step: a dict of totals and one row per op."""
  harness.set_dtype(args.dtype)
  harness.set_fusion(args.fuse_elementwise, harness.DTYPES[args.dtype])
  mode = "mlm" if args.model == "peer" else args.mode
  config = harness.make_config(args.size, mode, args.batch_size, args.seq_len,
                               args.vocab_size, args.dtype)
  runner = (harness.peer if args.model == "peer" else harness.ours)(config)
  batches = harness.make_batches(config)
  graph = runner.step.get_concrete_function(batches[0]).graph
  ops = matmul_ops(graph)
  rows = []
  for i, (key, count) in enumerate(sorted(ops.items(), key=str)):
    in_a_row = time_op(key, args.calls, args.rounds)
    side_by_side = time_op(key, args.calls, args.rounds, side_by_side=True)
    flops = op_flops(key)
    median = statistics.median(in_a_row)
    best = min(median, statistics.median(side_by_side))
    rows.append(dict(op=_label(key), count=count, flops=flops,
                     median_ms=1e3 * median, min_ms=1e3 * min(in_a_row),
                     max_ms=1e3 * max(in_a_row),
                     side_by_side_ms=1e3 * statistics.median(side_by_side),
                     best_ms=1e3 * best,
                     tflops_per_s=_per_second(flops, best) / 1e12,
                     total_ms=1e3 * count * best))
    sys.stderr.write("\r  timed %d/%d distinct matmuls" % (i + 1, len(ops)))
  sys.stderr.write("\n")
  rows.sort(key=lambda row: -row["total_ms"])
  floor = sum(row["total_ms"] for row in rows) / 1e3
  in_a_row_floor = sum(row["count"] * row["median_ms"] for row in rows) / 1e3
  counted = sum(row["count"] * row["flops"] for row in rows)
  analytic = harness.step_flops(config)
  probe = (args.probe_tflops * 1e12 if args.probe_tflops else
           peak_lib.measure_matmul_peak(harness.DTYPES[args.dtype]))
  update = update_bytes(runner.model.trainable_variables)
  bandwidth = (args.read_gbs * 1e9 if args.read_gbs else
               peak_lib.measure_read_bandwidth())
  step = None
  if args.step_rounds:
    runner.run(batches, 1)
    step = statistics.median(harness.time_interleaved(
        [runner], batches, args.step_rounds, 3)[runner.name]["wall"])
  return dict(
      model=runner.name, size=args.size, dtype=args.dtype,
      batch_size=args.batch_size, seq_len=args.seq_len,
      device=peak_lib.gpu_name() or peak_lib.cpu_name(),
      tf_version=tf.__version__, calls=args.calls, rounds=args.rounds,
      ops=sum(ops.values()), distinct_ops=len(ops), floor_s=floor,
      in_a_row_s=in_a_row_floor, counted_flops=counted, analytic_flops=analytic,
      probe_tflops=probe / 1e12,
      matmul_tflops_per_s=_per_second(counted, floor) / 1e12,
      mfu_ceiling=100.0 * _per_second(analytic, floor) / probe,
      update_bytes=update, read_gbs=bandwidth / 1e9,
      update_floor_s=update / bandwidth,
      mfu_ceiling_with_update=100.0 * _per_second(
          analytic, floor + update / bandwidth) / probe,
      probe_step_s=analytic / probe,
      step_s=step, mfu=100.0 * analytic / step / probe if step else None,
      rows=rows)


def report(result, top):
  """The printed table and totals of `measure`'s result."""
  lines = ["%9s %6s %9s %9s  %s" % ("total ms", "count", "ms/op", "TFLOP/s",
                                    "op (inputs, dtype)")]
  for row in result["rows"][:top]:
    lines.append("%9.2f %6d %9.3f %9.3f  %s" % (
        row["total_ms"], row["count"], row["best_ms"],
        row["tflops_per_s"], row["op"]))
  if len(result["rows"]) > top:
    rest = result["rows"][top:]
    lines.append("%9.2f %6d %9s %9s  (%d more distinct ops)" % (
        sum(r["total_ms"] for r in rest), sum(r["count"] for r in rest), "",
        "", len(rest)))
  r = result
  lines += [
      "%s, %s, %s: %d matmul ops (%d distinct)" % (
          r["model"], r["dtype"], r["device"], r["ops"], r["distinct_ops"]),
      "matmul floor %.3f s per step (each op at the better of in a row and "
      "side by side; in a row only: %.3f s)" % (r["floor_s"],
                                                r["in_a_row_s"]),
      "FLOPs: %.4g counted from the ops, %.4g analytic (pretrain/flops.py)"
      % (r["counted_flops"], r["analytic_flops"]),
      "matmuls at the step's shapes: %.3f TFLOP/s, %.1f%% of the probe's "
      "%.3f" % (r["matmul_tflops_per_s"],
                100 * r["matmul_tflops_per_s"] / r["probe_tflops"],
                r["probe_tflops"]),
      "MFU ceiling (analytic FLOPs / floor / probe): %.1f%%; at 100%% MFU "
      "the step would take %.3f s" % (r["mfu_ceiling"], r["probe_step_s"]),
      "update floor: %.0f MB (the gradients read, the variables and their "
      "2 moments read and written) at %.1f GB/s, the best read rate: %.1f "
      "ms; MFU ceiling with it: %.1f%%" % (
          r["update_bytes"] / 1e6, r["read_gbs"], 1e3 * r["update_floor_s"],
          r["mfu_ceiling_with_update"])]
  if r["step_s"]:
    lines.append("the step itself: %.3f s, MFU %.1f%%; its matmuls alone "
                 "take %.0f%% of it" % (r["step_s"], r["mfu"],
                                        100 * r["floor_s"] / r["step_s"]))
  return "\n".join(lines)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model", default="ours", choices=("ours", "peer"))
  parser.add_argument("--mode", default="hp_loss",
                      help="our sampling mode (ignored for the peer)")
  harness.add_step_flags(parser, dtype="mixed_bfloat16")
  parser.add_argument("--calls", type=int, default=10,
                      help="calls of an op in a row per round")
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--step-rounds", type=int, default=3,
                      help="rounds of 3 steps timing the step itself (0: "
                      "skip)")
  parser.add_argument("--probe-tflops", type=float, default=None,
                      help="the matmul peak to divide by, instead of "
                      "measuring it (pretrain/peak.py's probe)")
  parser.add_argument("--read-gbs", type=float, default=None,
                      help="the memory read rate (GB/s) the update floor "
                      "divides by, instead of measuring it")
  parser.add_argument("--top", type=int, default=20,
                      help="rows of the table (costliest first)")
  parser.add_argument("--json", default=None,
                      help="also write the result here")
  args = parser.parse_args(argv)
  harness.parse_modes(args.mode)
  harness.check_step_flags(args)
  require_at_least(args, ("calls", "rounds", "top"))
  require_at_least(args, ("step_rounds",), minimum=0)
  for name in ("probe_tflops", "read_gbs"):
    if getattr(args, name) is not None and getattr(args, name) <= 0:
      raise UserError("--%s must be > 0." % name.replace("_", "-"))
  result = measure(args)
  print(report(result, args.top))
  if args.json:
    write_json_atomic(args.json, dict(vars(args), **result))
  return 0


if __name__ == "__main__":
  run_main(main)
