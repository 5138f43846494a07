"""Configuration for pre-training and fine-tuning.

One config object per stage, as in google-research/electra. Every field has a
documented default; presets (`model_size`, `debug`) fill in values the user did
not set, and `--hparams` (a JSON string or a path to a .json file) overrides
them. Bad hyperparameters raise `ConfigError` (a `UserError`: one paragraph,
exit code 2) naming the key, the expected type or range, and for an unknown
key the nearest valid one.
"""

import difflib
import json
import os

from model import samplers
from util.errors import UserError
from util import io_utils
from util.io_utils import write_json_atomic


class ConfigError(UserError):
  """A hyperparameter is unknown, of the wrong type, out of range or contradictory."""


class Field(object):
  """A hyperparameter: default value, accepted type(s), and what it means.

  Args:
    default: the value when neither a preset nor the user sets one.
    types: accepted Python type(s).
    doc: what it means (README's tables say the same).
    choices: the accepted values, if a closed set.
    min, max: the accepted range of a number (None: unbounded), inclusive
      unless `exclusive` names the end ("min", "max" or both). Checked on
      the final value, after presets and derivations; None always passes.
  """

  def __init__(self, default, types, doc, choices=None,
            min=None, max=None,  # pylint: disable=redefined-builtin
               exclusive=()):
    self.default = default
    self.types = types if isinstance(types, tuple) else (types,)
    self.doc = doc
    self.choices = choices
    self.min, self.max = min, max
    self.exclusive = (exclusive,) if isinstance(exclusive, str) else tuple(
        exclusive)

  def range_error(self, value):
    """A description of the range `value` falls outside, or None."""
    if value is None or (self.min is None and self.max is None):
      return None
    low_open, high_open = "min" in self.exclusive, "max" in self.exclusive
    below = self.min is not None and (value <= self.min if low_open
                                      else value < self.min)
    above = self.max is not None and (value >= self.max if high_open
                                      else value > self.max)
    if not (below or above):
      return None
    if self.max is None:
      return "%s %r" % (">" if low_open else ">=", self.min)
    if self.min is None:
      return "%s %r" % ("<" if high_open else "<=", self.max)
    return "in %s%r, %r%s" % ("(" if low_open else "[", self.min, self.max,
                              ")" if high_open else "]")


# Transformer sizes of docs/method.md §14 (ELECTRA's released models).
MODEL_SIZES = {
    "small": dict(num_hidden_layers=12, hidden_size=256, num_attention_heads=4,
                  intermediate_size=1024, embedding_size=128),
    "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12,
                 intermediate_size=3072, embedding_size=768),
    "large": dict(num_hidden_layers=24, hidden_size=1024, num_attention_heads=16,
                  intermediate_size=4096, embedding_size=1024),
}

# Fields of the transformer that `model_hparam_overrides` may change.
MODEL_HPARAM_DEFAULTS = dict(
    vocab_size=30522, hidden_size=256, num_hidden_layers=12,
    num_attention_heads=4, intermediate_size=1024, embedding_size=128,
    hidden_act="gelu", hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1, max_position_embeddings=512,
    type_vocab_size=2, initializer_range=0.02)

