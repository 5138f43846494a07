"""The ELECTRA pre-training model with learned replacement sampling.

One forward pass (docs/method.md §1, §3-§11):

  masked input -> generator (MLM head, + sampling head in HP modes)
    -> sampler log-probs over the vocabulary (float32, stop-gradient)
    -> Gumbel-max draw x'_t per masked position (per-example stateless seeds)
    -> x~ = x with x'_t scattered in -> discriminator -> z_t per token
    -> L = gen_weight L_MLM(focal) + sampling_weight L_S + disc_weight L_D,
       with D read by L_S only through tf.stop_gradient.

Losses are replica shares of global means (model/losses.py), so under a
`tf.distribute` strategy the shares sum to the loss of the global batch.
`call` also returns what the analyses of docs/method.md §13 need.
"""

import tensorflow as tf
import tf_keras

from model import encoder as encoder_lib
from model import generator as generator_lib
from model import heads
from model import losses
from model import samplers
from model import sampling


class Discriminator(tf_keras.Model):
  """Encoder + replaced-token head.

  Inputs: dict `input_ids`, `input_mask`, `segment_ids` [batch, seq_len].
  Output: logits z [batch, seq_len] float32.
  """

  def __init__(self, encoder, hidden_size, hidden_act="gelu",
               initializer_range=0.02, **kwargs):
    super(Discriminator, self).__init__(**kwargs)
    self.encoder = encoder
    self.head = heads.ReplacedTokenHead(hidden_size, hidden_act,
                                        initializer_range,
                                        name="replaced_token_head")

  def call(self, inputs, training=None):
    return self.head(self.encoder(inputs, training=training))


