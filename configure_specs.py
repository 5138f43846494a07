"""The frozen specs a run's parts read, one per concern, made from a config.

configure.py's config objects hold the flat hparams (the user's interface,
saved as config.json). The modules below the entry scripts do not take them
whole: the entry script (or the trainer it builds) makes the specs here from
the config, once, and hands each part the ones it uses. A spec is a frozen
dataclass: its fields cannot be set, and its hparam dicts are read-only
mappings. Fields keep their hparams' names, so docs/method.md and the
hparams' documentation (configure_fields.py) describe them too.

  network        NetworkSpec: the networks' sizes and what G and D share
  objective      ObjectiveSpec: the losses, the replacement sampler and the
                 sampling temperature
  masking        MaskingSpec: the masked positions of an example
  optimization   OptimizationSpec: the update, its schedule and batch
  data           DataSpec: the pre-training shards, vocabulary and batches
  runtime        RuntimeSpec: precision, compilation, devices and strategy
  run            RunSpec: the model directory, the schedule of steps,
                 saves and evaluations, and the weights a run starts from
  vocabulary     VocabularySpec: the vocabulary file and its casing

`pretraining_specs(config)` makes the pre-training ones from a
`PretrainingConfig` (`PretrainingSpecs`). Fine-tuning's own specs (a
task's, a trial's) and `finetuning_specs` are in
configure_finetuning_specs.py, which shares the network, runtime and
vocabulary specs and the helpers below.
"""

import collections
import dataclasses
import types
from typing import Mapping
from typing import Optional


def read_only(mapping):
  """A read-only copy of `mapping` (None stays None)."""
  return None if mapping is None else types.MappingProxyType(dict(mapping))


def initial_loss_scale(config):
  """The initial dynamic loss scale of `config` under float16, else None."""
  return (config.initial_loss_scale if config.mixed_precision == "float16"
          else None)


def spec_from(cls, config, **derived):
  """A `cls` of `config`'s attributes of the same names as its fields,
  except those in `derived`."""
  values = {f.name: getattr(config, f.name) for f in dataclasses.fields(cls)
            if f.name not in derived}
  return cls(**values, **derived)


@dataclasses.dataclass(frozen=True)
class NetworkSpec(object):
  """The networks' sizes (model/builders.py builds from them).

  discriminator: D's transformer hparams (hidden_size, num_hidden_layers,
    num_attention_heads, intermediate_size, hidden_act, dropouts,
    max_position_embeddings, type_vocab_size, initializer_range): the
    config's `model_hparams`, read-only.
  generator: G's (`generator_hparams`), read-only; None when fine-tuning.
  vocab_size, embedding_size: shared by both networks.
  max_seq_length: the tokens of one example.
  relative_position, relative_num_buckets, relative_max_distance: the T5
    relative position bias of both.
  untied_generator, untied_generator_embeddings, untied_mlm_output: what G
    does not share with D (pre-training; False when fine-tuning).
  """

  discriminator: Mapping
  generator: Optional[Mapping]
  vocab_size: int
  embedding_size: int
  max_seq_length: int
  relative_position: bool
  relative_num_buckets: int
  relative_max_distance: int
  untied_generator: bool = False
  untied_generator_embeddings: bool = False
  untied_mlm_output: bool = False

  def network_hparams(self, role="discriminator"):
    """One network's whole description (a new dict): its transformer
    hparams with the shared `vocab_size` and `embedding_size`, as the
    config's `network_hparams`."""
    transformer = (self.generator if role == "generator" else
                   self.discriminator)
    return dict(transformer, vocab_size=self.vocab_size,
                embedding_size=self.embedding_size)

  @classmethod
  def from_config(cls, config):
    """Of a `PretrainingConfig` or a `FinetuningConfig`."""
    untied = {name: getattr(config, name, False) for name in (
        "untied_generator", "untied_generator_embeddings",
        "untied_mlm_output")}
    return spec_from(cls, config,
                 discriminator=read_only(config.model_hparams),
                 generator=read_only(getattr(config, "generator_hparams",
                                              None)), **untied)