_RUN_FIELDS = dict(
    seed=Field(42, int, "Seed of weights, masking, sampling and data order."),
    strategy=Field("default", str, "tf.distribute strategy.",
                   choices=("default", "mirrored", "multi_worker_mirrored",
                            "tpu")),
    num_cpu_devices=Field(0, int, "With strategy 'mirrored' and no GPU: split "
                          "the CPU into this many logical devices (testing).",
                          min=0),
    mixed_precision=Field("float32", str, "Compute dtype policy; sampling and "
                          "losses stay in float32.",
                          choices=("float32", "bfloat16", "float16")),
    jit_compile=Field(False, bool, "Compile the train step with XLA."),
    initial_loss_scale=Field(32768.0, (float, int), "Initial dynamic loss "
                             "scale under float16 (tf_keras' default 2^15); "
                             "it halves on every step whose gradients "
                             "overflow, and that step is skipped.",
                             min=0, exclusive="min"),
    tpu_name=Field(None, (str, type(None)), "Cloud TPU name (strategy tpu)."),
    tpu_zone=Field(None, (str, type(None)), "Cloud TPU zone."),
    gcp_project=Field(None, (str, type(None)), "GCP project of the TPU."),
    model_size=Field("small", str, "Preset of docs/method.md §14.",
                     choices=tuple(MODEL_SIZES)),
    model_hparam_overrides=Field({}, dict, "Transformer fields to override, "
                                 "e.g. {\"hidden_size\": 128}."),
    embedding_size=Field(None, (int, type(None)), "Token embedding width; "
                         "None takes the model size's."),
    vocab_size=Field(30522, int, "Vocabulary size; must match vocab.txt."),
    do_lower_case=Field(True, bool, "Lower-case (and strip accents) text."),
    max_seq_length=Field(128, int, "Tokens per example.", min=1),
    learning_rate=Field(5e-4, (float, int), "Peak learning rate.", min=0),
    weight_decay_rate=Field(0.01, (float, int), "AdamW weight decay (not on "
                            "LayerNorm or bias).", min=0),
    debug=Field(False, bool, "Tiny run: few steps, small batches."),
    log_every=Field(100, int, "Steps between progress lines.", min=1),
    peak_tflops=Field(0.0, (float, int), "Peak TFLOP/s of one replica's "
                      "device for MFU; 0: the GPU's published "
                      "peak, else a cached matmul probe (pretrain/peak.py).",
                      min=0),
)

