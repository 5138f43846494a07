"""Builds the networks and models of a config: the one place that reads it.

`build_pretrainer(config)` assembles the pre-trainer from its parts:
embeddings (model/layers/), the discriminator's and the generator's encoders
(model/networks/), the generator, the discriminator and the sampler
(model/models/, model/samplers.py). Fine-tuning builds the discriminator's
encoder alone (`build_discriminator_encoder`).
"""

import tensorflow as tf

from model import samplers
from model.layers.embeddings import ElectraEmbeddings
from model.models.discriminator import Discriminator
from model.models.generator import HardnessPredictionGenerator
from model.models.generator import MaskedLMGenerator
from model.models.pretrainer import ElectraPretrainer
from model.networks.encoder import ElectraEncoder


def build_embeddings(config, name="embeddings"):
  """The `ElectraEmbeddings` of a `PretrainingConfig` or `FinetuningConfig`."""
  m = config.model_hparams
  return ElectraEmbeddings(
      vocab_size=config.vocab_size, embedding_size=config.embedding_size,
      max_position_embeddings=m["max_position_embeddings"],
      type_vocab_size=m["type_vocab_size"],
      dropout_rate=m["hidden_dropout_prob"],
      initializer_range=m["initializer_range"], name=name)


def build_encoder(config, transformer_hparams, embeddings, name="encoder"):
  """An `ElectraEncoder` of `transformer_hparams`' sizes over `embeddings`.

  `transformer_hparams` is `config.model_hparams` (D) or
  `config.generator_hparams` (G); the relative position settings are the
  config's, shared by both.
  """
  m = transformer_hparams
  return ElectraEncoder(
      embeddings, hidden_size=m["hidden_size"],
      num_hidden_layers=m["num_hidden_layers"],
      num_attention_heads=m["num_attention_heads"],
      intermediate_size=m["intermediate_size"], hidden_act=m["hidden_act"],
      hidden_dropout_prob=m["hidden_dropout_prob"],
      attention_probs_dropout_prob=m["attention_probs_dropout_prob"],
      initializer_range=m["initializer_range"],
      relative_position=config.relative_position,
      relative_num_buckets=config.relative_num_buckets,
      relative_max_distance=config.relative_max_distance, name=name)


def build_discriminator_encoder(config, name="encoder"):
  """The discriminator's encoder, with its own embeddings (fine-tuning)."""
  return build_encoder(config, config.model_hparams, build_embeddings(config),
                       name=name)


def build_pretrainer(config):
  """The `ElectraPretrainer` of a `configure.PretrainingConfig`.

  G shares D's embeddings (ELECTRA) unless `untied_generator_embeddings`,
  and is D's own transformer when `untied_generator` is false. The sampler
  is `config.sampling`'s, with its hyperparameters; a learning sampler gets
  the generator with a sampling head.
  """
  disc_hparams = config.model_hparams
  embeddings = build_embeddings(config)
  disc_encoder = build_encoder(config, disc_hparams, embeddings,
                               name="discriminator_encoder")
  discriminator = Discriminator(
      disc_encoder, disc_hparams["hidden_size"], disc_hparams["hidden_act"],
      disc_hparams["initializer_range"], name="discriminator")
  gen_hparams = config.generator_hparams
  if not config.untied_generator:
    gen_encoder = disc_encoder
  else:
    if config.untied_generator_embeddings:
      embeddings = build_embeddings(config, name="generator_embeddings")
    gen_encoder = build_encoder(config, gen_hparams, embeddings,
                                name="generator_encoder")
  sampler = samplers.from_config(config.sampling, config)
  generator_cls = (HardnessPredictionGenerator if samplers.learns(sampler)
                   else MaskedLMGenerator)
  generator = generator_cls(
      gen_encoder, config.embedding_size, config.vocab_size,
      gen_hparams["hidden_act"], gen_hparams["initializer_range"],
      tie_output_embeddings=not config.untied_mlm_output, name="generator")
  if config.generator_checkpoint:
    # A fixed generator (Fast-ELECTRA): its transformer, embeddings and MLM
    # head keep the weights loaded from generator_checkpoint.
    for part in fixed_generator_parts(generator).values():
      part.trainable = False
  return ElectraPretrainer(
      generator, discriminator, sampler, temperature=config.temperature,
      temperature_final=config.temperature_final,
      temperature_decay_steps=(config.temperature_decay_steps or
                               config.num_train_steps),
      temperature_schedule=config.temperature_schedule,
      focal_gamma=config.focal_gamma,
      electra_objective=config.electra_objective,
      disallow_correct=config.disallow_correct,
      sampling_warmup_steps=config.sampling_warmup_steps,
      disc_importance_weighting=config.disc_importance_weighting,
      disc_importance_weight_clip=config.disc_importance_weight_clip,
      gen_weight=config.gen_weight, disc_weight=config.disc_weight,
      sampling_weight=config.sampling_weight)


def fixed_generator_parts(generator):
  """{attribute: layer} of the parts of `generator` a fixed generator keeps
  (`generator_checkpoint`): its transformer with its own embeddings and its
  MLM head, not a learned sampling head."""
  return dict(encoder=generator.encoder, mlm_head=generator.mlm_head)


def fixed_generator_variables(model):
  """The variables of `fixed_generator_parts(model.generator)`."""
  return [v for part in fixed_generator_parts(model.generator).values()
          for v in part.variables]


def generator_lr_multipliers(model, factor):
  """{variable name: `factor`} for the variables only `model.generator`
  trains (its own transformer, MLM and sampling heads; not what it shares
  with the discriminator), as `optimization.create_optimizer` takes them.
  Empty for a factor of 1; a variable named as one of D's is left out."""
  if factor == 1:
    return {}
  disc = model.discriminator.trainable_variables
  shared = {v.ref() for v in disc}
  names = {v.name: float(factor) for v in model.generator.trainable_variables
           if v.ref() not in shared}
  # The optimizer keys by name: a G variable named as one of D's (G's own
  # relative position bias) keeps the base rate, so D's is never scaled.
  for name in {v.name for v in disc}:
    names.pop(name, None)
  return names


def encoder_variable_names(model):
  """The names of the discriminator encoder's variables (with the embeddings
  it shares with G): what a released start provides, frozen for the first
  `encoder_frozen_steps` steps while the fresh heads and G catch up."""
  return [v.name for v in model.discriminator.encoder.trainable_variables]


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


def build_pretrainer_with_variables(config):
  """`build_pretrainer(config)` called once on `dummy_features`, so that its
  variables exist (to restore, load or export weights)."""
  model = build_pretrainer(config)
  model(dummy_features(config), training=False)
  return model