@dataclasses.dataclass(frozen=True)
class ObjectiveSpec(object):
  """The pre-training objective (docs/method.md §3-§12).

  electra_objective: false trains a plain MLM (BERT).
  gen_weight, disc_weight, sampling_weight: the weights of the MLM,
    discriminator and sampling-head losses.
  focal_gamma: the focal MLM loss's gamma (0: cross-entropy).
  sampling: the replacement sampler's name (model/samplers.py), with its
    hyperparameters hp_loss_min_estimate and hp_dist_weight_clip;
    sampling_warmup_steps: steps drawn from p_G while the head trains.
  disallow_correct: never draw the original token.
  disc_importance_weighting, disc_importance_weight_clip: D's loss
    weighted by the clipped p_G/p_S (ablation).
  temperature, temperature_final, temperature_schedule: the sampling
    temperature and its curriculum; temperature_decay_steps: the steps it
    decays over (the hparam, or num_train_steps when that is 0).
  fixed_generator: G is loaded from `generator_checkpoint` and not
    trained (Fast-ELECTRA).
  """

  electra_objective: bool
  gen_weight: float
  disc_weight: float
  sampling_weight: float
  focal_gamma: float
  sampling: str
  hp_loss_min_estimate: float
  hp_dist_weight_clip: float
  sampling_warmup_steps: int
  disallow_correct: bool
  disc_importance_weighting: bool
  disc_importance_weight_clip: float
  temperature: float
  temperature_final: Optional[float]
  temperature_decay_steps: int
  temperature_schedule: str
  fixed_generator: bool

  @classmethod
  def from_config(cls, config):
    return spec_from(cls, config,
                 temperature_decay_steps=(config.temperature_decay_steps or
                                          config.num_train_steps),
                 fixed_generator=bool(config.generator_checkpoint))


@dataclasses.dataclass(frozen=True)
class MaskingSpec(object):
  """The masked positions of an example (pretrain/masking.py).

  max_seq_length: the tokens of one example.
  max_predictions_per_seq: the masked positions it holds (P).
  mask_prob: the fraction of its tokens masked.
  """

  max_seq_length: int
  max_predictions_per_seq: int
  mask_prob: float

  @classmethod
  def from_config(cls, config):
    return spec_from(cls, config)


@dataclasses.dataclass(frozen=True)
class OptimizationSpec(object):
  """The update and its schedule (training/optimization.py).

  learning_rate, num_train_steps, num_warmup_steps, lr_decay_power: the
    schedule (linear warmup, polynomial decay to 0 at num_train_steps).
  weight_decay_rate, adam_epsilon: AdamW's.
  clip_norm: the gradients' global-norm clip.
  generator_lr_multiplier: the rate of what only G trains, as a multiple.
  encoder_frozen_steps: steps D's encoder keeps its start's weights.
  embedding_lr_multiplier: the rate of the word-embedding tables, as a
    multiple (0: they keep their start).
  train_batch_size: the global batch of one update, split over the
    replicas and `gradient_accumulation_steps` micro-batches.
  loss_scale: the initial dynamic loss scale under float16, else None.
  """

  learning_rate: float
  num_train_steps: int
  num_warmup_steps: int
  lr_decay_power: float
  weight_decay_rate: float
  adam_epsilon: float
  clip_norm: float
  generator_lr_multiplier: float
  encoder_frozen_steps: int
  embedding_lr_multiplier: float
  train_batch_size: int
  gradient_accumulation_steps: int
  loss_scale: Optional[float]

  @classmethod
  def from_config(cls, config):
    return spec_from(cls, config, loss_scale=initial_loss_scale(config))


