"""Replacement sampling primitives: p_G, inverse-CDF draws, scatters.

Everything here runs in float32 and outside the gradient (the draw is not
differentiated). Distributions are kept as log-probabilities over the
vocabulary, [batch, P, vocab]. The uniforms of the draw are counter-based
(SplitMix64 keyed per example), drawn for the whole batch at once. The samplers
themselves (what distribution to draw from) are in model/samplers.py.
"""

import tensorflow as tf

from util import xla_fusion

_NEG = -1e9


def generator_log_probs(mlm_logits, temperature=1.0):
  """log p_G, [batch, P, vocab] float32 (stop-gradient).

  Taken over the [batch * P, vocab] view the MLM loss's cross-entropy
  kernel takes (`losses.log_prob_at`), so that under XLA fusion (hparam
  `fuse_elementwise`) the two share one row maximum and one sum of
  exponentials. `temperature`: a Python number or a float32 scalar tensor
  (a scheduled one, model/temperature_schedule.py).
  """
  logits = tf.stop_gradient(tf.cast(mlm_logits, tf.float32))
  # A pass over [batch, P, vocab] saved at a constant 1.
  if tf.is_tensor(temperature) or temperature != 1.0:
    logits = logits / temperature
  shape = tf.shape(logits)
  rows = tf.reshape(logits, [-1, shape[-1]])
  return tf.reshape(tf.nn.log_softmax(rows, axis=-1), shape)


def forbid_original(log_probs, original_ids):
  """Sets log p(x_t) to -inf-like and renormalises (`disallow_correct`)."""
  is_original = tf.one_hot(original_ids, tf.shape(log_probs)[-1],
                           on_value=True, off_value=False, dtype=tf.bool)
  return tf.nn.log_softmax(tf.where(is_original, _NEG, log_probs), axis=-1)


# SplitMix64 (Steele, Lea and Flood 2014): the golden-ratio increment of its
# counter and the two multipliers of its output mix.
_GOLDEN = 0x9E3779B97F4A7C15
_MIX = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)
_ONE_BITS = 0x3F800000  # float32 1.0


def _u64(value):
  return tf.constant(value, tf.uint64)


def _mix64(z):
  """SplitMix64's output function: a bijection of uint64 (any shape)."""
  xor, shift = tf.bitwise.bitwise_xor, tf.bitwise.right_shift
  z = xor(z, shift(z, _u64(30))) * _u64(_MIX[0])
  z = xor(z, shift(z, _u64(27))) * _u64(_MIX[1])
  return xor(z, shift(z, _u64(31)))


def _example_keys(seeds):
  """[batch] uint64 keys from [batch, 2] int32/int64 seed pairs."""
  s = tf.bitcast(tf.cast(seeds, tf.int64), tf.uint64)
  return _mix64(_mix64(s[:, 0] + _u64(_GOLDEN)) + s[:, 1])


