"""Config defaults, presets, hparams parsing and errors."""

import json
import os

import pytest

import configure
from configure import ConfigError, FinetuningConfig, PretrainingConfig
from model import transformer_hparams
from util.hparams import load_hparams


def test_defaults_are_electra_small():
  c = PretrainingConfig("m", "/data")
  assert c.model_hparams["hidden_size"] == 256
  assert c.model_hparams["num_hidden_layers"] == 12
  assert c.embedding_size == 128
  assert c.learning_rate == 5e-4 and c.disc_weight == 50.0
  assert c.max_predictions_per_seq == int((0.15 + 0.005) * 128)
  assert c.generator_hparams["hidden_size"] == 64
  assert c.vocab_file == os.path.join("/data", "vocab.txt")
  assert c.model_dir == os.path.join("/data", "models", "m")
  assert c.sampling == "mlm" and c.focal_gamma == 0.0


def test_presets_and_user_values_win():
  c = PretrainingConfig("m", "/d", model_size="base", learning_rate=1e-3)
  assert c.model_hparams["hidden_size"] == 768
  assert c.learning_rate == 1e-3
  assert c.train_batch_size == 256
  assert PretrainingConfig("m", "/d", sampling="hp_loss").focal_gamma == 1.0
  assert PretrainingConfig("m", "/d", sampling="hp_dist",
                           focal_gamma=0).focal_gamma == 0.0
  assert PretrainingConfig("m", "/d", debug=True).num_train_steps == 20
  f = FinetuningConfig("m", "/d", model_size="large")
  assert f.layerwise_lr_decay == 0.9


def test_unknown_key_suggests_near_miss():
  with pytest.raises(ConfigError, match="Did you mean 'mask_prob'"):
    PretrainingConfig("m", "/d", mask_prb=0.2)
  with pytest.raises(ConfigError, match="Did you mean 'hidden_size'"):
    PretrainingConfig("m", "/d", model_hparam_overrides={"hiden_size": 8})


@pytest.mark.parametrize("bad,match", [
    (dict(train_batch_size="8"), "must be int"),
    (dict(learning_rate=True), "must be float or int"),
    (dict(mask_prob=1.0), r"\(0, 1\)"),
    (dict(mask_prob=0.0), r"\(0, 1\)"),
    (dict(disc_weight=-1.0), ">= 0"),
    (dict(train_batch_size=0), ">= 1"),
    (dict(sampling="hp"), "must be one of"),
    (dict(model_hparam_overrides={"hidden_size": 30,
                                  "num_attention_heads": 4}), "divisible"),
    (dict(disc_importance_weighting=True), "needs sampling"),
    (dict(disc_importance_weight_clip=0.0), "> 0"),
    (dict(max_seq_length=1024), "max_position_embeddings"),
    (dict(do_train=False, do_eval=False), "nothing to do"),
])
def test_bad_values_are_refused(bad, match):
  with pytest.raises(ConfigError, match=match):
    PretrainingConfig("m", "/d", **bad)


def test_hparams_from_json_string_and_file(tmp_path):
  assert load_hparams('{"seed": 3}') == {"seed": 3}
  path = tmp_path / "h.json"
  path.write_text(json.dumps({"sampling": "hp_dist"}))
  assert load_hparams(str(path)) == {"sampling": "hp_dist"}
  with pytest.raises(ConfigError, match="not valid JSON"):
    load_hparams('{"seed": }')
  with pytest.raises(ConfigError, match="JSON object"):
    load_hparams("[1, 2]")
  with pytest.raises(ConfigError, match="neither"):
    load_hparams(str(tmp_path / "missing.json"))


def test_save_is_complete_json(tmp_path):
  c = PretrainingConfig("m", str(tmp_path), sampling="hp_loss")
  path = c.save()
  saved = json.loads(open(path).read())
  assert saved["sampling"] == "hp_loss" and saved["focal_gamma"] == 1.0
  assert saved["model_hparams"]["hidden_size"] == 256
  assert not [f for f in os.listdir(os.path.dirname(path))
              if f.startswith(".tmp")]


