"""Which CPU kernels to leave to TensorFlow under XLA fusion, measured.

With `fuse_elementwise` on (bfloat16 on CPU, util/xla_fusion.py), XLA's
auto-clustering compiles every fusible op, reductions included. This bench
times, at the pre-training step's shapes, the reductions the step makes
with XLA (`jit_compile`) and with TensorFlow's kernels, and the
replacement draw (`model.sampling.categorical_sample`) against the
Gumbel-max draw it replaced, so that `xla_fusion.outside_clusters` is used
where, and only where, it pays:

  bias grad   the sum of a [batch, seq, width] gradient over its two
              leading axes (a dense layer's bias gradient;
              model/layers/dense.py), float32 and bfloat16
  vocab max   max over the vocabulary of [batch, P, vocab] float32
  argmax      argmax over the vocabulary
  draw        one replacement per position: two-stage inverse CDF (ours)
              and Gumbel-max, argmax(log p - log(-log u))

Variants run in interleaved rounds of `--calls` calls each (load drifting
over the run hits all alike); the table gives the median time of a call
over the rounds and the spread (range / median).

Usage:
  python bench/cpu_kernels.py                 # ELECTRA-Small's shapes
  python bench/cpu_kernels.py --rounds 30 --calls 10 --json out.json
"""

import argparse
import os
import time

from util.cli import tensorflow_startup  # pylint: disable=g-import-not-at-top

tensorflow_startup()

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf

from model import sampling
from util.cli import run_main
from util.io_utils import write_json_atomic


@tf.function(jit_compile=True)
def _gumbel_perturbed(log_probs, seeds):
  uniform = sampling.per_example_uniform(seeds, tf.shape(log_probs)[1:])
  return log_probs - tf.math.log(-tf.math.log(uniform))


def gumbel_max_sample(log_probs, seeds):
  """The draw before `categorical_sample`, as it was: one uniform per
  entry, the noise and its logs XLA-fused, the argmax TensorFlow's."""
  return tf.argmax(_gumbel_perturbed(log_probs, seeds), axis=-1,
                   output_type=tf.int32)


def cases(args):
  """[(case, {variant: (function, inputs)})] at the arguments' shapes."""
  normal = tf.random.stateless_normal
  grad = normal([args.batch_size, args.seq_len, args.width], [1, 2])
  logits = 3.0 * normal([args.batch_size, args.predictions, args.vocab_size],
                        [3, 4])
  log_probs = tf.nn.log_softmax(logits)
  seeds = tf.constant(np.random.default_rng(0).integers(
      -2**31, 2**31 - 1, (args.batch_size, 2)), tf.int32)

  def both(fn, *inputs):
    return {"xla": (tf.function(fn, jit_compile=True), inputs),
            "tensorflow": (tf.function(fn), inputs)}

  def bias_grad(g):
    return tf.reduce_sum(g, axis=[0, 1])

  return [
      ("bias grad float32", both(bias_grad, grad)),
      ("bias grad bfloat16", both(bias_grad, tf.cast(grad, tf.bfloat16))),
      ("vocab max", both(lambda x: tf.reduce_max(x, axis=-1), logits)),
      ("argmax", both(lambda x: tf.argmax(x, axis=-1), logits)),
      ("draw", {
          "inverse CDF (ours)": (tf.function(sampling.categorical_sample),
                                 (log_probs, seeds)),
          "Gumbel-max": (tf.function(gumbel_max_sample), (log_probs, seeds)),
      }),
  ]


def time_cases(case_list, rounds, calls):
  """{case: {variant: [seconds per call, one per round]}}: `calls` calls
  of a variant in a row, variants interleaved."""
  for _, variants in case_list:
    for fn, inputs in variants.values():
      fn(*inputs).numpy()  # trace and compile
  times = {case: {v: [] for v in variants} for case, variants in case_list}
  for _ in range(rounds):
    for case, variants in case_list:
      for name, (fn, inputs) in variants.items():
        start = time.perf_counter()
        for _ in range(calls):
          result = fn(*inputs)
        result.numpy()
        times[case][name].append((time.perf_counter() - start) / calls)
  return times


def report(times):
  """Rows {case, variant, median_ms, min_ms, max_ms, spread}, and the
  printed table."""
  rows, lines = [], ["%-20s %-20s %10s %7s" % ("case", "variant",
                                               "median ms", "spread")]
  for case, variants in times.items():
    for name, seconds in variants.items():
      ms = np.array(seconds) * 1e3
      median = float(np.median(ms))
      spread = float((ms.max() - ms.min()) / median)
      rows.append(dict(case=case, variant=name, median_ms=median,
                       min_ms=float(ms.min()), max_ms=float(ms.max()),
                       spread=spread))
      lines.append("%-20s %-20s %10.2f %6.1f%%" % (case, name, median,
                                                    100 * spread))
  return rows, "\n".join(lines)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--batch-size", type=int, default=16)
  parser.add_argument("--seq-len", type=int, default=128)
  parser.add_argument("--width", type=int, default=1024,
                      help="the bias's size (ELECTRA-Small's FFN: 1024)")
  parser.add_argument("--predictions", type=int, default=19)
  parser.add_argument("--vocab-size", type=int, default=30522)
  parser.add_argument("--rounds", type=int, default=20)
  parser.add_argument("--calls", type=int, default=5,
                      help="calls of a variant in a row, per round")
  parser.add_argument("--json", default=None, help="also write the rows here")
  args = parser.parse_args(argv)
  rows, table = report(time_cases(cases(args), args.rounds, args.calls))
  print("%d rounds of %d calls; TensorFlow's default thread pools (%d "
        "cores)" % (args.rounds, args.calls, os.cpu_count()))
  print(table)
  if args.json:
    write_json_atomic(args.json, dict(vars(args), rows=rows))
  return 0


if __name__ == "__main__":
  run_main(main)
