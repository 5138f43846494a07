"""Replacement samplers as objects, the types they exchange with the
pre-trainer, and the registry of their names.

A sampler (config `sampling`) says how the replacement x'_t is drawn and,
when it learns, how its sampling head trains (docs/method.md §4-§9). The
pre-trainer (model/models/pretrainer.py) hands it named tuples, in order:

  draw(SamplerInputs, disallow_correct) -> Draw
      the distribution to draw x'_t from, [batch, P, vocab].
  drawn_terms(SamplerInputs, Draw, sampled, disc_logits) -> DrawnTerms
      its terms at the drawn tokens x'_t [batch, P], once D has scored
      them: log p_sample(x'_t), its estimate of D's loss there, and its
      head's per-position term (in the pre-trainer's `forward`).
  head_loss(HeadLossInputs) -> [batch, P] or None
      the head's loss per position. May take batch-wide (cross-replica)
      sums when `normalises_over_batch`: the pre-trainer's `objective`,
      not its `forward`, calls it.

Class attributes: `name`, `drawn_from` (the distribution it draws from,
as the evaluation's keys name it: "pG", "uniform" or "pS"), `learns` (has
a sampling head), `normalises_over_batch` (its head loss self-normalises
weights over the global batch), `draws_normalised` (`log_probs` is
normalised; else the draw, which needs no normaliser, skips a
log-softmax over the vocabulary, and the drawn token's log-prob comes from
the draw's own log total mass, `Draw.log_prob_at`, or from
`drawn_terms`). `WarmupSampler` wraps a sampler: p_G's draws for the
first steps, the wrapped sampler's after. Everything here runs in
float32; the draw distributions are stop-gradient.
"""

from typing import Callable, NamedTuple, Optional

import tensorflow as tf

from model import losses
from model import sampling


class SamplerInputs(NamedTuple):
  """What a sampler reads of the generator, at the masked positions.

  log_pg: log p_G at the temperature, [batch, P, vocab] float32,
    stop-gradient.
  original_ids: the original tokens x_t, [batch, P] int32.
  scores: the sampling head's u_t, [batch, P, vocab] float32; None
    without a sampling head.
  scores_at: ids [batch, P] -> u_t at ids, [batch, P] float32, with a
    gradient of one table row per position (the cheap path when a loss
    reads u_t at one token only); None without a sampling head.
  step: the global step, a scalar (the warm-up reads it).
  """
  log_pg: tf.Tensor
  original_ids: tf.Tensor
  scores: Optional[tf.Tensor] = None
  scores_at: Optional[Callable[[tf.Tensor], tf.Tensor]] = None
  step: object = 0


class Draw(NamedTuple):
  """What a sampler returns for the draw.

  log_probs: [batch, P, vocab] float32, stop-gradient: log p_sample, or
    log p_sample up to a constant per position when not `normalised`
    (the draw does not need the normaliser).
  normalised: a Python bool.
  log_normaliser: logsumexp of `log_probs` over the vocabulary, [batch, P]
    float32, which the draw itself computes (`drawn`); None before it.
  """
  log_probs: tf.Tensor
  normalised: bool
  log_normaliser: Optional[tf.Tensor] = None

  def normalise(self):
    """This draw with normalised log-probs (one log-softmax if needed)."""
    if self.normalised:
      return self
    return Draw(tf.nn.log_softmax(self.log_probs, axis=-1), True)

  def drawn(self, log_mass):
    """This draw once made: `log_mass` [batch, P] is the log total mass
    `sampling.categorical_sample_and_log_mass` found, the normaliser of an
    unnormalised draw."""
    return self if self.normalised else self._replace(log_normaliser=log_mass)

  def log_prob_at(self, ids):
    """The normalised log p_sample at ids [batch, P]: [batch, P] float32.
    Raises ValueError for an unnormalised draw not yet `drawn`."""
    at_ids = sampling.gather_vocab(self.log_probs, ids)
    if self.normalised:
      return at_ids
    if self.log_normaliser is None:
      raise ValueError("the log-prob of an unnormalised draw needs its "
                       "normaliser: call drawn() with the draw's log mass")
    return at_ids - self.log_normaliser


