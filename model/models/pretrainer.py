"""The ELECTRA pre-trainer with learned replacement sampling.

One forward pass (docs/method.md §1, §3-§11), read top-down in `forward`
in the order of google-research/electra's pre-training model:

  mask (done by the input pipeline) -> generator (MLM head, + sampling
    head in HP modes) -> the draw: the sampler's `Draw` over the
    vocabulary (float32, stop-gradient), inverse-CDF draw per masked position
    (per-example stateless seeds) -> fake data x~ = x with x'_t scattered
    in -> discriminator -> z_t per token -> what the analyses and the
    losses read at the masked positions, the sampler's `DrawnTerms`
    among them;
  then `objective`: L = gen_weight L_MLM(focal) + sampling_weight L_S +
    disc_weight L_D, with D read by L_S only through tf.stop_gradient.

The sampler and the pre-trainer exchange the named tuples of
model/samplers.py. Losses are replica shares of global means
(model/losses.py), so under a `tf.distribute` strategy the shares sum to
the loss of the global batch. The networks and the sampler are built by
`model/builders.py`.
"""

import functools
from typing import NamedTuple

import tensorflow as tf
import tf_keras

from model import losses
from model import samplers
from model import sampling
from model import temperature_schedule as temperature_schedule_lib

# The key of the sampler's `HeadLossInputs` in `forward`'s dict, which
# `objective` takes out.
_HEAD_LOSS_INPUTS = "head_loss_inputs"


class GeneratorOutputs(NamedTuple):
  """G at the masked positions, [batch, P] each (float32; ids int32).

  mlm_loss_per_pos: -log p_G(x_t), the plain cross-entropy whatever the
    focal gamma, so that runs compare.
  mlm_focal_loss_per_pos: the focal loss `mlm_loss` averages.
  masked_lm_preds: argmax_v p_G(v).
  gen_max_prob: max_v p_G(v) at the temperature.
  """
  mlm_loss_per_pos: tf.Tensor
  mlm_focal_loss_per_pos: tf.Tensor
  masked_lm_preds: tf.Tensor
  gen_max_prob: tf.Tensor


class DiscriminatorOutputs(NamedTuple):
  """D on the fake data, [batch, seq_len] each: `disc_logits` z_t,
  `disc_probs` sigmoid(z_t), `disc_labels` (int32, 1 = replaced) and
  `disc_loss_per_token` l_t."""
  disc_logits: tf.Tensor
  disc_probs: tf.Tensor
  disc_labels: tf.Tensor
  disc_loss_per_token: tf.Tensor


