"""The transformer's shape: the released sizes, the defaults, and the
checks of `model_hparam_overrides`.

`resolve` turns a `model_size` preset, the user's overrides and the
top-level `embedding_size` into the transformer hparams a network is built
from; `check` rejects shapes no network can have. configure.py's config
objects call both.
"""

from util.hparams import ConfigError
from util.hparams import unknown_key_error

# Transformer sizes of docs/method.md §14 (ELECTRA's released models).
MODEL_SIZES = {
    "small": dict(num_hidden_layers=12, hidden_size=256, num_attention_heads=4,
                  intermediate_size=1024, embedding_size=128),
    "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12,
                 intermediate_size=3072, embedding_size=768),
    "large": dict(num_hidden_layers=24, hidden_size=1024,
                  num_attention_heads=16, intermediate_size=4096,
                  embedding_size=1024),
}

# Fields of the transformer that `model_hparam_overrides` may change
# (`model_hparams`). The embedding sizes, shared by generator and
# discriminator, are the top-level `vocab_size` and `embedding_size`.
MODEL_HPARAM_DEFAULTS = dict(
    hidden_size=256, num_hidden_layers=12, num_attention_heads=4,
    intermediate_size=1024, hidden_act="gelu", hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1, max_position_embeddings=512,
    type_vocab_size=2, initializer_range=0.02)
EMBEDDING_KEYS = ("vocab_size", "embedding_size")


def resolve(model_size, overrides, embedding_size=None):
  """(model_hparams, embedding_size) of a `model_size` preset with the
  user's `model_hparam_overrides`; `embedding_size` None takes the
  preset's. A ConfigError for an override key that is top-level or
  unknown."""
  for key in overrides:
    if key in EMBEDDING_KEYS:
      raise ConfigError(
          "model_hparam_overrides key %r is a top-level hparam: set "
          "\"%s\": %r beside model_hparam_overrides, not inside it." % (
              key, key, overrides[key]))
    if key not in MODEL_HPARAM_DEFAULTS:
      raise unknown_key_error(key, MODEL_HPARAM_DEFAULTS,
                              "model_hparam_overrides key")
  preset = dict(MODEL_SIZES[model_size])
  if embedding_size is None:
    embedding_size = preset["embedding_size"]
  del preset["embedding_size"]
  model = dict(MODEL_HPARAM_DEFAULTS)
  model.update(preset)
  model.update(overrides)
  return model, embedding_size


def check(model_hparams, max_seq_length):
  """A ConfigError naming the first hparam of `model_hparams` that no
  transformer over `max_seq_length` tokens can have."""
  m = model_hparams
  for key in ("hidden_size", "num_hidden_layers", "num_attention_heads",
              "intermediate_size"):
    value = m[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
      raise ConfigError("hparam %r must be an integer >= 1, got %r." %
                        (key, value))
  if m["hidden_size"] % m["num_attention_heads"]:
    raise ConfigError(
        "hidden_size %d is not divisible by num_attention_heads %d." %
        (m["hidden_size"], m["num_attention_heads"]))
  if max_seq_length > m["max_position_embeddings"]:
    raise ConfigError(
        "max_seq_length %d exceeds max_position_embeddings %d." %
        (max_seq_length, m["max_position_embeddings"]))
  for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
    if not 0 <= m[key] < 1:
      raise ConfigError("model hparam %r must be in [0, 1), got %r." %
                        (key, m[key]))


def generator_hparams(model_hparams, hidden_fraction, layers_fraction,
                      intermediate_size=None, num_attention_heads=None):
  """An untied generator's transformer hparams from D's `model_hparams`.

  Width and depth are fractions of D's (rounded, at least 1); the FFN is
  `intermediate_size` or 4x the width (ELECTRA's rule); the heads are
  `num_attention_heads` or the width over D's head width (64 in every
  preset, so Google's width // 64), so a generator of D's width has D's
  heads.
  """
  m = model_hparams
  gen = dict(m)
  gen["hidden_size"] = max(1, int(round(m["hidden_size"] * hidden_fraction)))
  gen["num_hidden_layers"] = max(1, int(round(
      m["num_hidden_layers"] * layers_fraction)))
  gen["intermediate_size"] = intermediate_size or 4 * gen["hidden_size"]
  head_size = max(1, m["hidden_size"] // m["num_attention_heads"])
  gen["num_attention_heads"] = num_attention_heads or max(
      1, gen["hidden_size"] // head_size)
  return gen