class DrawnTerms(NamedTuple):
  """A sampler's terms at the drawn tokens x'_t, [batch, P] float32 each.

  sample_log_prob: log p_sample(x'_t), the log-prob of the distribution
    actually drawn from (stop-gradient).
  est_log_disc_loss: the log of the sampler's estimate of D's loss at
    x'_t, up to a constant per position (docs/method.md §13.2);
    stop-gradient, 0 without a sampling head.
  head_term: the head's differentiable term per position: its whole
    loss when that needs no batch-wide sum (HP-Loss's BCE with D's
    verdict, read through stop-gradient), else what the loss reweights
    (HP-Dist's log p_S(x'_t)); None without a sampling head.
  """
  sample_log_prob: tf.Tensor
  est_log_disc_loss: tf.Tensor
  head_term: Optional[tf.Tensor] = None


class HeadLossInputs(NamedTuple):
  """What a sampling head's loss needs, [batch, P] float32 each.

  head_term, sample_log_prob: the sampler's `DrawnTerms`.
  generator_log_prob: log p_G(x'_t).
  disc_loss: D's loss L_D(x'_t) (HP-Dist's importance weights read it
    only through stop-gradient).
  weights: `masked_lm_weights`, 1 for a real prediction, 0 for padding.
  """
  head_term: Optional[tf.Tensor]
  sample_log_prob: tf.Tensor
  generator_log_prob: tf.Tensor
  disc_loss: tf.Tensor
  weights: tf.Tensor


class Sampler(object):
  """Base: a sampler without a head. Subclasses set `name` and `log_probs`."""

  name = None
  drawn_from = None
  learns = False
  normalises_over_batch = False
  draws_normalised = True
  # Whether the head's loss differentiates u over the whole vocabulary
  # (HP-Dist's log-softmax) or at the drawn token only (HP-Loss): the
  # vocabulary projection of the sampling head then has a backward pass.
  scores_backward_over_vocab = False

  @classmethod
  def from_objective(cls, unused_objective):
    """The sampler with the hyperparameters of `objective` (a
    configure_specs.ObjectiveSpec); this one has none."""
    return cls()

  def log_probs(self, log_pg, scores, original_ids):
    """The draw distribution, [batch, P, vocab] float32 log-probs; up to a
    constant per position when `draws_normalised` is false."""
    raise NotImplementedError

  def draw(self, inputs, disallow_correct=False):
    """The `Draw` of `SamplerInputs`; never x_t with `disallow_correct`
    (the original's log-prob -1e9, renormalised)."""
    log_p = self.log_probs(inputs.log_pg, inputs.scores, inputs.original_ids)
    if disallow_correct:
      return Draw(sampling.forbid_original(log_p, inputs.original_ids), True)
    return Draw(log_p, self.draws_normalised)

  def drawn_terms(self, inputs, draw, sampled, disc_logits):
    """`DrawnTerms` at `sampled` [batch, P] int32, drawn from `draw`;
    `disc_logits` [batch, P] are D's z_t at the masked positions."""
    del inputs, disc_logits
    sample_log_prob = draw.log_prob_at(sampled)
    return DrawnTerms(sample_log_prob, tf.zeros_like(sample_log_prob))

  def head_loss(self, inputs):
    """The head's loss per position [batch, P] from `HeadLossInputs`, or
    None without a head."""
    del inputs
    return None


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
  """HP-Loss (docs/method.md §8): log p_S = log p_G + log L^_D, normalised
  by the draw (`draws_normalised` false: no log-softmax over the
  vocabulary).

  Args: min_estimate: L^_D is clamped from below here before its log.
  """

  name = "hp_loss"
  drawn_from = "pS"
  learns = True
  draws_normalised = False

  def __init__(self, min_estimate=1e-6):
    self.min_estimate = min_estimate

  @classmethod
  def from_objective(cls, objective):
    return cls(objective.hp_loss_min_estimate)

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
    return log_pg + tf.math.log(tf.maximum(estimate, self.min_estimate))

  def drawn_terms(self, inputs, draw, sampled, disc_logits):
    # Its loss reads u_t at x'_t only: the one-row gradient path.
    at_sampled = inputs.scores_at(sampled)
    return DrawnTerms(
        sample_log_prob=draw.log_prob_at(sampled),
        est_log_disc_loss=tf.stop_gradient(hp_loss_log_estimate(
            at_sampled, tf.equal(sampled, inputs.original_ids))),
        head_term=losses.hp_loss_sampling_loss(at_sampled, disc_logits))

  def head_loss(self, inputs):
    return inputs.head_term


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
  scores_backward_over_vocab = True

  def __init__(self, weight_clip=10.0):
    self.weight_clip = weight_clip

  @classmethod
  def from_objective(cls, objective):
    return cls(objective.hp_dist_weight_clip)

  def log_probs(self, log_pg, scores, original_ids):
    # u_t itself: log p_S up to logsumexp(u_t), which `drawn_terms` takes.
    return tf.stop_gradient(tf.cast(scores, tf.float32))

  def drawn_terms(self, inputs, draw, sampled, disc_logits):
    del disc_logits  # Its loss reads D's loss, in `head_loss`.
    # log p_S(x'_t) through the fused cross-entropy kernel: its gradient
    # softmax(u_t) - one_hot is taken in the forward pass.
    log_ps = losses.log_prob_at(inputs.scores, sampled)
    # p_S / p_G = L^_D / Z^_t, proportional to the estimated L_D within a
    # position (docs/method.md §13.2). Kept as a log: the ratio itself
    # overflows float32 beyond a log-ratio of about 88.
    est = log_ps - sampling.gather_vocab(inputs.log_pg, sampled)
    return DrawnTerms(
        sample_log_prob=(
            draw.log_prob_at(sampled) if draw.normalised
            else tf.stop_gradient(log_ps)),
        est_log_disc_loss=tf.stop_gradient(est), head_term=log_ps)

  def head_loss(self, inputs):
    importance = losses.hp_dist_weights(
        inputs.generator_log_prob, inputs.sample_log_prob, inputs.disc_loss,
        inputs.weights, self.weight_clip)
    return losses.hp_dist_sampling_loss(inputs.head_term, importance)