class DrawOutputs(NamedTuple):
  """The draw at the masked positions, [batch, P] each (float32; ids
  int32), for the losses and the analyses (docs/method.md §13).

  sampled_tokens: x'_t.
  generator_log_prob: log p_G(x'_t).
  sample_log_prob, est_log_disc_loss: the sampler's `DrawnTerms`.
  actual_disc_loss: D's loss L_D(x'_t); actual_log_disc_loss: its log.
  masked_position_mask: [batch, seq_len] int32, 1 at real masked positions.
  """
  sampled_tokens: tf.Tensor
  generator_log_prob: tf.Tensor
  sample_log_prob: tf.Tensor
  est_log_disc_loss: tf.Tensor
  actual_disc_loss: tf.Tensor
  actual_log_disc_loss: tf.Tensor
  masked_position_mask: tf.Tensor


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class ElectraPretrainer(tf_keras.Model):
  """Generator + sampler + discriminator with the combined objective.

  Args:
    generator: a `MaskedLMGenerator`, or a `HardnessPredictionGenerator`
      when the sampler learns (model/models/generator.py).
    discriminator: a `Discriminator` (model/models/discriminator.py).
    sampler: a `samplers.Sampler` (model/samplers.py): the draw
      distribution and, when it learns, the sampling head's loss.
    temperature: of p_G = softmax(mlm_logits / temperature) at step 0.
    temperature_final, temperature_decay_steps, temperature_schedule: the
      replacement curriculum (`temperature_schedule.TemperatureSchedule`):
      the temperature moves from `temperature` to `temperature_final`
      (None: stays) over `temperature_decay_steps`, "linear" or "cosine".
    focal_gamma: gamma of the focal MLM loss; 0 is the cross-entropy.
    electra_objective: False trains the generator as a plain MLM (no draw,
      no discriminator).
    disallow_correct: never draw the original token.
    sampling_warmup_steps: draw from p_G for this many steps while the
      sampling head already trains (`samplers.WarmupSampler`).
    disc_importance_weighting, disc_importance_weight_clip: weight D's loss
      at masked positions by the self-normalised p_G/p_S, clipped.
    gen_weight, disc_weight, sampling_weight: the weights of L_MLM, L_D, L_S.

  `call(features, training, step=0, sampler=None, loss_denominators=None,
  temperature=None)` is `objective(features, forward(features, training,
  step, sampler, temperature), loss_denominators)`. `features`
  (pretrain/pretrain_data.py): `input_ids`,
  `input_mask`, `segment_ids`, `masked_input_ids` [batch, seq_len] int32;
  `masked_lm_positions`, `masked_lm_ids` [batch, P] int32;
  `masked_lm_weights` [batch, P] float32; `sample_seed` [batch, 2] int32.
  `step` is the global step (the warm-up reads it); `sampler`, when given, draws
  instead of the model's sampler and its warm-up (evaluation: `self.sampler`,
  or `GeneratorSampler()` for p_G), the model's sampler's head still
  scoring the draw. `temperature`, when given, replaces the schedule's
  value at `step` (evaluation on temperature-1 draws). Returns a dict of
  the fields of `GeneratorOutputs`,
  `DrawOutputs` and `DiscriminatorOutputs`, and the losses `total_loss`,
  `mlm_loss`, `disc_loss`, `sampling_loss` (float32 scalars, replica shares
  of global means); a plain MLM gives `GeneratorOutputs`, `total_loss` and
  `mlm_loss` only.
  """

  def __init__(self, generator, discriminator, sampler=None, temperature=1.0,
               temperature_final=None, temperature_decay_steps=0,
               temperature_schedule="linear", focal_gamma=0.0,
               electra_objective=True,
               disallow_correct=False, sampling_warmup_steps=0,
               disc_importance_weighting=False,
               disc_importance_weight_clip=10.0, gen_weight=1.0,
               disc_weight=50.0, sampling_weight=1.0, **kwargs):
    super(ElectraPretrainer, self).__init__(**kwargs)
    # D before G: the order of attributes fixes the checkpoint path of the
    # shared embeddings (under D, as fine-tuning reads them), the variable
    # order of the optimizer and the numbering of the dropout generators.
    self.discriminator = discriminator
    self.sampler = sampler if sampler is not None else (
        samplers.GeneratorSampler())
    # What training draws from: the sampler after its warm-up.
    self._training_sampler = samplers.with_warmup(self.sampler,
                                                  sampling_warmup_steps)
    self.generator = generator
    self.temperature_at = temperature_schedule_lib.TemperatureSchedule(
        temperature, temperature_final, temperature_decay_steps,
        temperature_schedule)
    # The settings (`get_config`'s values), read by the methods below.
    self._config = dict(
        temperature=temperature, temperature_final=temperature_final,
        temperature_decay_steps=temperature_decay_steps,
        temperature_schedule=temperature_schedule, focal_gamma=focal_gamma,
        electra_objective=electra_objective,
        disallow_correct=disallow_correct,
        sampling_warmup_steps=sampling_warmup_steps,
        disc_importance_weighting=disc_importance_weighting,
        disc_importance_weight_clip=disc_importance_weight_clip,
        gen_weight=gen_weight, disc_weight=disc_weight,
        sampling_weight=sampling_weight)

  @property
  def needs_cross_replica_sums(self):
    """Whether `objective` all-reduces values `forward` computes (the
    self-normalised importance weights), beyond `loss_denominators`: the
    train step then XLA-compiles `forward` alone (training/train_step.py)."""
    return (self._config["electra_objective"] and
            (self.sampler.normalises_over_batch or
             self._config["disc_importance_weighting"]))

  @property
  def learns_sampler(self):
    """Whether the model's sampler learns (`samplers.learns`)."""
    return samplers.learns(self.sampler)

  def call(self, features, training=None, step=0, sampler=None,
           loss_denominators=None, temperature=None):
    """See the class docstring. `loss_denominators`:
    `losses.loss_denominators(features)` taken by the caller (outside an
    XLA-compiled pass), else all-reduced here; a keyword argument, not a
    feature: Keras would cast features to float16 under mixed precision,
    and token counts need float32."""
    if loss_denominators is None:
      loss_denominators = losses.loss_denominators(features)
    return self.objective(
        features,
        self.forward(features, training, step, sampler, temperature),
        loss_denominators)

  def forward(self, features, training=None, step=0, sampler=None,
              temperature=None):
    """G, the draw and D: per-position and per-token tensors, no reduction.

    Holds no cross-replica op, so it can be XLA-compiled on its own under
    any strategy (training/train_step.py). Arguments as `call`'s. Returns the
    dict of `call` without the losses, and the sampler's
    `HeadLossInputs`, which `objective` reduces.
    """
    # Mask: done by the input pipeline (masked_input_ids, masked_lm_*).
    positions = features["masked_lm_positions"]
    weights = tf.cast(features["masked_lm_weights"], tf.float32)

    # Generator on the masked input.
    gen_out = self.generator(features, training=training)
    if temperature is None:
      temperature = self.temperature_at(step)
    inputs = self._sampler_inputs(gen_out, features["masked_lm_ids"], step,
                                  temperature)
    out = self._generator_outputs(gen_out["mlm_logits"], inputs)._asdict()
    if not self._config["electra_objective"]:
      return out

    # The draw: x'_t per masked position.
    draw = self._draw(inputs, sampler)
    sampled, log_mass = sampling.categorical_sample_and_log_mass(
        draw.log_probs, features["sample_seed"])
    draw = draw.drawn(log_mass)

    # Fake data: x with x'_t written at the real masked positions.
    fake_ids = sampling.scatter_at_positions(features["input_ids"], positions,
                                             sampled, weights)

    # Discriminator: replaced-token detection on the fake data.
    disc = self._discriminator_outputs(features, fake_ids, training)

    # At the masked positions: D's verdict on x'_t and the sampler's terms
    # (D enters the head's loss only through stop-gradient).
    drawn, head_loss_inputs = self._at_masked_positions(
        inputs, draw, sampled, disc, features)
    out.update(disc._asdict(), **drawn._asdict())
    out[_HEAD_LOSS_INPUTS] = head_loss_inputs
    return out

  def _sampler_inputs(self, gen_out, original_ids, step, temperature):
    """The `samplers.SamplerInputs` of the generator's outputs `gen_out`,
    p_G at `temperature` (a Python float or a scalar tensor)."""
    scores_at = None
    if "sampling_scores" in gen_out:
      scores_at = functools.partial(self.generator.sampling_scores_at,
                                    gen_out)
    return samplers.SamplerInputs(
        log_pg=sampling.generator_log_probs(gen_out["mlm_logits"],
                                            temperature),
        original_ids=original_ids, scores=gen_out.get("sampling_scores"),
        scores_at=scores_at, step=step)

  def _generator_outputs(self, mlm_logits, inputs):
    """`GeneratorOutputs` of the MLM logits [batch, P, vocab]."""
    true_log_prob = losses.true_token_log_prob(mlm_logits,
                                               inputs.original_ids)
    return GeneratorOutputs(
        mlm_loss_per_pos=-true_log_prob,
        mlm_focal_loss_per_pos=losses.focal_loss_from_log_prob(
            true_log_prob, self._config["focal_gamma"]),
        masked_lm_preds=tf.argmax(mlm_logits, -1, output_type=tf.int32),
        gen_max_prob=tf.exp(tf.reduce_max(inputs.log_pg, axis=-1)))

  def _draw(self, inputs, sampler):
    """The `samplers.Draw`: from `sampler` when given, else from the
    model's sampler after its warm-up. Only the model's own sampler gives
    the log-prob of its unnormalised draw at x'_t (`DrawnTerms`), so
    another's is normalised."""
    drawer = self._training_sampler if sampler is None else sampler
    draw = drawer.draw(inputs, self._config["disallow_correct"])
    return draw if drawer is self.sampler else draw.normalise()

  def _discriminator_outputs(self, features, fake_ids, training):
    """`DiscriminatorOutputs` of the fake input ids [batch, seq_len]."""
    input_mask = features["input_mask"]
    disc_labels = tf.cast(tf.not_equal(fake_ids, features["input_ids"]),
                          tf.int32) * tf.cast(input_mask, tf.int32)
    disc_logits = self.discriminator(
        dict(input_ids=fake_ids, input_mask=input_mask,
             segment_ids=features["segment_ids"]), training=training)
    return DiscriminatorOutputs(
        disc_logits=disc_logits, disc_probs=tf.sigmoid(disc_logits),
        disc_labels=disc_labels,
        disc_loss_per_token=losses.discriminator_loss(disc_logits,
                                                      disc_labels))

  def _at_masked_positions(self, inputs, draw, sampled, disc, features):
    """(`DrawOutputs`, `samplers.HeadLossInputs`) of the draw `sampled`
    [batch, P] and D's `DiscriminatorOutputs` on it."""
    positions = features["masked_lm_positions"]
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    at_masked = functools.partial(tf.gather, indices=positions, batch_dims=1)
    disc_logits = at_masked(disc.disc_logits)
    terms = self.sampler.drawn_terms(inputs, draw, sampled, disc_logits)
    head_loss_inputs = samplers.HeadLossInputs(
        head_term=terms.head_term, sample_log_prob=terms.sample_log_prob,
        generator_log_prob=sampling.gather_vocab(inputs.log_pg, sampled),
        disc_loss=at_masked(disc.disc_loss_per_token), weights=weights)
    drawn = DrawOutputs(
        sampled_tokens=sampled,
        generator_log_prob=head_loss_inputs.generator_log_prob,
        sample_log_prob=terms.sample_log_prob,
        est_log_disc_loss=terms.est_log_disc_loss,
        actual_disc_loss=head_loss_inputs.disc_loss,
        actual_log_disc_loss=losses.log_discriminator_loss(
            disc_logits, at_masked(disc.disc_labels)),
        masked_position_mask=sampling.scatter_at_positions(
            tf.zeros(tf.shape(features["input_mask"]), tf.int32), positions,
            tf.ones_like(positions), weights))
    return drawn, head_loss_inputs

  def objective(self, features, forward_out, loss_denominators):
    """The losses of `forward`'s tensors: `call`'s dict.

    The replica shares of global means divide by `loss_denominators`
    (`losses.loss_denominators`); the self-normalised importance weights
    (HP-Dist, `disc_importance_weighting`) all-reduce here, outside any
    compiled `forward`.
    """
    hp = self._config
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    out = dict(forward_out)
    head_loss_inputs = out.pop(_HEAD_LOSS_INPUTS, None)
    out["mlm_loss"] = losses.replica_mean(out["mlm_focal_loss_per_pos"],
                                          weights, loss_denominators["masked"])
    if not hp["electra_objective"]:
      out["total_loss"] = hp["gen_weight"] * out["mlm_loss"]
      return out

    out["disc_loss"] = self._disc_loss(features, out["disc_loss_per_token"],
                                       head_loss_inputs, loss_denominators)
    per_pos = self.sampler.head_loss(head_loss_inputs)
    out["sampling_loss"] = (
        tf.constant(0.0) if per_pos is None else
        losses.replica_mean(per_pos, weights, loss_denominators["masked"]))
    out["total_loss"] = (hp["gen_weight"] * out["mlm_loss"] +
                         hp["disc_weight"] * out["disc_loss"] +
                         hp["sampling_weight"] * out["sampling_loss"])
    return out

  def _disc_loss(self, features, disc_loss_per_token, head_loss_inputs,
                 loss_denominators):
    """L_D: the token-weighted mean of the per-token losses [batch,
    seq_len], with `disc_importance_weighting` the masked positions
    weighted by p_G/p_sample (self-normalised over the global batch)."""
    token_weights = tf.cast(features["input_mask"], tf.float32)
    token_denominator = loss_denominators["tokens"]
    if self._config["disc_importance_weighting"]:
      weights = head_loss_inputs.weights
      ratio = losses.disc_importance_weights(
          head_loss_inputs.generator_log_prob,
          head_loss_inputs.sample_log_prob, weights,
          self._config["disc_importance_weight_clip"])
      token_weights = sampling.scatter_at_positions(
          token_weights, features["masked_lm_positions"], ratio, weights)
      token_denominator = None  # Depends on the weights: all-reduced here.
    return losses.replica_mean(disc_loss_per_token, token_weights,
                               token_denominator)

  def get_config(self):
    """Constructor arguments; networks and sampler as the objects
    themselves (tf-models-official's convention), so `from_config` keeps a
    generator that shares D's encoder sharing it."""
    return dict(self._config, generator=self.generator,
                discriminator=self.discriminator, sampler=self.sampler,
                name=self.name)

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