def test_finetuning_config_checks():
  with pytest.raises(ConfigError, match="task_names"):
    FinetuningConfig("m", "/d", task_names=[])
  with pytest.raises(ConfigError, match="layerwise_lr_decay"):
    FinetuningConfig("m", "/d", layerwise_lr_decay=1.5)
  assert FinetuningConfig("m", "/d").layerwise_lr_decay_rule == "default"
  assert FinetuningConfig("m", "/d", layerwise_lr_decay_rule="electra"
                          ).layerwise_lr_decay_rule == "electra"
  with pytest.raises(ConfigError, match="layerwise_lr_decay_rule.*one of"):
    FinetuningConfig("m", "/d", layerwise_lr_decay_rule="bert")


def _outside(field):
  """A value just outside `field`'s declared range, of its type."""
  step = 1 if field.types == (int,) else 0.5
  if field.min is not None:
    return field.min if "min" in field.exclusive else field.min - step
  return field.max if "max" in field.exclusive else field.max + step


@pytest.mark.parametrize("config_cls,fields", [
    (PretrainingConfig, configure.PRETRAIN_FIELDS),
    (FinetuningConfig, configure.FINETUNE_FIELDS)],
    ids=["pretraining", "finetuning"])
def test_every_declared_range_is_enforced(config_cls, fields):
  """Field min/max are the only range checks: each refuses a value just
  outside, naming the key, and accepts the default."""
  ranged = {k: f for k, f in fields.items()
            if f.min is not None or f.max is not None}
  assert len(ranged) > 15
  for key, field in ranged.items():
    assert field.range_error(field.default) is None, key
    with pytest.raises(ConfigError, match="hparam %r must be" % key):
      config_cls("m", "/d", **{key: _outside(field)})


def test_embedding_sizes_live_at_the_top_level_only():
  c = PretrainingConfig("m", "/d", model_size="base", vocab_size=100)
  assert c.embedding_size == 768 and c.vocab_size == 100
  for hparams in (c.model_hparams, c.generator_hparams):
    assert not set(transformer_hparams.EMBEDDING_KEYS) & set(hparams)
  for role in ("discriminator", "generator"):
    assert c.network_hparams(role)["embedding_size"] == 768
    assert c.network_hparams(role)["vocab_size"] == 100
  assert c.network_hparams("generator")["hidden_size"] == 256
  assert PretrainingConfig("m", "/d", embedding_size=64).network_hparams()[
      "embedding_size"] == 64
  for key in transformer_hparams.EMBEDDING_KEYS:
    with pytest.raises(ConfigError, match="%r is a top-level hparam: set "
                       "\"%s\": 64 beside" % (key, key)):
      PretrainingConfig("m", "/d", model_hparam_overrides={key: 64})


def test_generator_ffn_and_heads_follow_the_rule_unless_set():
  default = PretrainingConfig("m", "/d").generator_hparams
  assert default["intermediate_size"] == 4 * default["hidden_size"] == 256
  c = PretrainingConfig("m", "/d", generator_intermediate_size=100,
                        generator_num_attention_heads=2)
  assert (c.generator_hparams["intermediate_size"],
          c.generator_hparams["num_attention_heads"]) == (100, 2)
  assert c.model_hparams["intermediate_size"] == 1024  # D's own.
  with pytest.raises(ConfigError, match="hidden size 64 is not divisible by "
                     "generator_num_attention_heads 3"):
    PretrainingConfig("m", "/d", generator_num_attention_heads=3)


@pytest.mark.parametrize("config_cls,fields", [
    (PretrainingConfig, configure.PRETRAIN_FIELDS),
    (FinetuningConfig, configure.FINETUNE_FIELDS)],
    ids=["pretraining", "finetuning"])
def test_every_float_field_refuses_nan_and_infinity(config_cls, fields):
  """NaN passes `value < min`; each float field refuses it and +-inf up
  front, naming the key, as does a NaN nested in an object."""
  floats = [k for k, f in fields.items() if float in f.types]
  assert len(floats) >= 10
  for key in floats:
    for bad in (float("nan"), float("inf"), -float("inf")):
      with pytest.raises(ConfigError, match="hparam %r must be a finite "
                         "number, got -?(nan|inf)" % key):
        config_cls("m", "/d", **{key: bad})
  with pytest.raises(ConfigError, match="hparam 'model_hparam_overrides' "
                     "must be a finite number, got nan"):
    PretrainingConfig("m", "/d", model_hparam_overrides=dict(
        layer_norm_eps=float("nan")))