def per_example_uniform(seeds, shape):
  """U(0, 1) noise of `shape` per example from stateless seeds.

  Counter-based, so the whole batch is one vectorised computation: word i
  of example b is mix64(key_b + (i + 1) * golden) (SplitMix64 from a key
  hashed from b's seed), and each 32-bit half of a word gives one uniform
  k 2^-23 + 2^-24 from its top 23 bits (the midpoints of 2^23 bins, so
  never 0 or 1).

  Args: seeds [batch, 2] int32/int64, one seed pair per example; shape the
  per-example shape. Returns [batch] + shape float32. An example's noise
  depends on its seed only, not on the batch or the replica it lands on,
  and is the same with and without XLA.
  """
  size = tf.cast(tf.reduce_prod(shape), tf.int64)
  counters = tf.bitcast(tf.range(1, (size + 1) // 2 + 1), tf.uint64)
  words = _mix64(_example_keys(seeds)[:, tf.newaxis] +
                 counters * _u64(_GOLDEN))
  # [batch, words, 2], low half first (every platform TF runs on is
  # little-endian). The top 23 bits as the mantissa of a float in [1, 2):
  # 1 + k 2^-23, minus (1 - 2^-24), exactly (Sterbenz), with the fewest
  # passes over the [batch, P * vocab] noise.
  halves = tf.bitcast(words, tf.uint32)
  one_plus = tf.bitcast(tf.bitwise.bitwise_or(
      tf.bitwise.right_shift(halves, 9), _ONE_BITS), tf.float32)
  uniform = one_plus - (1.0 - 2.0**-24)
  batch = tf.shape(seeds)[:1]
  flat = tf.reshape(uniform, tf.concat([batch, [-1]], 0))[:, :size]
  return tf.reshape(flat, tf.concat([batch, shape], 0))


# Tokens per block of the two-stage draw: the first stage reads every
# entry once (to sum each block), the second one block per position.
_BLOCK = 128


@tf.function(jit_compile=True, autograph=False)
def _block_masses(log_probs, row_max):
  """exp(log_probs - row_max) summed per block of _BLOCK tokens.

  XLA-compiled even when the step is not: the exponentials are fused into
  the sums, so [batch, P, vocab] is read once and nothing of its size is
  written. Args: log_probs [batch, P, vocab] float32; row_max [batch, P, 1].
  Returns [batch, P, blocks] with blocks = ceil(vocab / _BLOCK); the last
  block holds the vocab % _BLOCK tail (empty, so 0, when it divides).
  """
  vocab = log_probs.shape[-1]
  whole = vocab // _BLOCK * _BLOCK
  mass = tf.exp(log_probs - row_max)
  blocks = tf.reshape(mass[..., :whole],
                      tf.concat([tf.shape(mass)[:2], [-1, _BLOCK]], 0))
  return tf.concat([tf.reduce_sum(blocks, -1),
                    tf.reduce_sum(mass[..., whole:], -1, keepdims=True)], -1)


def _pick(masses, u):
  """Inverse CDF: per row of masses [..., n] >= 0, the first index whose
  cumulative mass exceeds u [...] in (0, 1) times the row's total; never an
  index of zero mass (float32 rounding can leave u * total at the total:
  then the last index with mass)."""
  cumulative = tf.cumsum(masses, axis=-1)
  target = u * cumulative[..., -1]
  index = tf.reduce_sum(
      tf.cast(cumulative <= target[..., tf.newaxis], tf.int32), -1)
  positions = tf.range(tf.shape(masses)[-1])
  last_with_mass = tf.reduce_max(
      tf.where(masses > 0, positions, tf.zeros_like(positions)), -1)
  return tf.minimum(index, last_with_mass)


def categorical_sample(log_probs, seeds):
  """`categorical_sample_and_log_mass`'s draw alone: ids [batch, P] int32."""
  return categorical_sample_and_log_mass(log_probs, seeds)[0]


def categorical_sample_and_log_mass(log_probs, seeds):
  """Draws x' ~ softmax(log_probs) per position, by inverse CDF in two
  stages: a block of _BLOCK tokens with probability its mass, then a token
  of that block with probability its mass within it; two uniforms per
  position (`per_example_uniform`), so a draw depends on its example's seed
  only.

  Only the block sums pass over the whole vocabulary (one XLA-fused pass,
  `_block_masses`); the row maximum, which keeps exp from overflowing for
  unnormalised log-probs, is TensorFlow's kernel, kept out of auto-
  clustering, where XLA's CPU reduction over a 30k-long row is 4x
  slower (bench/cpu_kernels.py).

  The block sums also give the log of the total mass, logsumexp over the
  vocabulary, which normalises an unnormalised draw at the drawn token
  (`samplers.Draw.log_prob_at`) without another pass.

  Args: log_probs [batch, P, vocab] float32 (vocab static), normalised or
  not; entries of -1e9 are never drawn. seeds [batch, 2]. Returns ids
  [batch, P] int32 and the log total mass [batch, P] float32 (about 0 for
  normalised log_probs).
  """
  vocab = log_probs.shape[-1]
  with xla_fusion.outside_clusters():
    row_max = tf.reduce_max(log_probs, axis=-1, keepdims=True)
  uniforms = per_example_uniform(seeds, [tf.shape(log_probs)[1], 2])
  block_masses = _block_masses(log_probs, row_max)
  log_mass = row_max[..., 0] + tf.math.log(tf.reduce_sum(block_masses, -1))
  block = _pick(block_masses, uniforms[..., 0])
  # The chosen block's log-probs: [batch, P, _BLOCK], past the vocabulary
  # (in the tail block) as zero mass.
  ids = block[..., tf.newaxis] * _BLOCK + tf.range(_BLOCK)
  in_vocab = ids < vocab
  inside = tf.gather(log_probs, tf.minimum(ids, vocab - 1), batch_dims=2)
  masses = tf.where(in_vocab, tf.exp(inside - row_max), 0.0)
  return block * _BLOCK + _pick(masses, uniforms[..., 1]), log_mass


def write_at_vocab(values, ids, updates):
  """values [batch, P, vocab] with updates [batch, P] written at ids
  [batch, P]: one entry per position, no [batch, P, vocab] mask."""
  shape = tf.shape(ids)
  cols = tf.tile(tf.range(shape[1])[tf.newaxis, :], [shape[0], 1])
  indices = tf.stack([_row_ids(ids), cols, tf.cast(ids, tf.int32)], axis=-1)
  return tf.tensor_scatter_nd_update(values, indices,
                                     tf.cast(updates, values.dtype))


def _row_ids(x):
  """[batch, P] int32: the batch index of every entry of x [batch, P]."""
  return tf.tile(tf.range(tf.shape(x)[0])[:, tf.newaxis], [1, tf.shape(x)[1]])


def gather_vocab(values, ids):
  """values [batch, P, vocab] at ids [batch, P] -> [batch, P]."""
  return tf.gather(values, ids, batch_dims=2)


def scatter_at_positions(base, positions, values, weights):
  """`base` [batch, seq_len] with `values` [batch, P] written at `positions`.

  Only real predictions (weights > 0) write; padding predictions write back
  the value already at their position (they all point at position 0), so the
  duplicate writes there agree.
  """
  current = tf.gather(base, positions, batch_dims=1)
  updates = tf.where(weights > 0, tf.cast(values, base.dtype), current)
  indices = tf.stack([_row_ids(positions), positions], axis=-1)
  return tf.tensor_scatter_nd_update(base, indices, updates)