_PRETRAIN_FIELDS = dict(
    do_train=Field(True, bool, "Pre-train."),
    do_eval=Field(False, bool, "Evaluate the last checkpoint."),
    electra_objective=Field(True, bool, "False trains a plain MLM (BERT)."),
    gen_weight=Field(1.0, (float, int), "Weight of the MLM loss.", min=0),
    disc_weight=Field(50.0, (float, int), "lambda_D, weight of the "
                      "discriminator loss.", min=0),
    mask_prob=Field(0.15, (float, int), "Fraction of tokens masked.",
                    min=0, max=1, exclusive=("min", "max")),
    lr_decay_power=Field(1.0, (float, int), "1.0 is linear decay to 0."),
    num_warmup_steps=Field(10000, int, "Linear warmup steps.", min=0),
    iterations_per_loop=Field(200, int, "Train steps per tf.function call.",
                              min=1),
    save_checkpoints_steps=Field(1000, int, "Steps between checkpoints.",
                                 min=1),
    num_train_steps=Field(1000000, int, "Total train steps.", min=1),
    num_eval_steps=Field(100, int, "Eval batches.", min=1),
    keep_checkpoint_max=Field(5, int, "Checkpoints kept.", min=1),
    eval_every=Field(0, int, "Evaluate every this many steps (0: only at "
                     "the end with do_eval).", min=0),
    untied_generator_embeddings=Field(False, bool, "Give G its own "
                                      "embeddings."),
    untied_mlm_output=Field(False, bool, "G's MLM head (and in HP modes the "
                            "sampling head) gets its own output embedding "
                            "table (ELECTRA ties it to the input "
                            "embeddings)."),
    untied_generator=Field(True, bool, "G is its own transformer (ELECTRA's "
                           "default); False shares D's weights."),
    generator_layers=Field(1.0, (float, int), "G's layers as a fraction of "
                           "D's.", min=0, max=1, exclusive="min"),
    generator_hidden_size=Field(0.25, (float, int), "G's hidden size as a "
                                "fraction of D's.",
                                min=0, max=1, exclusive="min"),
    disallow_correct=Field(False, bool, "Never sample the original token."),
    temperature=Field(1.0, (float, int), "Sampling temperature of p_G.",
                      min=0, exclusive="min"),
    train_batch_size=Field(128, int, "Global train batch.", min=1),
    gradient_accumulation_steps=Field(
        1, int, "Split each replica's batch into this many micro-batches "
        "run in turn, one update per train_batch_size: the same update with "
        "a fraction of the activation memory.", min=1),
    eval_batch_size=Field(128, int, "Global eval batch.", min=1),
    adam_epsilon=Field(1e-6, (float, int), "AdamW epsilon.", min=0),
    clip_norm=Field(1.0, (float, int), "Gradient clipping global norm.", min=0),
    # Learned replacement sampling (docs/method.md §4-§12).
    sampling=Field("mlm", str, "Replacement sampler: 'mlm' (ELECTRA, from "
                   "p_G), 'uniform', 'hp_loss' or 'hp_dist' "
                   "(model/samplers.py).", choices=samplers.NAMES),
    focal_gamma=Field(0.0, (float, int), "Focal MLM loss gamma; 0 is "
                      "cross-entropy. Our choice: 0 default, 1 in HP runs.",
                      min=0),
    sampling_weight=Field(1.0, (float, int), "lambda_S, weight of the "
                          "sampling-head loss.", min=0),
    sampling_warmup_steps=Field(0, int, "Sample from p_G for this many steps "
                                "while the sampling head trains.", min=0),
    disc_importance_weighting=Field(False, bool, "Weight D's loss at masked "
                                    "positions by p_G/p_S (ablation)."),
    disc_importance_weight_clip=Field(10.0, (float, int), "Clip of the "
                                      "self-normalised p_G/p_S weights of "
                                      "disc_importance_weighting.",
                                      min=0, exclusive="min"),
    hp_dist_weight_clip=Field(10.0, (float, int), "HP-Dist: clip the "
                              "self-normalised importance weights here.",
                              min=0, exclusive="min"),
    hp_loss_min_estimate=Field(1e-6, (float, int), "HP-Loss: clamp L^_D "
                               "from below before its log.",
                               min=0, exclusive="min"),
    relative_position=Field(False, bool, "T5-style relative position bias in "
                            "G and D."),
    relative_num_buckets=Field(32, int, "Relative position buckets.", min=1),
    relative_max_distance=Field(128, int, "Largest bucketed distance.", min=1),
    max_predictions_per_seq=Field(None, (int, type(None)), "None: "
                                  "int((mask_prob + 0.005) * max_seq_length).",
                                  min=1),
    pretrain_tfrecords=Field(None, (str, type(None)), "Shard glob; default "
                             "<data-dir>/pretrain_tfrecords/"
                             "pretrain_data.tfrecord*."),
    eval_tfrecords=Field(None, (str, type(None)), "Held-out shard glob for "
                         "evaluation; default: the train glob."),
    vocab_file=Field(None, (str, type(None)), "Default <data-dir>/vocab.txt."),
    model_dir=Field(None, (str, type(None)), "Default "
                    "<data-dir>/models/<model-name>."),
    init_checkpoint=Field(None, (str, type(None)), "Warm start: a "
                          "pre-training checkpoint (prefix or directory), "
                          "Hugging Face folder(s) or a Google TF1 checkpoint "
                          "(interop/loader.py) "
                          "whose model weights start a run whose model dir "
                          "has no checkpoint yet. Weights it lacks (e.g. D's "
                          "head after a plain MLM) start fresh; the "
                          "optimizer and step start at 0."),
    shuffle_buffer=Field(10000, int, "Examples in the shuffle buffer.", min=1),
)

