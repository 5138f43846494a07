"""model/transformer_hparams.py: presets, overrides and shape checks."""

import pytest

from model import transformer_hparams as th
from util.hparams import ConfigError


def test_a_preset_with_overrides_and_its_embedding_size():
  model, embedding = th.resolve("base", {"num_hidden_layers": 2})
  assert embedding == 768
  assert model["hidden_size"] == 768 and model["num_hidden_layers"] == 2
  assert "embedding_size" not in model
  assert set(model) == set(th.MODEL_HPARAM_DEFAULTS)
  assert th.resolve("small", {}, embedding_size=64)[1] == 64


def test_bad_override_keys_name_the_fix():
  with pytest.raises(ConfigError, match="top-level hparam"):
    th.resolve("small", {"embedding_size": 64})
  with pytest.raises(ConfigError, match="hidden_size"):
    th.resolve("small", {"hiden_size": 64})


@pytest.mark.parametrize("change,message", [
    (dict(hidden_size=0), "integer >= 1"),
    (dict(hidden_size=100, num_attention_heads=3), "not divisible"),
    (dict(max_position_embeddings=64), "exceeds max_position_embeddings"),
    (dict(hidden_dropout_prob=1.0), r"\[0, 1\)"),
])
def test_shapes_no_network_can_have_are_rejected(change, message):
  model, _ = th.resolve("small", change)
  with pytest.raises(ConfigError, match=message):
    th.check(model, max_seq_length=128)
  th.check(th.resolve("small", {})[0], max_seq_length=128)


def test_generator_hparams_keep_d_head_width_and_ffn_rule():
  d = dict(th.MODEL_HPARAM_DEFAULTS, hidden_size=384,
           num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
  quarter = th.generator_hparams(d, 0.25, 1.0)
  assert (quarter["hidden_size"], quarter["num_hidden_layers"],
          quarter["intermediate_size"], quarter["num_attention_heads"]) == (
              96, 6, 384, 3)
  full = th.generator_hparams(d, 1.0, 1.0 / 3, 1536)
  assert (full["num_hidden_layers"], full["num_attention_heads"],
          full["intermediate_size"]) == (2, 12, 1536)
  assert th.generator_hparams(
      d, 0.5, 1.0, num_attention_heads=4)["num_attention_heads"] == 4
