"""A fixed generator (hparam `generator_checkpoint`, Fast-ELECTRA): G starts
from another run's generator and is not trained; D and a learned sampling
head are."""

import os

import numpy as np
import pytest
import tensorflow as tf

from interop import checkpoints
from tests import pretrain_fixtures as fx

# A plain MLM whose transformer is D's (hidden 32): the generator to fix.
MLM = dict(electra_objective=False, untied_generator=False,
           generator_hidden_size=1.0)
FIXED = dict(untied_generator=True, untied_generator_embeddings=True,
             generator_intermediate_size=64, generator_num_attention_heads=2,
             generator_hidden_size=1.0, temperature=2.0,
             temperature_final=1.0)


def _variables(model_dir, prefix):
  """{checkpoint key: value} of the latest checkpoint in `model_dir`
  whose object path starts with `prefix`."""
  path = tf.train.latest_checkpoint(
      checkpoints.pretrained_checkpoint_dir(model_dir))
  reader = tf.train.load_checkpoint(path)
  return {k: reader.get_tensor(k)
          for k in reader.get_variable_to_shape_map()
          if k.startswith(prefix) and "OPTIMIZER_SLOT" not in k}


@pytest.fixture(scope="module")
def mlm_run(tmp_path_factory):
  root = tmp_path_factory.mktemp("fixed_generator")
  data_dir, proc = fx.run_tiny_pretraining(root, "mlm", **MLM)
  assert proc.returncode == 0, proc.stderr[-2000:]
  return data_dir, os.path.join(data_dir, "models", "mlm")


@pytest.mark.parametrize("sampling", ["mlm", "hp_loss"])
def test_the_fixed_generator_keeps_the_loaded_weights(mlm_run, sampling):
  data_dir, mlm_dir = mlm_run
  name = "fixed_" + sampling
  _, proc = fx.run_tiny_pretraining(
      data_dir, name, sampling=sampling,
      generator_checkpoint=mlm_dir, **FIXED)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert "Fixed generator from" in proc.stdout
  run_dir = os.path.join(data_dir, "models", name)
  source = _variables(mlm_dir, "model/discriminator/encoder/")
  fixed = _variables(run_dir, "model/generator/encoder/")
  assert len(fixed) == len(source) > 0
  # The MLM's transformer, saved under D there, is G's here, unchanged
  # after 2 steps; D itself trained away from its start.
  for key, value in fixed.items():
    np.testing.assert_array_equal(
        value, source[key.replace("model/generator/", "model/discriminator/")])
  trained = _variables(run_dir, "model/discriminator/encoder/")
  assert any(not np.array_equal(trained[k], source[k]) for k in source)
  mlm_head = _variables(run_dir, "model/generator/mlm_head/")
  source_head = _variables(mlm_dir, "model/generator/mlm_head/")
  assert mlm_head and all(np.array_equal(v, source_head[k])
                          for k, v in mlm_head.items())
  if sampling == "hp_loss":
    assert _variables(run_dir, "model/generator/sampling_head/")


def test_a_fixed_generator_needs_its_own_embeddings(mlm_run):
  data_dir, mlm_dir = mlm_run
  hparams = dict(FIXED, untied_generator_embeddings=False)
  _, proc = fx.run_tiny_pretraining(data_dir, "shared",
                                    generator_checkpoint=mlm_dir, **hparams)
  assert proc.returncode == 2
  assert "untied_generator_embeddings true" in proc.stderr


def test_a_generator_of_other_sizes_is_refused(mlm_run):
  data_dir, mlm_dir = mlm_run
  hparams = dict(FIXED, generator_hidden_size=0.5)
  _, proc = fx.run_tiny_pretraining(data_dir, "other",
                                    generator_checkpoint=mlm_dir, **hparams)
  assert proc.returncode == 2
  assert "generator_checkpoint" in proc.stderr