_FINETUNE_FIELDS = dict(
    task_names=Field(["sst"], list, "Tasks to fine-tune, in turn."),
    do_train=Field(True, bool, "Fine-tune."),
    do_eval=Field(True, bool, "Evaluate on dev."),
    write_test_outputs=Field(False, bool, "Write test-set predictions."),
    num_trials=Field(1, int, "Trials with different seeds.", min=1),
    init_checkpoint=Field(None, (str, type(None)), "Checkpoint to start from "
                          "(prefix, directory, pre-training model dir, HF "
                          "folder or Google TF1 checkpoint); "
                          "default: the pre-trained model in model_dir; "
                          "\"none\": random initialisation."),
    layerwise_lr_decay=Field(0.8, (float, int), "Layer-wise LR decay d; "
                             "see layerwise_lr_decay_rule.",
                             min=0, max=1, exclusive="min"),
    layerwise_lr_decay_rule=Field(
        "default", str, "How d scales the encoder's rates (n layers): "
        "\"default\" gives the top layer lr, layer i (0 = bottom) "
        "lr * d^(n-1-i), the embeddings lr * d^n; \"electra\" reproduces "
        "the TF1 ELECTRA code, every rate d^2 lower (top layer lr * d^2). "
        "Task heads get lr under both.", choices=("default", "electra")),
    classifier_pooling=Field("cls", str, "Sentence (pair) tasks: what the "
                             "head reads: \"cls\" (ELECTRA: the [CLS] "
                             "state) or \"mean\" (the mean over real "
                             "tokens).", choices=("cls", "mean")),
    num_train_epochs=Field(3.0, (float, int), "Training epochs.",
                           min=0, exclusive="min"),
    warmup_proportion=Field(0.1, (float, int), "Warmup fraction of steps.",
                            min=0, max=1, exclusive="max"),
    train_batch_size=Field(32, int, "Global train batch.", min=1),
    eval_batch_size=Field(32, int, "Eval batch.", min=1),
    predict_batch_size=Field(32, int, "Prediction batch.", min=1),
    adam_epsilon=Field(1e-6, (float, int), "AdamW epsilon.", min=0),
    clip_norm=Field(1.0, (float, int), "Gradient clipping global norm.", min=0),
    max_query_length=Field(64, int, "SQuAD: query tokens.", min=1),
    doc_stride=Field(128, int, "SQuAD: window stride.", min=1),
    n_best_size=Field(20, int, "SQuAD: n-best spans.", min=1),
    max_answer_length=Field(30, int, "SQuAD: longest answer in tokens.", min=1),
    answerable_weight=Field(0.5, (float, int), "SQuAD 2.0: weight of the "
                            "answerability loss.", min=0),
    relative_position=Field(False, bool, "Must match the pre-trained model."),
    relative_num_buckets=Field(32, int, "Must match the pre-trained model.",
                               min=1),
    relative_max_distance=Field(128, int, "Must match the pre-trained model.",
                                min=1),
    vocab_file=Field(None, (str, type(None)), "Default <data-dir>/vocab.txt."),
    model_dir=Field(None, (str, type(None)), "Default "
                    "<data-dir>/models/<model-name>."),
)

PRETRAIN_FIELDS = dict(_RUN_FIELDS, **_PRETRAIN_FIELDS)
FINETUNE_FIELDS = dict(_RUN_FIELDS, **_FINETUNE_FIELDS)
FINETUNE_FIELDS["learning_rate"] = Field(3e-4, (float, int), "Peak LR.",
                                         min=0)
FINETUNE_FIELDS["log_every"] = Field(50, int, "Steps between progress lines.",
                                     min=1)


def load_hparams(hparams):
  """Parses `--hparams`: a JSON object string, a path to a .json file, or None."""
  if hparams is None or hparams == "":
    return {}
  if isinstance(hparams, dict):
    return dict(hparams)
  text = hparams
  source = "--hparams"
  if not hparams.lstrip().startswith("{"):
    if not io_utils.exists(hparams):
      raise ConfigError("--hparams %r is neither a JSON object nor an "
                        "existing .json file." % hparams)
    source = hparams
    text = io_utils.read_text(hparams)
  try:
    parsed = json.loads(text)
  except ValueError as e:
    raise ConfigError("%s is not valid JSON: %s." % (source, e))
  if not isinstance(parsed, dict):
    raise ConfigError("%s must hold a JSON object of hyperparameters, got %s."
                      % (source, type(parsed).__name__))
  return parsed


