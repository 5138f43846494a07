"""A model directory's config.json read back (interop/saved_config.py)."""

import json

import pytest
import tensorflow as tf

import configure
from configure import FinetuningConfig, PretrainingConfig
from interop import checkpoints
from interop import saved_config
from util.errors import UserError


def test_saved_network_hparams_reads_old_and_new_config_files():
  c = PretrainingConfig("m", "/d", vocab_size=100, embedding_size=32)
  new = json.loads(json.dumps(c.to_dict()))
  old = json.loads(json.dumps(new))  # Older files: sizes inside too.
  old["model_hparams"].update(vocab_size=100, embedding_size=32)
  for saved in (new, old):
    for role in ("discriminator", "generator"):
      assert saved_config.saved_network_hparams(saved, role) == (
          c.network_hparams(role))


def test_saved_hparams_rebuild_the_same_config():
  c = FinetuningConfig("m", "/d", vocab_size=100, embedding_size=32,
                       model_hparam_overrides={"hidden_size": 64},
                       task_names=["sst"], learning_rate=1e-3)
  saved = json.loads(json.dumps(c.to_dict()))
  hparams = saved_config.saved_hparams(saved, configure.FINETUNE_FIELDS)
  assert "model_dir" not in hparams
  again = FinetuningConfig("m", "/d", **hparams)
  assert again.to_dict() == c.to_dict()


def _resumable(model_dir, **hparams):
  config = PretrainingConfig("m", "/d", vocab_size=100,
                             model_dir=str(model_dir), **hparams)
  config.save()
  tf.train.Checkpoint(v=tf.Variable(1.0)).save(
      str(checkpoints.pretrained_checkpoint_dir(str(model_dir)) + "/ckpt"))
  return config


def test_resume_with_the_same_shapes_passes(tmp_path):
  config = _resumable(tmp_path, model_hparam_overrides={"hidden_size": 64})
  saved_config.check_saved_config(config)
  # Hparams that change no variable's shape may differ.
  saved_config.check_saved_config(PretrainingConfig(
      "m", "/d", vocab_size=100, model_dir=str(tmp_path), learning_rate=1.0,
      model_hparam_overrides={"hidden_size": 64}))


def test_a_resume_names_the_hparams_it_changes(tmp_path):
  _resumable(tmp_path, model_hparam_overrides={"hidden_size": 64},
             learning_rate=1e-3, focal_gamma=1)
  same = PretrainingConfig("m", "/d", vocab_size=100, model_dir=str(tmp_path),
                           model_hparam_overrides={"hidden_size": 64},
                           learning_rate=0.001, focal_gamma=1.0)
  assert saved_config.changed_on_resume(same, configure.PRETRAIN_FIELDS) == []
  changed = PretrainingConfig("m", "/d", vocab_size=100,
                              model_dir=str(tmp_path),
                              model_hparam_overrides={"hidden_size": 64},
                              learning_rate=5e-4, focal_gamma=2.0)
  assert saved_config.changed_on_resume(changed, configure.PRETRAIN_FIELDS) == [
      "focal_gamma 1.0 -> 2.0", "learning_rate 0.001 -> 0.0005"]
  # Nothing to resume: nothing changed.
  fresh = PretrainingConfig("m", "/d", vocab_size=100,
                            model_dir=str(tmp_path / "new"))
  assert saved_config.changed_on_resume(fresh, configure.PRETRAIN_FIELDS) == []


def test_resume_with_other_shapes_names_what_differs(tmp_path):
  _resumable(tmp_path, model_hparam_overrides={"hidden_size": 64})
  other = PretrainingConfig("m", "/d", vocab_size=100, model_dir=str(tmp_path),
                            model_hparam_overrides={"hidden_size": 128},
                            sampling="hp_loss")
  with pytest.raises(UserError, match=r"another shape \(differs in: "
                     r"sampling, hidden_size \(64 saved, 128 now\)"):
    saved_config.check_saved_config(other)


def test_a_directory_without_checkpoints_is_not_checked(tmp_path):
  PretrainingConfig("m", "/d", vocab_size=100, model_dir=str(tmp_path)).save()
  saved_config.check_saved_config(PretrainingConfig(
      "m", "/d", vocab_size=200, model_dir=str(tmp_path)))


def test_adopted_from_and_generator_sizes_are_saved_and_rebuilt(tmp_path):
  c = PretrainingConfig("m", "/d", vocab_size=100, model_dir=str(tmp_path),
                        generator_intermediate_size=48, adopted_from={
                            "source": "/s", "hparams": {
                                "generator_intermediate_size": 48}})
  saved = json.loads(json.dumps(c.to_dict()))
  assert saved["adopted_from"]["source"] == "/s"
  hparams = saved_config.saved_hparams(saved, configure.PRETRAIN_FIELDS)
  assert "adopted_from" not in hparams
  again = PretrainingConfig("m", "/d", **hparams)
  assert again.generator_hparams == c.generator_hparams
  assert again.generator_hparams["intermediate_size"] == 48
  # A checkpoint's config.json: beside it, or its model directory's.
  c.save()
  prefix = str(tmp_path / "checkpoints" / "ckpt-1")
  assert saved_config.config_beside(prefix) == str(tmp_path / "config.json")
  assert saved_config.config_beside("/nowhere/ckpt-1") is None
