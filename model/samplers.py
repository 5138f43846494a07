"""Replacement samplers as objects, and the registry of their names.

A sampler (config `sampling`) says how the replacement x'_t is drawn and,
when it learns, how its sampling head trains (docs/method.md §4-§9):

  log_probs(log_pg, scores, original_ids)
      the draw distribution, [batch, P, vocab] float32 log-probabilities.
  head_terms(scores, sampled, original_ids, disc_logits_at_masked,
             generator_log_prob)
      per-position [batch, P] tensors of the forward pass: what the head's
      loss needs, and `est_disc_loss`, the sampler's estimate of D's loss
      at the placed token (docs/method.md §13.2). Empty unless it learns.
  head_loss(out, weights)
      the head's loss per position [batch, P] from the forward pass's dict
      `out`, or None. May take batch-wide (cross-replica) sums when
      `normalises_over_batch`: the model's `objective`, not its `forward`,
      calls it.

Class attributes: `name`, `learns` (has a sampling head),
`normalises_over_batch` (its head loss self-normalises weights over the
global batch). Everything here runs in float32; the draw distributions are
stop-gradient.
"""

import tensorflow as tf

from model import losses


class Sampler(object):
  """Base: a sampler without a head. Subclasses set `name` and `log_probs`."""

  name = None
  learns = False
  normalises_over_batch = False

  @classmethod
  def from_config(cls, unused_config):
    return cls()

  def log_probs(self, log_pg, scores, original_ids):
    raise NotImplementedError

  def head_terms(self, scores, sampled, original_ids, disc_logits_at_masked,
                 generator_log_prob):
    del scores, sampled, original_ids, disc_logits_at_masked
    del generator_log_prob
    return {}

  def head_loss(self, out, weights):
    del out, weights
    return None


class GeneratorSampler(Sampler):
  """ELECTRA: x'_t ~ p_G = softmax(mlm_logits / temperature)."""

  name = "mlm"

  def log_probs(self, log_pg, scores, original_ids):
    return log_pg


class UniformSampler(Sampler):
  """Every vocabulary entry equally likely."""

  name = "uniform"

  def log_probs(self, log_pg, scores, original_ids):
    return tf.fill(tf.shape(log_pg), -tf.math.log(
        tf.cast(tf.shape(log_pg)[-1], tf.float32)))


def hp_loss_estimate(scores, is_original):
  """HP-Loss's estimate L^_D of D's loss for placing a token (§8).

  q = sigmoid(u) is the predicted probability that D calls the token
  original: L^_D = -log(1 - q) = softplus(u) for a replacement (D should
  say "replaced") and -log q = softplus(-u) at x_t. Any matching shapes.
  """
  return tf.where(is_original, tf.nn.softplus(-scores), tf.nn.softplus(scores))


class HPLossSampler(Sampler):
  """HP-Loss (docs/method.md §8): log p_S = log p_G + log L^_D, normalised.

  Args: min_estimate: L^_D is clamped from below here before its log.
  """

  name = "hp_loss"
  learns = True

  def __init__(self, min_estimate=1e-6):
    self.min_estimate = min_estimate

  @classmethod
  def from_config(cls, config):
    return cls(config.hp_loss_min_estimate)

  def estimated_disc_loss(self, scores, original_ids):
    """L^_D(v) for every candidate v, [batch, P, vocab] float32."""
    u = tf.stop_gradient(tf.cast(scores, tf.float32))
    is_original = tf.one_hot(original_ids, tf.shape(u)[-1], on_value=True,
                             off_value=False, dtype=tf.bool)
    # softplus is the costliest op over [batch, P, vocab]: take it once
    # there, and softplus(-u) only at x_t ([batch, P]).
    at_original = hp_loss_estimate(tf.gather(u, original_ids, batch_dims=2),
                                   True)
    return tf.where(is_original, at_original[..., tf.newaxis],
                    tf.nn.softplus(u))

  def log_probs(self, log_pg, scores, original_ids):
    estimate = self.estimated_disc_loss(scores, original_ids)
    return tf.nn.log_softmax(
        log_pg + tf.math.log(tf.maximum(estimate, self.min_estimate)),
        axis=-1)

  def head_terms(self, scores, sampled, original_ids, disc_logits_at_masked,
                 generator_log_prob):
    at_sampled = tf.gather(scores, sampled, batch_dims=2)
    return dict(
        sampling_loss_per_pos=losses.hp_loss_sampling_loss(
            at_sampled, disc_logits_at_masked),
        est_disc_loss=tf.stop_gradient(hp_loss_estimate(
            at_sampled, tf.equal(sampled, original_ids))))

  def head_loss(self, out, weights):
    return out["sampling_loss_per_pos"]


class HPDistSampler(Sampler):
  """HP-Dist (docs/method.md §9): p_S = softmax(u), trained towards the
  importance-weighted p* with self-normalised, clipped weights.

  Args: weight_clip: clip of the self-normalised importance weights.
  """

  name = "hp_dist"
  learns = True
  normalises_over_batch = True

  def __init__(self, weight_clip=10.0):
    self.weight_clip = weight_clip

  @classmethod
  def from_config(cls, config):
    return cls(config.hp_dist_weight_clip)

  def log_probs(self, log_pg, scores, original_ids):
    return tf.nn.log_softmax(tf.stop_gradient(tf.cast(scores, tf.float32)),
                             axis=-1)

  def head_terms(self, scores, sampled, original_ids, disc_logits_at_masked,
                 generator_log_prob):
    # log p_S(x'_t) = u_t(x'_t) - logsumexp(u_t): cheaper forward and
    # backward than a log_softmax over the vocabulary.
    log_ps = (tf.gather(scores, sampled, batch_dims=2) -
              tf.reduce_logsumexp(scores, axis=-1))
    # p_S / p_G is proportional to the estimated L_D (docs/method.md §13.2).
    return dict(sampling_head_log_prob=log_ps,
                est_disc_loss=tf.stop_gradient(
                    tf.exp(log_ps - generator_log_prob)))

  def head_loss(self, out, weights):
    importance = losses.hp_dist_weights(
        out["generator_log_prob"], out["sample_log_prob"],
        out["actual_disc_loss"], weights, self.weight_clip)
    return losses.hp_dist_sampling_loss(out["sampling_head_log_prob"],
                                        importance)


REGISTRY = {cls.name: cls for cls in (GeneratorSampler, UniformSampler,
                                      HPLossSampler, HPDistSampler)}
NAMES = tuple(REGISTRY)


def sampler_class(name):
  """The class registered under `name`; ValueError naming the choices."""
  if name not in REGISTRY:
    raise ValueError("unknown sampler %r; one of %s" % (name,
                                                        ", ".join(NAMES)))
  return REGISTRY[name]


def from_config(name, config):
  """The sampler `name` with its hyperparameters from `config`."""
  return sampler_class(name).from_config(config)
