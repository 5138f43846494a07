"""From any loadable source to a built, loaded pre-training model.

`source_hparams` turns what a source records (HF config.json, TF1 shapes)
into our hparams; `pretraining_config` merges them with the user's (the
user's win, and `loader.load_into` then names any size that disagrees);
`model.builders.build_pretrainer_with_variables` then builds the model.
"""

import posixpath

import numpy as np

import configure
from interop import loader
from util import io_utils
from util.errors import UserError

_ENCODER_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "max_position_embeddings",
                 "type_vocab_size", "hidden_act")


def source_hparams(source, num_attention_heads=None):
  """Our hparams for a HF or TF1 `source`: sizes, tying, and its vocab.txt.

  Returns {} for our own checkpoints (their config.json is read instead).
  """
  if loader.detect(source) == "ours":
    return {}
  data = loader.read_source(source, num_attention_heads)
  sizes = data["sizes"]
  disc = sizes.get("discriminator") or sizes.get("generator")
  hparams = dict(vocab_size=disc["vocab_size"],
                 embedding_size=disc["embedding_size"],
                 model_hparam_overrides={k: disc[k] for k in _ENCODER_KEYS
                                         if k in disc})
  default_length = configure.PretrainingConfig.FIELDS["max_seq_length"].default
  if disc["max_position_embeddings"] < default_length:
    hparams["max_seq_length"] = disc["max_position_embeddings"]
  gen = sizes.get("generator")
  if gen is not None and "discriminator" in sizes:
    hparams["generator_hidden_size"] = (
        float(gen["hidden_size"]) / disc["hidden_size"])
    hparams["generator_layers"] = (
        float(gen["num_hidden_layers"]) / disc["num_hidden_layers"])
  tensors = data["tensors"]
  word = "electra.embeddings.word_embeddings.weight"
  if (word in tensors.get("generator", {}) and
      word in tensors.get("discriminator", {}) and not np.array_equal(
          tensors["generator"][word], tensors["discriminator"][word])):
    hparams["untied_generator_embeddings"] = True
  if "generator_lm_head.weight" in tensors.get("generator", {}) and not (
      np.array_equal(tensors["generator"]["generator_lm_head.weight"],
                     tensors["generator"].get(word))):
    hparams["untied_mlm_output"] = True
  directory = (source if io_utils.is_dir(source) else
               posixpath.dirname(source))
  for folder in (directory, posixpath.join(directory, "discriminator"),
                 posixpath.join(directory, "generator")):
    if io_utils.is_file(posixpath.join(folder, "vocab.txt")):
      hparams["vocab_file"] = posixpath.join(folder, "vocab.txt")
      break
  return hparams


def merge_hparams(source, user):
  """`source` hparams under the user's; model_hparam_overrides merged."""
  merged = dict(source)
  merged.update(user)
  if "model_hparam_overrides" in source and "model_hparam_overrides" in user:
    merged["model_hparam_overrides"] = dict(
        source["model_hparam_overrides"], **user["model_hparam_overrides"])
  return merged


def with_source_hparams(user_hparams, fields):
  """`user_hparams` with what an HF or TF1 `init_checkpoint` records (sizes,
  tying, its vocab.txt) filled in where the user set nothing; only keys of
  `fields` (a config class's FIELDS). Our own checkpoints and "none" add
  nothing. A size the user gives that differs from the source's is refused
  when the weights load (`loader.load_into`), naming both values.
  """
  source = user_hparams.get("init_checkpoint")
  if not source or source == "none" or not loader.is_foreign(source):
    return user_hparams
  heads = user_hparams.get("model_hparam_overrides", {}).get(
      "num_attention_heads")
  found = source_hparams(source, {"discriminator": heads} if heads else None)
  return merge_hparams({k: v for k, v in found.items() if k in fields},
                       user_hparams)


def pretraining_config(model_name, data_dir, user_hparams, source=None,
                       num_attention_heads=None):
  """A `PretrainingConfig` whose sizes default to `source`'s."""
  hparams = dict(user_hparams)
  if source is not None:
    hparams = merge_hparams(source_hparams(source, num_attention_heads),
                            hparams)
  try:
    return configure.PretrainingConfig(model_name, data_dir, **hparams)
  except configure.ConfigError as e:
    raise UserError("%s (hparams taken from %s and --hparams)" % (e, source))