def implied_vocab_size(hparams, vocab_file):
  """{"vocab_size": lines of vocab_file} unless hparams set it (checked).

  Returns {} when the file is missing (the caller reports that) or hparams
  already hold the right size; raises ConfigError when they disagree.
  """
  if not io_utils.exists(vocab_file):
    return {}
  size = sum(1 for line in io_utils.read_text(vocab_file).split("\n")
             if line.rstrip("\r"))
  if "vocab_size" not in hparams:
    return {"vocab_size": size}
  if hparams["vocab_size"] != size:
    raise ConfigError("hparam vocab_size is %r but %s has %d tokens; set "
                      "\"vocab_size\": %d or drop it to take the vocab's." %
                      (hparams["vocab_size"], vocab_file, size, size))
  return {}


def _type_names(types):
  names = {int: "int", float: "float", bool: "bool", str: "string",
           dict: "object", list: "list", type(None): "null"}
  return " or ".join(names.get(t, t.__name__) for t in types)


def _check_value(key, value, field):
  ok = any(isinstance(value, t) for t in field.types)
  # bool is an int in Python; a bool where a number is expected is a mistake.
  if isinstance(value, bool) and bool not in field.types:
    ok = False
  if not ok:
    raise ConfigError("hparam %r must be %s, got %s %r." % (
        key, _type_names(field.types), type(value).__name__, value))
  if field.choices and value not in field.choices:
    raise ConfigError("hparam %r must be one of %s, got %r." % (
        key, ", ".join(repr(c) for c in field.choices), value))


def _unknown_key_error(key, valid, what="hparam"):
  near = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.5)
  hint = (" Did you mean %r?" % near[0]) if near else ""
  return ConfigError("unknown %s %r.%s Valid keys: %s." % (
      what, key, hint, ", ".join(sorted(valid))))


class _Config(object):
  """Shared machinery: defaults, presets, user overrides, validation, saving."""

  FIELDS = {}

  def __init__(self, model_name, data_dir, **kwargs):
    self.model_name = model_name
    self.data_dir = data_dir
    for key in kwargs:
      if key not in self.FIELDS:
        raise _unknown_key_error(key, self.FIELDS)
      _check_value(key, kwargs[key], self.FIELDS[key])
    for key, field in self.FIELDS.items():
      default = field.default
      setattr(self, key, dict(default) if isinstance(default, dict) else
              list(default) if isinstance(default, list) else default)
    presets = self._presets(kwargs)
    for key, value in presets.items():
      if key not in kwargs:
        setattr(self, key, value)
    for key, value in kwargs.items():
      setattr(self, key, value)
    for key, field in self.FIELDS.items():
      if field.types == (float, int) and getattr(self, key) is not None:
        setattr(self, key, float(getattr(self, key)))
    self.user_hparams = dict(kwargs)
    self._derive()
    self._validate()

  def _presets(self, kwargs):
    return {}

  def _derive(self):
    self.vocab_file = self.vocab_file or os.path.join(self.data_dir,
                                                      "vocab.txt")
    self.model_dir = self.model_dir or os.path.join(self.data_dir, "models",
                                                    self.model_name)
    overrides = self.model_hparam_overrides
    for key in overrides:
      if key not in MODEL_HPARAM_DEFAULTS:
        raise _unknown_key_error(key, MODEL_HPARAM_DEFAULTS,
                                 "model_hparam_overrides key")
    model = dict(MODEL_HPARAM_DEFAULTS)
    model.update(MODEL_SIZES[self.model_size])
    model["vocab_size"] = self.vocab_size
    if self.embedding_size is not None:
      model["embedding_size"] = self.embedding_size
    model.update(overrides)
    self.model_hparams = model
    self.vocab_size = model["vocab_size"]
    self.embedding_size = model["embedding_size"]

  def _validate(self):
    for key, field in self.FIELDS.items():
      value = getattr(self, key)
      error = field.range_error(value)
      if error:
        raise ConfigError("hparam %r must be %s, got %r." % (key, error,
                                                             value))
    m = self.model_hparams
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "embedding_size", "vocab_size"):
      value = m[key]
      if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError("hparam %r must be an integer >= 1, got %r." %
                          (key, value))
    if m["hidden_size"] % m["num_attention_heads"]:
      raise ConfigError(
          "hidden_size %d is not divisible by num_attention_heads %d." %
          (m["hidden_size"], m["num_attention_heads"]))
    if self.max_seq_length > m["max_position_embeddings"]:
      raise ConfigError(
          "max_seq_length %d exceeds max_position_embeddings %d." %
          (self.max_seq_length, m["max_position_embeddings"]))
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
      if not 0 <= m[key] < 1:
        raise ConfigError("model hparam %r must be in [0, 1), got %r." %
                          (key, m[key]))
    if self.strategy == "tpu" and not self.tpu_name:
      raise ConfigError("strategy 'tpu' needs hparam 'tpu_name'.")

  def to_dict(self):
    d = {key: getattr(self, key) for key in self.FIELDS}
    d.update(model_name=self.model_name, data_dir=self.data_dir,
             model_hparams=self.model_hparams)
    d.update(self._derived_dict())
    return d

  def _derived_dict(self):
    return {}

  def save(self, path=None):
    """Writes the effective config atomically (default <model_dir>/config.json)."""
    path = path or os.path.join(self.model_dir, "config.json")
    write_json_atomic(path, self.to_dict())
    return path

  def __repr__(self):
    return json.dumps(self.to_dict(), indent=2, sort_keys=True)