@dataclasses.dataclass(frozen=True)
class DataSpec(object):
  """The pre-training data (pretrain/pretrain_data.py).

  vocab_file: the vocabulary the shards were built with.
  pretrain_tfrecords, eval_tfrecords: the training and held-out shard
    globs.
  train_batch_size, eval_batch_size: the global batches.
  shuffle_buffer, seed: the training order.
  train_shards: the identity of the training shards once checked
    (util/shard_identity.py), else None.
  """

  vocab_file: str
  pretrain_tfrecords: str
  eval_tfrecords: str
  train_batch_size: int
  eval_batch_size: int
  shuffle_buffer: int
  seed: int
  train_shards: Optional[Mapping]

  @classmethod
  def from_config(cls, config):
    return spec_from(cls, config, train_shards=read_only(config.train_shards))


@dataclasses.dataclass(frozen=True)
class RuntimeSpec(object):
  """How and where a run computes (util/distribution.py,
  util/process_setup.py, util/xla_fusion.py).

  strategy, num_cpu_devices, tpu_name, tpu_zone, gcp_project: the
    tf.distribute strategy and its devices.
  mixed_precision: the compute dtype, "auto" resolved
    (util/dtype_policy.py).
  jit_compile: the train step compiled with XLA; fuse_elementwise: XLA
    fuses the elementwise ops.
  seed: the process's seed.
  peak_tflops: one replica's peak for MFU (0: found, pretrain/peak.py).
  """

  strategy: str
  num_cpu_devices: int
  tpu_name: Optional[str]
  tpu_zone: Optional[str]
  gcp_project: Optional[str]
  mixed_precision: str
  jit_compile: bool
  fuse_elementwise: str
  seed: int
  peak_tflops: float

  @classmethod
  def from_config(cls, config):
    """Of a `PretrainingConfig` or a `FinetuningConfig`."""
    return spec_from(cls, config)


@dataclasses.dataclass(frozen=True)
class RunSpec(object):
  """A pre-training run's directory, schedule and start.

  model_name, model_dir: the run's name and directory.
  num_train_steps, iterations_per_loop, log_every: the steps, the steps
    per tf.function call and between progress lines.
  save_checkpoints_steps, keep_checkpoint_max: the checkpoints.
  eval_every, num_eval_steps: the evaluations and their batches.
  init_checkpoint, generator_checkpoint: the weights a new run starts
    from (interop/loader.py, pretrain/checkpointing.py).
  embedding_init: "random", or "corpus" to start a new run's embedding
    table from the training shards (pretrain/corpus_embeddings.py).
  """

  model_name: str
  model_dir: str
  num_train_steps: int
  iterations_per_loop: int
  log_every: int
  save_checkpoints_steps: int
  keep_checkpoint_max: int
  eval_every: int
  num_eval_steps: int
  init_checkpoint: Optional[str]
  generator_checkpoint: Optional[str]
  embedding_init: str

  @classmethod
  def from_config(cls, config):
    return spec_from(cls, config)


@dataclasses.dataclass(frozen=True)
class VocabularySpec(object):
  """The vocabulary of a model (model/tokenization.py `tokenizer_for`
  reads it; interop/ exports it).

  vocab_file: a WordPiece vocab.txt or a SentencePiece .model.
  do_lower_case: WordPiece lower-cases (and strips accents).
  strip_accents: WordPiece strips accents; None: as do_lower_case.
  """

  vocab_file: str
  do_lower_case: bool
  strip_accents: Optional[bool] = None

  @classmethod
  def from_config(cls, config):
    """Of a `PretrainingConfig` or a `FinetuningConfig`."""
    return spec_from(cls, config)


PretrainingSpecs = collections.namedtuple(
    "PretrainingSpecs",
    "network objective masking optimization data runtime run vocabulary")
PretrainingSpecs.__doc__ = """Every spec of a pre-training config: what
pretrain/trainer.py receives and hands out, one concern to each part."""


def pretraining_specs(config):
  """The `PretrainingSpecs` of a `configure.PretrainingConfig`."""
  return PretrainingSpecs(
      NetworkSpec.from_config(config), ObjectiveSpec.from_config(config),
      MaskingSpec.from_config(config), OptimizationSpec.from_config(config),
      DataSpec.from_config(config), RuntimeSpec.from_config(config),
      RunSpec.from_config(config), VocabularySpec.from_config(config))