class WarmupSampler(Sampler):
  """`inner` after a warm-up: p_G's draws for the first `steps` global
  steps (`SamplerInputs.step`), `inner`'s after; `inner`'s head (and
  loss) throughout, so a learned head trains from step 0. Its draws are
  normalised: `sample_log_prob` is log p_G(x'_t) during the warm-up.

  Args: inner: a `Sampler`; steps: the warm-up's length (a Python int).
  """

  draws_normalised = True

  def __init__(self, inner, steps):
    self.inner = inner
    self.steps = steps
    for attribute in ("name", "drawn_from", "learns",
                      "normalises_over_batch"):
      setattr(self, attribute, getattr(inner, attribute))

  def draw(self, inputs, disallow_correct=False):
    after = self.inner.draw(inputs, disallow_correct).normalise()
    during = GeneratorSampler().draw(inputs, disallow_correct)
    in_warmup = tf.cast(inputs.step, tf.int64) < self.steps
    return Draw(tf.where(in_warmup, during.log_probs, after.log_probs), True)

  def drawn_terms(self, inputs, draw, sampled, disc_logits):
    return self.inner.drawn_terms(inputs, draw, sampled, disc_logits)

  def head_loss(self, inputs):
    return self.inner.head_loss(inputs)


def with_warmup(sampler, steps):
  """`sampler` drawing from p_G for its first `steps` steps: a
  `WarmupSampler`, or `sampler` itself when there is nothing to warm up
  (no steps, or it draws from p_G anyway)."""
  if not steps or isinstance(sampler, GeneratorSampler):
    return sampler
  return WarmupSampler(sampler, steps)


REGISTRY = {cls.name: cls for cls in (GeneratorSampler, UniformSampler,
                                      HPLossSampler, HPDistSampler)}
NAMES = tuple(REGISTRY)


def sampler_class(name):
  """The class registered under `name`; ValueError naming the choices."""
  if name not in REGISTRY:
    raise ValueError("unknown sampler %r; one of %s" % (name,
                                                        ", ".join(NAMES)))
  return REGISTRY[name]


def learns(sampler):
  """Whether `sampler` learns: it has a sampling head (HP-Loss, HP-Dist),
  so the generator gets a second vocabulary head, the objective a
  sampling loss and the evaluation the estimator's analyses. The one
  answer to "does this model learn a sampler" (the config, the builders,
  the pre-trainer, its evaluation and the FLOPs count ask it).

  Args:
    sampler: a `Sampler`, or a name of the registry (a config's
      `sampling`).
  """
  if isinstance(sampler, str):
    sampler = sampler_class(sampler)
  return sampler.learns


def from_objective(name, objective):
  """The sampler `name` with its hyperparameters from `objective` (a
  configure_specs.ObjectiveSpec: hp_loss_min_estimate,
  hp_dist_weight_clip)."""
  return sampler_class(name).from_objective(objective)
