"""Configuration for pre-training and fine-tuning.

One config object per stage, as in google-research/electra. Every field has a
documented default (configure_fields.py, re-exported here as
`PRETRAIN_FIELDS` and `FINETUNE_FIELDS`); presets (`model_size`, `debug`)
fill in values the user did not set, and `--hparams` (a JSON string or a
path to a .json file) overrides them. Bad hyperparameters raise
`ConfigError` (a `UserError`: one paragraph, exit code 2) naming the key,
the expected type or range, and for an unknown key the nearest valid one.
The frozen specs the parts of a run read are made from a config by
configure_specs.py.
"""

import os

from configure_fields import FINETUNE_FIELDS as FINETUNE_FIELDS
from configure_fields import PRETRAIN_FIELDS as PRETRAIN_FIELDS
from model import samplers
from model import transformer_hparams
from util import dtype_policy
from util import io_utils
from text import vocab_fingerprint
from text import vocab_layout
from util.hparams import ConfigError as ConfigError
from util.hparams import HParams


def check_model_name(name):
  """ConfigError unless --model-name is one path component (its directory
  is <data-dir>/models/<name>): not empty, no "/" or "\\", not "." or
  ".."."""
  if (not name or name.strip() != name or name in (".", "..") or
      "/" in name or "\\" in name or "\0" in name):
    raise ConfigError(
        "--model-name %r must be one directory name under <data-dir>/models "
        "(not empty, no path separators, not '.' or '..'); give e.g. "
        "--model-name my_model, or hparam 'model_dir' for a directory "
        "elsewhere." % name)


def resolve_precision(config, log=print, facts=None):
  """`config` built anew with mixed_precision "auto" resolved for this
  machine (util/dtype_policy.py `resolve`, which logs the choice and why;
  `facts` is for tests), or `config` itself for any other value."""
  record = dtype_policy.resolve(config.mixed_precision, config.strategy, log,
                                facts)
  return config.with_facts(mixed_precision_auto=record) if record else config


class _Config(HParams):
  """The model and path fields shared by pre-training and fine-tuning.

  Its facts (constructor keywords, saved in config.json): `adopted_from`,
  when a run's sizes came from its init_checkpoint, is {"source": path,
  "hparams": what it set} (interop/adoption.py); it is saved with the
  sizes it gave. `mixed_precision_auto`, when `mixed_precision` is "auto",
  is {"resolved", "reason"} (util/dtype_policy.py `resolve`): the config
  then holds the resolved value, and saves both.
  """

  FACTS = ("adopted_from", "mixed_precision_auto")

  def _derive(self):
    if self.mixed_precision == "auto" and self.mixed_precision_auto:
      self.mixed_precision = self.mixed_precision_auto["resolved"]
    if not self.model_dir:
      check_model_name(self.model_name)
    self.vocab_file = vocab_layout.config_vocabulary(self.data_dir,
                                                     self.vocab_file)
    self.model_dir = self.model_dir or os.path.join(self.data_dir, "models",
                                                    self.model_name)
    self.model_hparams, self.embedding_size = transformer_hparams.resolve(
        self.model_size, self.model_hparam_overrides, self.embedding_size)

  def network_hparams(self, role="discriminator"):
    """One network's whole description: its transformer hparams
    (`model_hparams`, or the pre-training `generator_hparams`) with the
    shared `vocab_size` and `embedding_size`."""
    transformer = (self.generator_hparams if role == "generator" else
                   self.model_hparams)
    return dict(transformer, vocab_size=self.vocab_size,
                embedding_size=self.embedding_size)

  def _validate(self):
    super(_Config, self)._validate()
    transformer_hparams.check(self.model_hparams, self.max_seq_length)
    if self.strategy == "tpu" and not self.tpu_name:
      raise ConfigError("strategy 'tpu' needs hparam 'tpu_name'.")

  def _derived_dict(self):
    derived = dict(model_hparams=self.model_hparams)
    if io_utils.is_file(self.vocab_file):
      derived.update(vocab_kind=vocab_layout.kind(self.vocab_file),
                     vocab_fingerprint=vocab_fingerprint.fingerprint(
                         self.vocab_file))
    if self.adopted_from:
      derived["adopted_from"] = self.adopted_from
    if self.mixed_precision_auto:
      derived["mixed_precision_auto"] = self.mixed_precision_auto
    return derived


