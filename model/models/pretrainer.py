"""The ELECTRA pre-trainer with learned replacement sampling.

One forward pass (docs/method.md §1, §3-§11), read top-down in `forward`:

  mask (done by the input pipeline) -> generator (MLM head, + sampling head
    in HP modes) -> the sampler's log-probs over the vocabulary (float32,
    stop-gradient) -> Gumbel-max draw x'_t per masked position (per-example
    stateless seeds) -> fake data x~ = x with x'_t scattered in ->
    discriminator -> z_t per token -> the sampler's head terms;
  then `objective`: L = gen_weight L_MLM(focal) + sampling_weight L_S +
    disc_weight L_D, with D read by L_S only through tf.stop_gradient.

Losses are replica shares of global means (model/losses.py), so under a
`tf.distribute` strategy the shares sum to the loss of the global batch.
`call` also returns what the analyses of docs/method.md §13 need.
The networks and the sampler are built by `model/builders.py`.
"""

import functools

import tensorflow as tf
import tf_keras

from model import losses
from model import samplers
from model import sampling


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class ElectraPretrainer(tf_keras.Model):
  """Generator + sampler + discriminator with the combined objective.

  Args:
    generator: a `MaskedLMGenerator`, or a `HardnessPredictionGenerator`
      when the sampler learns (model/models/generator.py).
    discriminator: a `Discriminator` (model/models/discriminator.py).
    sampler: a `samplers.Sampler` (model/samplers.py): the draw
      distribution and, when it learns, the sampling head's loss.
    temperature: of p_G = softmax(mlm_logits / temperature).
    focal_gamma: gamma of the focal MLM loss; 0 is the cross-entropy.
    electra_objective: False trains the generator as a plain MLM (no draw,
      no discriminator).
    disallow_correct: never draw the original token.
    sampling_warmup_steps: draw from p_G for this many steps while the
      sampling head already trains.
    disc_importance_weighting, disc_importance_weight_clip: weight D's loss
      at masked positions by the self-normalised p_G/p_S, clipped.
    gen_weight, disc_weight, sampling_weight: the weights of L_MLM, L_D, L_S.

  `call(features, training, step=0, sampler=None, loss_denominators=None)`
  is `objective(features, forward(features, ...), loss_denominators)`:
  `forward` (G, the draw, D; per-position tensors) holds no cross-replica
  op and can be XLA-compiled alone; `objective` reduces them to the losses.
  Arguments of `call`:
    features: dict from pretrain/pretrain_data.py: `input_ids`, `input_mask`,
      `segment_ids`, `masked_input_ids` [batch, seq_len] int32;
      `masked_lm_positions`, `masked_lm_ids` [batch, P] int32;
      `masked_lm_weights` [batch, P] float32; `sample_seed` [batch, 2] int32.
    loss_denominators: `losses.loss_denominators(features)` taken by the
      caller (outside an XLA-compiled pass), else all-reduced here. A
      keyword argument, not a feature: Keras would cast features to float16
      under mixed precision, and token counts need float32.
    step: the global step (scalar); before `sampling_warmup_steps` the draw
      comes from p_G while the sampling head already trains.
    sampler: a `samplers.Sampler` for the draw, with no warm-up: the
      model's own `self.sampler` (evaluation, docs/method.md §13) or
      another (`GeneratorSampler()` draws from p_G on the same batch).
  Returns a dict of float32 tensors: `total_loss`, `mlm_loss` (the objective
    L_MLM, focal when focal_gamma > 0), `disc_loss`, `sampling_loss`
    (replica shares of global means); per position [batch, P]:
    `mlm_loss_per_pos` (the plain cross-entropy -log p_G(x_t), whatever the
    gamma, so that runs compare), `mlm_focal_loss_per_pos` (the focal loss
    `mlm_loss` averages), `masked_lm_preds`, `gen_max_prob`, `sampled_tokens`,
    `actual_disc_loss` L_D(x'_t), `sample_log_prob`, `generator_log_prob`,
    and for the analyses (docs/method.md §13.2) `actual_log_disc_loss`
    log L_D(x'_t) and `est_log_disc_loss`, the log of the sampler's
    estimate of it (0 unless the sampler learns);
    per token [batch, seq_len]: `disc_logits`, `disc_probs`, `disc_labels`,
    `disc_loss_per_token`, `masked_position_mask`. With `electra_objective`
    false (plain MLM) only `total_loss`, `mlm_loss`, `mlm_loss_per_pos`,
    `mlm_focal_loss_per_pos`, `masked_lm_preds` and `gen_max_prob`.
  """

  def __init__(self, generator, discriminator, sampler=None, temperature=1.0,
               focal_gamma=0.0, electra_objective=True,
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
    self.generator = generator
    # The settings (`get_config`'s values), read by the methods below.
    self._config = dict(
        temperature=temperature, focal_gamma=focal_gamma,
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
    train step then XLA-compiles `forward` alone (model/train_step.py)."""
    return (self._config["electra_objective"] and
            (self.sampler.normalises_over_batch or
             self._config["disc_importance_weighting"]))

  @property
  def learns_sampler(self):
    return self.sampler.learns

  def call(self, features, training=None, step=0, sampler=None,
           loss_denominators=None):
    if loss_denominators is None:
      loss_denominators = losses.loss_denominators(features)
    return self.objective(
        features, self.forward(features, training, step, sampler),
        loss_denominators)

  def forward(self, features, training=None, step=0, sampler=None):
    """G, the draw and D: per-position and per-token tensors, no reduction.

    Holds no cross-replica op, so it can be XLA-compiled on its own under
    any strategy (model/train_step.py). Arguments as `call`'s. Returns the
    per-position / per-token entries of `call`'s dict, plus what
    `objective` reduces: `sampling_loss_per_pos` (HP-Loss) or
    `sampling_head_log_prob` log p_S(x'_t) (HP-Dist), [batch, P].
    """
    positions = features["masked_lm_positions"]
    labels = features["masked_lm_ids"]
    weights = tf.cast(features["masked_lm_weights"], tf.float32)

    # Generator on the masked input.
    gen_out = self.generator(features, training=training)
    log_pg = sampling.generator_log_probs(gen_out["mlm_logits"],
                                          self._config["temperature"])
    out = self._generator_outputs(gen_out["mlm_logits"], log_pg, labels)
    if not self._config["electra_objective"]:
      return out

    # Fake data: x'_t drawn at the masked positions and scattered into x.
    log_p_draw, normalised = self._draw_distribution(log_pg, gen_out,
                                                     labels, step, sampler)
    sampled = sampling.gumbel_max_sample(log_p_draw, features["sample_seed"])
    generator_log_prob = sampling.gather_vocab(log_pg, sampled)
    fake_ids = sampling.scatter_at_positions(features["input_ids"], positions,
                                             sampled, weights)

    # Discriminator: replaced-token detection on the fake data.
    out.update(self._discriminator_outputs(features, fake_ids, training))
    disc_logits_at_masked = tf.gather(out["disc_logits"], positions,
                                      batch_dims=1)
    out.update(
        sampled_tokens=sampled,
        generator_log_prob=generator_log_prob,
        est_log_disc_loss=tf.zeros_like(weights),
        actual_disc_loss=tf.gather(out["disc_loss_per_token"], positions,
                                   batch_dims=1),
        actual_log_disc_loss=losses.log_discriminator_loss(
            disc_logits_at_masked,
            tf.gather(out["disc_labels"], positions, batch_dims=1)),
        masked_position_mask=self._masked_position_mask(
            positions, weights, tf.shape(features["input_mask"])))

    # The sampling head's terms; D enters them only through stop-gradient.
    scores_at = None
    if "sampling_scores" in gen_out:
      scores_at = functools.partial(self.generator.sampling_scores_at,
                                    gen_out)
    out.update(self.sampler.head_terms(
        gen_out.get("sampling_scores"), scores_at, sampled, labels,
        disc_logits_at_masked, generator_log_prob))
    out["sample_log_prob"] = (
        sampling.gather_vocab(log_p_draw, sampled) if normalised else
        self.sampler.sample_log_prob(out))
    return out

  def _generator_outputs(self, mlm_logits, log_pg, labels):
    """The generator's per-position entries of `call`'s dict."""
    true_log_prob = losses.true_token_log_prob(mlm_logits, labels)
    return dict(mlm_loss_per_pos=-true_log_prob,
                mlm_focal_loss_per_pos=losses.focal_loss_from_log_prob(
                    true_log_prob, self._config["focal_gamma"]),
                masked_lm_preds=tf.argmax(mlm_logits, -1,
                                          output_type=tf.int32),
                gen_max_prob=tf.exp(tf.reduce_max(log_pg, axis=-1)))

  def _draw_distribution(self, log_pg, gen_out, labels, step, sampler):
    """(log_p, normalised): the draw's log-probs [batch, P, vocab] from
    `sampler` when given, p_G during the sampling warm-up, else the model's
    sampler; `normalised` false when they are the model's sampler's
    unnormalised ones (`draws_normalised`), whose drawn token's log-prob
    `head_terms` gives."""
    warmup = (sampler is None and self._config["sampling_warmup_steps"] and
              not isinstance(self.sampler, samplers.GeneratorSampler))
    sampler = sampler or self.sampler
    log_p = self._sampler_log_probs(sampler, log_pg, gen_out, labels)
    normalised = sampler.draws_normalised or self._config["disallow_correct"]
    if not normalised and (warmup or sampler is not self.sampler):
      log_p, normalised = tf.nn.log_softmax(log_p, axis=-1), True
    if warmup:
      log_p_warm = self._sampler_log_probs(samplers.GeneratorSampler(),
                                           log_pg, gen_out, labels)
      in_warmup = (tf.cast(step, tf.int64) <
                   self._config["sampling_warmup_steps"])
      log_p = tf.where(in_warmup, log_p_warm, log_p)
    return log_p, normalised

  def _sampler_log_probs(self, sampler, log_pg, gen_out, original_ids):
    log_p = sampler.log_probs(log_pg, gen_out.get("sampling_scores"),
                              original_ids)
    if self._config["disallow_correct"]:
      log_p = sampling.forbid_original(log_p, original_ids)
    return log_p

  def _discriminator_outputs(self, features, fake_ids, training):
    """D's per-token entries of `call`'s dict, [batch, seq_len] each."""
    input_mask = features["input_mask"]
    disc_labels = tf.cast(tf.not_equal(fake_ids, features["input_ids"]),
                          tf.int32) * tf.cast(input_mask, tf.int32)
    disc_logits = self.discriminator(
        dict(input_ids=fake_ids, input_mask=input_mask,
             segment_ids=features["segment_ids"]), training=training)
    return dict(disc_logits=disc_logits, disc_probs=tf.sigmoid(disc_logits),
                disc_labels=disc_labels,
                disc_loss_per_token=losses.discriminator_loss(disc_logits,
                                                              disc_labels))

  def objective(self, features, forward_out, loss_denominators):
    """The losses of `forward`'s tensors: `call`'s dict.

    The replica shares of global means divide by `loss_denominators`
    (`losses.loss_denominators`); the self-normalised importance weights
    (HP-Dist, `disc_importance_weighting`) all-reduce here, outside any
    compiled `forward`.
    """
    hp = self._config
    positions = features["masked_lm_positions"]
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    out = dict(forward_out)
    out["mlm_loss"] = losses.replica_mean(out["mlm_focal_loss_per_pos"],
                                          weights, loss_denominators["masked"])
    if not hp["electra_objective"]:
      out["total_loss"] = hp["gen_weight"] * out["mlm_loss"]
      return out

    token_weights = tf.cast(features["input_mask"], tf.float32)
    token_denominator = loss_denominators["tokens"]
    if hp["disc_importance_weighting"]:
      ratio = losses.disc_importance_weights(
          out["generator_log_prob"], out["sample_log_prob"], weights,
          hp["disc_importance_weight_clip"])
      token_weights = sampling.scatter_at_positions(
          token_weights, positions, ratio, weights)
      token_denominator = None  # Depends on the weights: all-reduced here.
    out["disc_loss"] = losses.replica_mean(out["disc_loss_per_token"],
                                           token_weights, token_denominator)

    per_pos = self.sampler.head_loss(out, weights)
    out["sampling_loss"] = (
        tf.constant(0.0) if per_pos is None else
        losses.replica_mean(per_pos, weights, loss_denominators["masked"]))
    out["total_loss"] = (hp["gen_weight"] * out["mlm_loss"] +
                         hp["disc_weight"] * out["disc_loss"] +
                         hp["sampling_weight"] * out["sampling_loss"])
    return out

  @staticmethod
  def _masked_position_mask(positions, weights, shape):
    """[batch, seq_len] int32, 1 at real masked positions."""
    return sampling.scatter_at_positions(
        tf.zeros(shape, tf.int32), positions, tf.ones_like(positions),
        weights)

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
