"""Losses of docs/method.md §3-§11, all in float32.

Per-position / per-token functions return unreduced losses; `replica_mean`
turns them into this replica's share of a *global* weighted mean (the
denominator is all-reduced), so the shares of all replicas sum to the mean
over the global batch and gradients match one device exactly.
"""

import tensorflow as tf


def global_sum(x):
  """Sum of `x` over all replicas (identity without a strategy)."""
  x = tf.reduce_sum(tf.cast(x, tf.float32))
  context = tf.distribute.get_replica_context()
  if context is None or context.num_replicas_in_sync == 1:
    return x
  return context.all_reduce(tf.distribute.ReduceOp.SUM, x)


def replica_mean(values, weights, global_weight=None):
  """This replica's share of sum(values * weights) / global sum(weights).

  `global_weight`, when given, is that global sum, taken beforehand (see
  `loss_denominators`); else it is all-reduced here.
  """
  weights = tf.cast(weights, tf.float32)
  if global_weight is None:
    global_weight = global_sum(weights)
  denominator = tf.maximum(global_weight, 1e-6)
  return tf.reduce_sum(tf.cast(values, tf.float32) * weights) / denominator


def loss_denominators(features):
  """The global sums that the losses divide by, from the features alone.

  {"masked": sum of masked_lm_weights, "tokens": sum of input_mask} over the
  global batch (float32 scalars). The train step takes them before its
  XLA-compiled forward/backward pass and hands them to it beside the
  features (training/train_step.py; the model's `loss_denominators`
  argument), since an all-reduce inside a compiled pass is refused by
  MirroredStrategy on CPUs.
  """
  return {"masked": global_sum(features["masked_lm_weights"]),
          "tokens": global_sum(features["input_mask"])}


def log_prob_at(logits, ids):
  """log softmax(logits)[ids]: [batch, P] float32 from [batch, P, vocab].

  Through the fused softmax cross-entropy kernel, which takes its gradient
  softmax - one_hot in the forward pass: no [batch, P, vocab] scatter of a
  gathered log-softmax in the backward pass.
  """
  return -tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=ids, logits=tf.cast(logits, tf.float32))


def true_token_log_prob(mlm_logits, labels):
  """log p_G(x_t | c_t) of the true token, per position.

  Args: mlm_logits [batch, P, vocab] generator logits; labels [batch, P]
  int32 true token ids. Returns [batch, P] float32; its negation is the
  MLM cross-entropy.
  """
  return log_prob_at(mlm_logits, labels)


def focal_loss_from_log_prob(log_p, gamma):
  """Focal loss -(1 - p)^gamma log p from log p [batch, P]; gamma 0 gives
  exactly the cross-entropy. The modulating factor is differentiated."""
  if gamma == 0:
    return -log_p
  # d(1 - p)^gamma / dp is infinite at p = 1 (float32 rounds a confident p to
  # exactly 1) for gamma < 1, and inf * log(1) gives a NaN gradient; the floor
  # keeps it finite (the loss there is 0 either way).
  one_minus_p = tf.maximum(-tf.math.expm1(log_p), 1e-12)
  return -tf.pow(one_minus_p, gamma) * log_p


def discriminator_loss(disc_logits, labels):
  """Per-token binary cross-entropy l_t of replaced-token detection.

  Args: disc_logits [batch, seq_len] float32; labels [batch, seq_len], 1 where
  the token was replaced. Returns [batch, seq_len] float32.
  """
  return tf.nn.sigmoid_cross_entropy_with_logits(
      labels=tf.cast(labels, tf.float32), logits=tf.cast(disc_logits,
                                                         tf.float32))


def log_softplus(x):
  """log softplus(x), finite for every finite x (any shape, float32).

  softplus(x) underflows to 0 below x ~ -104 in float32, where its log is x
  up to exp(x) / 2; below -15 that is within 2e-7 of x, which is returned.
  """
  x = tf.cast(x, tf.float32)
  safe = tf.maximum(x, -15.0)  # The unused branch stays finite.
  return tf.where(x < -15.0, x, tf.math.log(tf.nn.softplus(safe)))