class PretrainingConfig(_Config):
  """Hyperparameters of pre-training; defaults are ELECTRA-Small's."""

  FIELDS = PRETRAIN_FIELDS
  # `train_shards`: the identity of the training shards, found when they
  # are checked (pretrain/pretrain_data.py `check_inputs`,
  # util/shard_identity.py); config.json records it.
  FACTS = _Config.FACTS + ("train_shards",)

  def _presets(self, kwargs):
    size = kwargs.get("model_size", "small")
    presets = {}
    if size == "base":
      presets.update(learning_rate=2e-4, train_batch_size=256,
                     max_seq_length=512, num_train_steps=766000,
                     generator_hidden_size=1.0 / 3)
    elif size == "large":
      presets.update(learning_rate=2e-4, train_batch_size=2048,
                     max_seq_length=512, num_train_steps=400000,
                     mask_prob=0.25)
    sampling = kwargs.get("sampling", self.FIELDS["sampling"].default)
    if samplers.learns(sampling):
      presets.update(focal_gamma=1.0)
    if kwargs.get("debug"):
      presets.update(train_batch_size=8, eval_batch_size=4,
                     num_train_steps=20, iterations_per_loop=1,
                     num_eval_steps=2, save_checkpoints_steps=10,
                     num_warmup_steps=2, log_every=1)
    return presets

  def _derive(self):
    super(PretrainingConfig, self)._derive()
    self.pretrain_tfrecords = self.pretrain_tfrecords or os.path.join(
        self.data_dir, "pretrain_tfrecords", "pretrain_data.tfrecord*")
    self.eval_tfrecords = self.eval_tfrecords or self.pretrain_tfrecords
    if self.max_predictions_per_seq is None:
      self.max_predictions_per_seq = max(
          1, int((self.mask_prob + 0.005) * self.max_seq_length))
    self.generator_hparams = (transformer_hparams.generator_hparams(
        self.model_hparams, self.generator_hidden_size, self.generator_layers,
        self.generator_intermediate_size, self.generator_num_attention_heads)
                              if self.untied_generator else
                              dict(self.model_hparams))

  def _validate(self):
    super(PretrainingConfig, self)._validate()
    if self.max_predictions_per_seq > self.max_seq_length - 2:
      raise ConfigError(
          "max_predictions_per_seq %d does not fit max_seq_length %d." %
          (self.max_predictions_per_seq, self.max_seq_length))
    sampler = samplers.sampler_class(self.sampling)
    if self.gen_weight == 0 and sampler is samplers.GeneratorSampler:
      raise ConfigError("gen_weight 0 leaves the MLM generator untrained "
                        "while sampling 'mlm' samples from it; use sampling "
                        "'uniform' for an untrained generator.")
    if self.disc_importance_weighting and not samplers.learns(sampler):
      raise ConfigError("disc_importance_weighting weights by p_G/p_S and "
                        "needs sampling 'hp_loss' or 'hp_dist', not %r." %
                        self.sampling)
    if self.gradient_accumulation_steps > 1 and (
        sampler.normalises_over_batch or self.disc_importance_weighting):
      raise ConfigError(
          "gradient_accumulation_steps %d cannot be used with %s: its "
          "importance weights are self-normalised over the whole global "
          "batch, which no micro-batch sees. Set it to 1 (with a smaller "
          "train_batch_size if memory is short)." % (
              self.gradient_accumulation_steps,
              "disc_importance_weighting" if self.disc_importance_weighting
              else "sampling %r" % self.sampling))
    if not self.electra_objective and sampler is not samplers.GeneratorSampler:
      raise ConfigError("electra_objective false trains a plain MLM and "
                        "cannot use sampling %r." % self.sampling)
    if self.do_train is False and self.do_eval is False:
      raise ConfigError("do_train and do_eval are both false: nothing to do.")
    if not self.untied_generator and (self.generator_hidden_size != 1 or
                                      self.generator_layers != 1):
      raise ConfigError("untied_generator false shares the discriminator's "
                        "transformer, so generator_hidden_size and "
                        "generator_layers must be 1.0.")
    if self.generator_checkpoint and not (
        self.untied_generator and self.untied_generator_embeddings and
        self.electra_objective):
      raise ConfigError("generator_checkpoint fixes a generator of its own: "
                        "it needs untied_generator true, "
                        "untied_generator_embeddings true and "
                        "electra_objective true.")
    heads, width = (self.generator_num_attention_heads,
                    self.generator_hparams["hidden_size"])
    if heads and width % heads:
      raise ConfigError("the generator's hidden size %d is not divisible by "
                        "generator_num_attention_heads %d." % (width, heads))

  def _derived_dict(self):
    derived = dict(super(PretrainingConfig, self)._derived_dict(),
                   generator_hparams=self.generator_hparams)
    if self.train_shards:
      derived["train_shards"] = self.train_shards
    return derived


class FinetuningConfig(_Config):
  """Hyperparameters of fine-tuning; defaults are ELECTRA-Small's."""

  FIELDS = FINETUNE_FIELDS

  def _presets(self, kwargs):
    size = kwargs.get("model_size", "small")
    presets = {}
    if size == "base":
      presets.update(learning_rate=1e-4)
    elif size == "large":
      presets.update(learning_rate=5e-5, layerwise_lr_decay=0.9)
    if kwargs.get("debug"):
      presets.update(num_train_epochs=1.0, train_batch_size=8,
                     eval_batch_size=8, log_every=1)
    return presets

  def _validate(self):
    super(FinetuningConfig, self)._validate()
    if not self.task_names or not all(isinstance(t, str)
                                      for t in self.task_names):
      raise ConfigError("hparam 'task_names' must be a non-empty list of "
                        "task names.")