class ElectraPretrainingModel(tf_keras.Model):
  """Generator + sampler + discriminator with the combined objective.

  Args:
    config: a `configure.PretrainingConfig`.

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
    sampler: overrides `config.sampling` for the draw (analyses: "mlm" draws
      from p_G on the same batch).
  Returns a dict of float32 tensors: `total_loss`, `mlm_loss` (the objective
    L_MLM, focal when focal_gamma > 0), `disc_loss`, `sampling_loss`
    (replica shares of global means); per position [batch, P]:
    `mlm_loss_per_pos` (the plain cross-entropy -log p_G(x_t), whatever the
    gamma, so that runs compare), `mlm_focal_loss_per_pos` (the focal loss
    `mlm_loss` averages), `masked_lm_preds`, `gen_max_prob`, `sampled_tokens`,
    `est_disc_loss`, `actual_disc_loss`, `sample_log_prob`, `generator_log_prob`;
    per token [batch, seq_len]: `disc_logits`, `disc_probs`, `disc_labels`,
    `disc_loss_per_token`, `masked_position_mask`. With `electra_objective`
    false (plain MLM) only `total_loss`, `mlm_loss`, `mlm_loss_per_pos`,
    `mlm_focal_loss_per_pos`, `masked_lm_preds` and `gen_max_prob`.
  """

  def __init__(self, config, **kwargs):
    super(ElectraPretrainingModel, self).__init__(**kwargs)
    self.config = config
    disc_hparams = config.model_hparams
    gen_hparams = config.generator_hparams
    relative = dict(relative_position=config.relative_position,
                    relative_num_buckets=config.relative_num_buckets,
                    relative_max_distance=config.relative_max_distance)
    embeddings = encoder_lib.build_embeddings(disc_hparams)
    disc_encoder = encoder_lib.build_encoder(disc_hparams, embeddings,
                                             name="discriminator_encoder",
                                             **relative)
    self.discriminator = Discriminator(
        disc_encoder, disc_hparams["hidden_size"], disc_hparams["hidden_act"],
        disc_hparams["initializer_range"], name="discriminator")
    if not config.untied_generator:
      gen_encoder = disc_encoder
    else:
      gen_embeddings = embeddings
      if config.untied_generator_embeddings:
        gen_embeddings = encoder_lib.build_embeddings(
            gen_hparams, name="generator_embeddings")
      gen_encoder = encoder_lib.build_encoder(
          gen_hparams, gen_embeddings, name="generator_encoder", **relative)
    self.sampler = samplers.from_config(config.sampling, config)
    generator_cls = (generator_lib.HardnessPredictionGenerator
                     if self.sampler.learns else
                     generator_lib.MaskedLMGenerator)
    self.generator = generator_cls(
        gen_encoder, gen_hparams["embedding_size"], gen_hparams["vocab_size"],
        gen_hparams["hidden_act"], gen_hparams["initializer_range"],
        tie_output_embeddings=not config.untied_mlm_output, name="generator")

  @property
  def needs_cross_replica_sums(self):
    """Whether `objective` all-reduces values `forward` computes (the
    self-normalised importance weights), beyond `loss_denominators`: the
    train step then XLA-compiles `forward` alone (model/train_step.py)."""
    return (self.config.electra_objective and
            (self.sampler.normalises_over_batch or
             self.config.disc_importance_weighting))

  @property
  def learns_sampler(self):
    return self.sampler.learns

  def _draw_log_probs(self, sampler, log_pg, gen_out, original_ids):
    log_p = sampler.log_probs(log_pg, gen_out.get("sampling_scores"),
                              original_ids)
    if self.config.disallow_correct:
      log_p = sampling.forbid_original(log_p, original_ids)
    return log_p

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
    c = self.config
    positions = features["masked_lm_positions"]
    labels = features["masked_lm_ids"]
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    input_mask = features["input_mask"]

    gen_out = self.generator(features, training=training)
    mlm_logits = gen_out["mlm_logits"]
    true_log_prob = losses.true_token_log_prob(mlm_logits, labels)
    log_pg = sampling.generator_log_probs(mlm_logits, c.temperature)
    out = dict(mlm_loss_per_pos=-true_log_prob,
               mlm_focal_loss_per_pos=losses.focal_loss_from_log_prob(
                   true_log_prob, c.focal_gamma),
               masked_lm_preds=tf.argmax(mlm_logits, -1,
                                         output_type=tf.int32),
               gen_max_prob=tf.exp(tf.reduce_max(log_pg, axis=-1)))
    if not c.electra_objective:
      return out

    # The draw: p_G during warmup or when asked, else the configured sampler.
    draw_from = self.sampler if sampler is None else samplers.from_config(
        sampler, c)
    log_p_configured = self._draw_log_probs(draw_from, log_pg, gen_out,
                                            labels)
    if (sampler is None and c.sampling_warmup_steps and
        not isinstance(self.sampler, samplers.GeneratorSampler)):
      log_p_warm = self._draw_log_probs(samplers.GeneratorSampler(), log_pg,
                                        gen_out, labels)
      in_warmup = tf.cast(step, tf.int64) < c.sampling_warmup_steps
      log_p_draw = tf.where(in_warmup, log_p_warm, log_p_configured)
    else:
      log_p_draw = log_p_configured
    sampled = sampling.gumbel_max_sample(log_p_draw,
                                         features["sample_seed"])
    generator_log_prob = sampling.gather_vocab(log_pg, sampled)

    # Replaced-token detection.
    disc_input_ids = sampling.scatter_replacements(
        features["input_ids"], positions, sampled, weights)
    disc_labels = tf.cast(tf.not_equal(disc_input_ids, features["input_ids"]),
                          tf.int32) * tf.cast(input_mask, tf.int32)
    disc_logits = self.discriminator(
        dict(input_ids=disc_input_ids, input_mask=input_mask,
             segment_ids=features["segment_ids"]), training=training)
    disc_loss_per_token = losses.discriminator_loss(disc_logits, disc_labels)
    actual_disc_loss = tf.gather(disc_loss_per_token, positions, batch_dims=1)
    out.update(
        sampled_tokens=sampled,
        sample_log_prob=sampling.gather_vocab(log_p_draw, sampled),
        generator_log_prob=generator_log_prob,
        est_disc_loss=tf.zeros_like(weights),
        actual_disc_loss=actual_disc_loss, disc_logits=disc_logits,
        disc_probs=tf.sigmoid(disc_logits), disc_labels=disc_labels,
        disc_loss_per_token=disc_loss_per_token,
        masked_position_mask=self._masked_position_mask(
            positions, weights, tf.shape(input_mask)))

    out.update(self.sampler.head_terms(
        gen_out.get("sampling_scores"), sampled, labels,
        tf.gather(disc_logits, positions, batch_dims=1), generator_log_prob))
    return out

  def objective(self, features, forward_out, loss_denominators):
    """The losses of `forward`'s tensors: `call`'s dict.

    The replica shares of global means divide by `loss_denominators`
    (`losses.loss_denominators`); the self-normalised importance weights
    (HP-Dist, `disc_importance_weighting`) all-reduce here, outside any
    compiled `forward`.
    """
    c = self.config
    positions = features["masked_lm_positions"]
    weights = tf.cast(features["masked_lm_weights"], tf.float32)
    out = dict(forward_out)
    out["mlm_loss"] = losses.replica_mean(out["mlm_focal_loss_per_pos"],
                                          weights, loss_denominators["masked"])
    if not c.electra_objective:
      out["total_loss"] = c.gen_weight * out["mlm_loss"]
      return out

    token_weights = tf.cast(features["input_mask"], tf.float32)
    token_denominator = loss_denominators["tokens"]
    if c.disc_importance_weighting:
      ratio = losses.disc_importance_weights(
          out["generator_log_prob"], out["sample_log_prob"], weights,
          c.disc_importance_weight_clip)
      token_weights = sampling.scatter_at_positions(
          token_weights, positions, ratio, weights)
      token_denominator = None  # Depends on the weights: all-reduced here.
    out["disc_loss"] = losses.replica_mean(out["disc_loss_per_token"],
                                           token_weights, token_denominator)

    per_pos = self.sampler.head_loss(out, weights)
    out["sampling_loss"] = (
        tf.constant(0.0) if per_pos is None else
        losses.replica_mean(per_pos, weights, loss_denominators["masked"]))
    out["total_loss"] = (c.gen_weight * out["mlm_loss"] +
                         c.disc_weight * out["disc_loss"] +
                         c.sampling_weight * out["sampling_loss"])
    return out

  @staticmethod
  def _masked_position_mask(positions, weights, shape):
    """[batch, seq_len] int32, 1 at real masked positions."""
    return sampling.scatter_at_positions(
        tf.zeros(shape, tf.int32), positions, tf.ones_like(positions),
        weights)

  def get_config(self):
    return self.config.to_dict()


def dummy_features(config, batch_size=1):
  """A batch of the pipeline's structure, to create the model's variables."""
  seq, preds = config.max_seq_length, config.max_predictions_per_seq
  ids = tf.ones([batch_size, seq], tf.int32)
  positions = tf.tile(tf.range(1, preds + 1)[tf.newaxis], [batch_size, 1])
  return dict(input_ids=ids, input_mask=ids, segment_ids=ids * 0,
              masked_input_ids=ids, masked_lm_positions=positions,
              masked_lm_ids=tf.ones_like(positions),
              masked_lm_weights=tf.ones([batch_size, preds], tf.float32),
              sample_seed=tf.zeros([batch_size, 2], tf.int32))
