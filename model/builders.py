"""Builds the networks and models from the specs of a config.

`build_pretrainer(network, objective)` assembles the pre-trainer from its
parts: embeddings (model/layers/), the discriminator's and the generator's
encoders (model/networks/), the generator, the discriminator and the
sampler (model/models/, model/samplers.py). Fine-tuning builds the
discriminator's encoder alone (`build_discriminator_encoder`). The specs
are configure_specs.py's: `network` a NetworkSpec (sizes), `objective` an
ObjectiveSpec (losses, sampler, temperature), `masking` a MaskingSpec.
"""

import tensorflow as tf

from model import samplers
from model.layers.embeddings import ElectraEmbeddings
from model.models.discriminator import Discriminator
from model.models.generator import HardnessPredictionGenerator
from model.models.generator import MaskedLMGenerator
from model.models.pretrainer import ElectraPretrainer
from model.networks.encoder import ElectraEncoder


def build_embeddings(network, name="embeddings"):
  """The `ElectraEmbeddings` of a NetworkSpec (D's position and type
  tables, the shared vocabulary and embedding sizes)."""
  m = network.discriminator
  return ElectraEmbeddings(
      vocab_size=network.vocab_size, embedding_size=network.embedding_size,
      max_position_embeddings=m["max_position_embeddings"],
      type_vocab_size=m["type_vocab_size"],
      dropout_rate=m["hidden_dropout_prob"],
      initializer_range=m["initializer_range"], name=name)


def build_encoder(network, transformer_hparams, embeddings, name="encoder"):
  """An `ElectraEncoder` of `transformer_hparams`' sizes over `embeddings`.

  `transformer_hparams` is `network.discriminator` (D) or
  `network.generator` (G); the relative position settings are the
  NetworkSpec's, shared by both.
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
      relative_position=network.relative_position,
      relative_num_buckets=network.relative_num_buckets,
      relative_max_distance=network.relative_max_distance, name=name)


def build_discriminator_encoder(network, name="encoder"):
  """The discriminator's encoder of a NetworkSpec, with its own embeddings
  (fine-tuning)."""
  return build_encoder(network, network.discriminator,
                       build_embeddings(network), name=name)


def build_pretrainer(network, objective):
  """The `ElectraPretrainer` of a NetworkSpec and an ObjectiveSpec.

  G shares D's embeddings (ELECTRA) unless `untied_generator_embeddings`,
  and is D's own transformer when `untied_generator` is false. The sampler
  is `objective.sampling`'s, with its hyperparameters; a learning sampler
  gets the generator with a sampling head.
  """
  disc_hparams = network.discriminator
  embeddings = build_embeddings(network)
  disc_encoder = build_encoder(network, disc_hparams, embeddings,
                               name="discriminator_encoder")
  discriminator = Discriminator(
      disc_encoder, disc_hparams["hidden_size"], disc_hparams["hidden_act"],
      disc_hparams["initializer_range"], name="discriminator")
  gen_hparams = network.generator
  if not network.untied_generator:
    gen_encoder = disc_encoder
  else:
    if network.untied_generator_embeddings:
      embeddings = build_embeddings(network, name="generator_embeddings")
    gen_encoder = build_encoder(network, gen_hparams, embeddings,
                                name="generator_encoder")
  sampler = samplers.from_objective(objective.sampling, objective)
  generator_cls = (HardnessPredictionGenerator if samplers.learns(sampler)
                   else MaskedLMGenerator)
  generator = generator_cls(
      gen_encoder, network.embedding_size, network.vocab_size,
      gen_hparams["hidden_act"], gen_hparams["initializer_range"],
      tie_output_embeddings=not network.untied_mlm_output, name="generator")
  if objective.fixed_generator:
    # A fixed generator (Fast-ELECTRA): its transformer, embeddings and MLM
    # head keep the weights loaded from generator_checkpoint.
    for part in fixed_generator_parts(generator).values():
      part.trainable = False
  return ElectraPretrainer(
      generator, discriminator, sampler, temperature=objective.temperature,
      temperature_final=objective.temperature_final,
      temperature_decay_steps=objective.temperature_decay_steps,
      temperature_schedule=objective.temperature_schedule,
      focal_gamma=objective.focal_gamma,
      electra_objective=objective.electra_objective,
      disallow_correct=objective.disallow_correct,
      sampling_warmup_steps=objective.sampling_warmup_steps,
      disc_importance_weighting=objective.disc_importance_weighting,
      disc_importance_weight_clip=objective.disc_importance_weight_clip,
      gen_weight=objective.gen_weight, disc_weight=objective.disc_weight,
      sampling_weight=objective.sampling_weight)


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


def word_embedding_tables(model):
  """The distinct word-embedding tables of `model`: D's (shared with G in
  ELECTRA), and G's own when `untied_generator_embeddings`."""
  tables = {}
  for layer in model.submodules:
    if isinstance(layer, ElectraEmbeddings):
      table = layer.word_embeddings.embeddings
      tables.setdefault(id(table), table)
  return list(tables.values())


def learning_rate_multipliers(model, generator_factor, embedding_factor):
  """{variable name: factor} for `optimization.create_optimizer`: G's own
  variables at `generator_factor` (`generator_lr_multipliers`), the word
  tables at `embedding_factor` (a table G owns gets both factors)."""
  names = generator_lr_multipliers(model, generator_factor)
  if embedding_factor != 1:
    for table in word_embedding_tables(model):
      names[table.name] = names.get(table.name, 1.0) * float(embedding_factor)
  return names


def encoder_variable_names(model):
  """The names of the discriminator encoder's variables (with the embeddings
  it shares with G): what a released start provides, frozen for the first
  `encoder_frozen_steps` steps while the fresh heads and G catch up."""
  return [v.name for v in model.discriminator.encoder.trainable_variables]


def dummy_features(masking, batch_size=1):
  """A batch of the pipeline's structure, to create the model's variables:
  `batch_size` examples of a MaskingSpec's `max_seq_length` tokens and
  `max_predictions_per_seq` masked positions."""
  seq, preds = masking.max_seq_length, masking.max_predictions_per_seq
  ids = tf.ones([batch_size, seq], tf.int32)
  positions = tf.tile(tf.range(1, preds + 1)[tf.newaxis], [batch_size, 1])
  return dict(input_ids=ids, input_mask=ids, segment_ids=ids * 0,
              masked_input_ids=ids, masked_lm_positions=positions,
              masked_lm_ids=tf.ones_like(positions),
              masked_lm_weights=tf.ones([batch_size, preds], tf.float32),
              sample_seed=tf.zeros([batch_size, 2], tf.int32))


def build_pretrainer_with_variables(network, objective, masking):
  """`build_pretrainer(network, objective)` called once on
  `dummy_features(masking)`, so that its variables exist (to restore, load
  or export weights)."""
  model = build_pretrainer(network, objective)
  model(dummy_features(masking), training=False)
  return model
