"""Replacement samplers as objects, and the registry of their names.

A sampler (config `sampling`) says how the replacement x'_t is drawn and,
when it learns, how its sampling head trains (docs/method.md §4-§9):

  log_probs(log_pg, scores, original_ids)
      the draw distribution, [batch, P, vocab] float32 log-probabilities;
      up to a constant per position when `draws_normalised` is false.
  sample_log_prob(terms)
      log p(x'_t) of the draw at the drawn token, [batch, P], read from
      `head_terms`' dict `terms` (only when `draws_normalised` is false).
  head_terms(scores, scores_at, sampled, original_ids,
             disc_logits_at_masked, generator_log_prob)
      per-position [batch, P] tensors of the forward pass: what the head's
      loss needs, and `est_log_disc_loss`, the log of the sampler's
      estimate of D's loss at the placed token, up to a constant per
      position (docs/method.md §13.2). Empty unless it learns.
      `scores` are the head's u_t [batch, P, vocab]; `scores_at(ids)` gives
      u_t at ids [batch, P] with a gradient of one table row per position
      (the cheap path when the loss reads u_t at one token only).
  head_loss(out, weights)
      the head's loss per position [batch, P] from the forward pass's dict
      `out`, or None. May take batch-wide (cross-replica) sums when
      `normalises_over_batch`: the model's `objective`, not its `forward`,
      calls it.

Class attributes: `name`, `drawn_from` (the distribution it draws from,
as the evaluation's keys name it: "pG", "uniform" or "pS"), `learns` (has
a sampling head),
`normalises_over_batch` (its head loss self-normalises weights over the
global batch), `draws_normalised` (`log_probs` is normalised; else the
Gumbel-max draw, which needs no normaliser, skips a log-softmax over the
vocabulary, and `sample_log_prob` gives the drawn token's log-prob).
Everything here runs in float32; the draw distributions are stop-gradient.
"""

import tensorflow as tf

from model import losses
from model import sampling


class Sampler(object):
  """Base: a sampler without a head. Subclasses set `name` and `log_probs`."""

  name = None
  drawn_from = None
  learns = False
  normalises_over_batch = False
  draws_normalised = True

  @classmethod
  def from_config(cls, unused_config):
    return cls()

  def log_probs(self, log_pg, scores, original_ids):
    raise NotImplementedError

  def head_terms(self, scores, scores_at, sampled, original_ids,
                 disc_logits_at_masked, generator_log_prob):
    del scores, scores_at, sampled, original_ids, disc_logits_at_masked
    del generator_log_prob
    return {}

  def head_loss(self, out, weights):
    del out, weights
    return None

  def sample_log_prob(self, terms):
    del terms
    raise NotImplementedError("%s draws normalised log-probs." % self.name)


class GeneratorSampler(Sampler):
  """ELECTRA: x'_t ~ p_G = softmax(mlm_logits / temperature)."""

  name = "mlm"
  drawn_from = "pG"

  def log_probs(self, log_pg, scores, original_ids):
    return log_pg


class UniformSampler(Sampler):
  """Every vocabulary entry equally likely."""

  name = "uniform"
  drawn_from = "uniform"

  def log_probs(self, log_pg, scores, original_ids):
    return tf.fill(tf.shape(log_pg), -tf.math.log(
        tf.cast(tf.shape(log_pg)[-1], tf.float32)))


def hp_loss_estimate(scores, is_original):
  """HP-Loss's estimate L^_D of D's loss for placing a token (§8).

  q = sigmoid(u) is the predicted probability that D calls the token
  original: L^_D = -log(1 - q) = softplus(u) for a replacement (D should
  say "replaced") and -log q = softplus(-u) at x_t. Any matching shapes.
  """
  return tf.nn.softplus(_signed_scores(scores, is_original))


def hp_loss_log_estimate(scores, is_original):
  """log L^_D of `hp_loss_estimate`, finite for any finite u."""
  return losses.log_softplus(_signed_scores(scores, is_original))


def _signed_scores(scores, is_original):
  """u where D should say "replaced", -u at x_t: L^_D is their softplus."""
  return tf.where(is_original, -scores, scores)


class HPLossSampler(Sampler):
  """HP-Loss (docs/method.md §8): log p_S = log p_G + log L^_D, normalised.

  Args: min_estimate: L^_D is clamped from below here before its log.
  """

  name = "hp_loss"
  drawn_from = "pS"
  learns = True

  def __init__(self, min_estimate=1e-6):
    self.min_estimate = min_estimate

  @classmethod
  def from_config(cls, config):
    return cls(config.hp_loss_min_estimate)

  def estimated_disc_loss(self, scores, original_ids):
    """L^_D(v) for every candidate v, [batch, P, vocab] float32."""
    u = tf.stop_gradient(tf.cast(scores, tf.float32))
    # Passes over [batch, P, vocab] dominate: softplus(u) once there, then
    # softplus(-u) written at x_t only ([batch, P]), with no one-hot mask.
    at_original = hp_loss_estimate(tf.gather(u, original_ids, batch_dims=2),
                                   True)
    return sampling.write_at_vocab(tf.nn.softplus(u), original_ids,
                                   at_original)

  def log_probs(self, log_pg, scores, original_ids):
    estimate = self.estimated_disc_loss(scores, original_ids)
    return tf.nn.log_softmax(
        log_pg + tf.math.log(tf.maximum(estimate, self.min_estimate)),
        axis=-1)

  def head_terms(self, scores, scores_at, sampled, original_ids,
                 disc_logits_at_masked, generator_log_prob):
    # Its loss reads u_t at x'_t only: the one-row gradient path.
    at_sampled = scores_at(sampled)
    return dict(
        sampling_loss_per_pos=losses.hp_loss_sampling_loss(
            at_sampled, disc_logits_at_masked),
        est_log_disc_loss=tf.stop_gradient(hp_loss_log_estimate(
            at_sampled, tf.equal(sampled, original_ids))))

  def head_loss(self, out, weights):
    return out["sampling_loss_per_pos"]


class HPDistSampler(Sampler):
  """HP-Dist (docs/method.md §9): p_S = softmax(u), trained towards the
  importance-weighted p* with self-normalised, clipped weights.

  Args: weight_clip: clip of the self-normalised importance weights.
  """

  name = "hp_dist"
  drawn_from = "pS"
  learns = True
  normalises_over_batch = True
  draws_normalised = False

  def __init__(self, weight_clip=10.0):
    self.weight_clip = weight_clip

  @classmethod
  def from_config(cls, config):
    return cls(config.hp_dist_weight_clip)

  def log_probs(self, log_pg, scores, original_ids):
    # u_t itself: log p_S up to logsumexp(u_t), which `head_terms` takes.
    return tf.stop_gradient(tf.cast(scores, tf.float32))

  def sample_log_prob(self, terms):
    return tf.stop_gradient(terms["sampling_head_log_prob"])

  def head_terms(self, scores, scores_at, sampled, original_ids,
                 disc_logits_at_masked, generator_log_prob):
    # log p_S(x'_t) through the fused cross-entropy kernel: its gradient
    # softmax(u_t) - one_hot is taken in the forward pass.
    log_ps = losses.log_prob_at(scores, sampled)
    # p_S / p_G = L^_D / Z^_t, proportional to the estimated L_D within a
    # position (docs/method.md §13.2). Kept as a log: the ratio itself
    # overflows float32 beyond a log-ratio of about 88.
    return dict(sampling_head_log_prob=log_ps,
                est_log_disc_loss=tf.stop_gradient(
                    log_ps - generator_log_prob))

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