class PretrainingConfig(_Config):
  """Hyperparameters of pre-training; defaults are ELECTRA-Small's."""

  FIELDS = PRETRAIN_FIELDS

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
    sampler = samplers.REGISTRY.get(kwargs.get("sampling"))
    if sampler is not None and sampler.learns:
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
    m = self.model_hparams
    gen = dict(m)
    if self.untied_generator:
      gen["hidden_size"] = max(1, int(round(
          m["hidden_size"] * self.generator_hidden_size)))
      gen["num_hidden_layers"] = max(1, int(round(
          m["num_hidden_layers"] * self.generator_layers)))
      gen["intermediate_size"] = 4 * gen["hidden_size"]
      gen["num_attention_heads"] = max(1, gen["hidden_size"] // 64)
    self.generator_hparams = gen

  def _validate(self):
    super(PretrainingConfig, self)._validate()
    if self.max_predictions_per_seq > self.max_seq_length - 2:
      raise ConfigError(
          "max_predictions_per_seq %d does not fit max_seq_length %d." %
          (self.max_predictions_per_seq, self.max_seq_length))
    if self.gen_weight == 0 and self.sampling == "mlm":
      raise ConfigError("gen_weight 0 leaves the MLM generator untrained "
                        "while sampling 'mlm' samples from it; use sampling "
                        "'uniform' for an untrained generator.")
    sampler = samplers.sampler_class(self.sampling)
    if self.disc_importance_weighting and not sampler.learns:
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
    if not self.electra_objective and self.sampling != "mlm":
      raise ConfigError("electra_objective false trains a plain MLM and "
                        "cannot use sampling %r." % self.sampling)
    if self.do_train is False and self.do_eval is False:
      raise ConfigError("do_train and do_eval are both false: nothing to do.")
    if not self.untied_generator and (self.generator_hidden_size != 1 or
                                      self.generator_layers != 1):
      raise ConfigError("untied_generator false shares the discriminator's "
                        "transformer, so generator_hidden_size and "
                        "generator_layers must be 1.0.")

  def _derived_dict(self):
    return dict(generator_hparams=self.generator_hparams)


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
