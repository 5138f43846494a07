"""Times the Gumbel noise of one replacement draw, [batch, P, vocab].

Compares `model.sampling.per_example_uniform` (counter-based, one vectorised
pass over the batch) with the per-example `tf.map_fn` of
`tf.random.stateless_uniform` it replaced, each in a `tf.function` with and
without XLA, alone ("noise") and inside the Gumbel-max draw ("draw"). Rounds
alternate between the variants, so load drifting over the run hits all alike.

Usage:
  python bench/sampling_noise.py                  # [16, 19, 30522]
  python bench/sampling_noise.py --batch-size 128 --predictions 19
"""

import argparse
import time

from util.cli import tensorflow_startup  # pylint: disable=g-import-not-at-top

tensorflow_startup()

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf

from model import sampling
from util.cli import run_main


def map_fn_uniform(seeds, shape):
  """The previous noise: one native stateless draw per example, in turn."""
  def one(seed):
    return tf.random.stateless_uniform(shape, seed=seed, minval=1e-20,
                                       maxval=1.0)
  return tf.map_fn(one, seeds, fn_output_signature=tf.float32)


def _variants(shape):
  """{name: (function of (log_probs, seeds), uses log_probs)}."""
  out = {}
  for label, uniform in (("vectorised", sampling.per_example_uniform),
                         ("map_fn", map_fn_uniform)):
    def noise(log_probs, seeds, uniform=uniform):
      del log_probs
      return tf.reduce_sum(uniform(seeds, shape))

    def draw(log_probs, seeds, uniform=uniform):
      neg_gumbel = tf.math.log(-tf.math.log(uniform(seeds, shape)))
      return tf.argmax(log_probs - neg_gumbel, axis=-1)

    for jit in (False, True):
      suffix = " xla" if jit else ""
      out["noise %s%s" % (label, suffix)] = tf.function(noise,
                                                        jit_compile=jit)
      out["draw %s%s" % (label, suffix)] = tf.function(draw, jit_compile=jit)
  return out


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--batch-size", type=int, default=16)
  parser.add_argument("--predictions", type=int, default=19)
  parser.add_argument("--vocab-size", type=int, default=30522)
  parser.add_argument("--rounds", type=int, default=15)
  args = parser.parse_args(argv)
  shape = tf.constant([args.predictions, args.vocab_size])
  seeds = tf.constant(np.random.default_rng(0).integers(
      -2**31, 2**31 - 1, (args.batch_size, 2)), tf.int32)
  log_probs = tf.nn.log_softmax(tf.random.stateless_normal(
      [args.batch_size, args.predictions, args.vocab_size], [1, 2]))
  variants = _variants(shape)
  for fn in variants.values():
    fn(log_probs, seeds).numpy()  # trace and compile
  times = {name: [] for name in variants}
  for _ in range(args.rounds):
    for name, fn in variants.items():
      start = time.perf_counter()
      fn(log_probs, seeds).numpy()
      times[name].append(time.perf_counter() - start)
  print("noise [%d, %d, %d], %d rounds" % (args.batch_size, args.predictions,
                                           args.vocab_size, args.rounds))
  for name in sorted(times):
    t = np.array(times[name]) * 1e3
    print("  %-22s median %7.1f ms  min %7.1f ms" % (name, np.median(t),
                                                       t.min()))
  return 0


if __name__ == "__main__":
  run_main(main)