def log_discriminator_loss(disc_logits, labels):
  """log l_t of `discriminator_loss`, finite however confident D is.

  l_t = softplus(z_t) for an original token (label 0), softplus(-z_t) for a
  replaced one. Args: disc_logits and labels of any one shape. Returns that
  shape, float32. For the analyses, which correlate in log space
  (docs/method.md §13.2).
  """
  z = tf.cast(disc_logits, tf.float32)
  return log_softplus(tf.where(tf.cast(labels, tf.bool), -z, z))


def hp_loss_sampling_loss(scores_at_sampled, disc_logits_at_masked):
  """HP-Loss head loss per masked position (docs/method.md §8).

  BCE between q_t(x'_t) = sigmoid(u_t(x'_t)) and the target
  stopgrad(1 - sigmoid(z_t)), the probability D called the placed token
  original. D is read only through `tf.stop_gradient`.

  Args: scores_at_sampled [batch, P] u_t(x'_t); disc_logits_at_masked
    [batch, P] z_t at the masked positions. Returns [batch, P] float32.
  """
  target = tf.stop_gradient(1.0 - tf.sigmoid(disc_logits_at_masked))
  return tf.nn.sigmoid_cross_entropy_with_logits(labels=target,
                                                 logits=scores_at_sampled)


def self_normalise_and_clip(raw, weights, clip):
  """Importance weights divided by their global mean, then clipped.

  raw [batch, P] holds non-negative unnormalised weights; `weights` [batch,
  P] marks real predictions (padding gets 0). The mean is over the real
  positions of the global batch, so the weights average 1 before the clip.
  The clip bounds each weight at `clip` times that mean: a p_sample far
  below p_G (down to `hp_loss_min_estimate` of it) would otherwise give one
  position a weight of the order of the number of positions. Where a loss
  divides by a count (HP-Dist's L_S), one position's term is then at most
  `clip` times what it is at weight 1. The clip does not bound a position's
  share of the weights' sum: one huge raw weight makes the mean large and
  every other weight small, and clipped it can still hold nearly all of
  the sum (in the D loss of docs/method.md §10, which divides by that sum,
  the unmasked tokens' weight 1 is what limits it). Returns stop-gradient
  [batch, P] float32.
  """
  weights = tf.cast(weights, tf.float32)
  raw = tf.stop_gradient(tf.cast(raw, tf.float32) * weights)
  mean = global_sum(raw) / tf.maximum(global_sum(weights), 1e-6)
  return tf.stop_gradient(tf.minimum(raw / tf.maximum(mean, 1e-12), clip))


def hp_dist_weights(log_pg_at_sampled, log_ps_at_sampled, disc_loss_at_masked,
                    weights, clip):
  """Importance weights of HP-Dist: w_t = p_G(x'_t) L_D(x'_t) / p_sample(x'_t),
  self-normalised and clipped (`self_normalise_and_clip`). Inputs [batch, P].
  """
  raw = tf.exp(log_pg_at_sampled - log_ps_at_sampled) * disc_loss_at_masked
  return self_normalise_and_clip(raw, weights, clip)


def hp_dist_sampling_loss(log_ps_at_sampled, importance_weights):
  """HP-Dist head loss per masked position: -w_t log p_S(x'_t | c_t).

  Minimised (in expectation over x' ~ p_sample) at p_S = p*, docs/method.md §9.
  """
  return -tf.stop_gradient(importance_weights) * log_ps_at_sampled


def disc_importance_weights(log_pg_at_sampled, log_ps_at_sampled, weights,
                            clip):
  """p_G(x'_t) / p_sample(x'_t), self-normalised and clipped
  (`self_normalise_and_clip`): `disc_importance_weighting`. Inputs [batch, P].
  """
  return self_normalise_and_clip(
      tf.exp(log_pg_at_sampled - log_ps_at_sampled), weights, clip)
