"""Freshly built models start with distinct random weights.

An unseeded tf_keras initializer instance shared by two layers gives the
second the values of the first (for a larger shape, its leading values for
a smaller one). The check compares the leading values of every pair of
randomly initialised weights of each kind of model.
"""

import itertools

import numpy as np
import pytest
import tf_keras

from finetune.model import FinetuningModel
from tests import finetune_fixtures as ff
from tests import pretrain_fixtures as fx


def _repeated_pairs(model):
  """Names of weight pairs whose flattened values agree on their common
  prefix, among weights that are not constant (zeros/ones initialised)."""
  weights = [(w.name, w.numpy().ravel()) for w in model.weights]
  weights = [(name, v) for name, v in weights if v.size > 1 and np.ptp(v) > 0]
  assert len(weights) > 10
  repeated = []
  for (name_a, a), (name_b, b) in itertools.combinations(weights, 2):
    n = min(a.size, b.size)
    if np.array_equal(a[:n], b[:n]):
      repeated.append((name_a, name_b))
  return repeated


@pytest.mark.parametrize("sampling", ["mlm", "hp_loss", "hp_dist"])
def test_pretraining_model_weights_are_distinct(sampling):
  config = fx.tiny_config(sampling=sampling, relative_position=True,
                          untied_generator_embeddings=True,
                          untied_mlm_output=True)
  tf_keras.utils.set_random_seed(1)
  model = fx.build_pretrainer(config)
  model(fx.make_features(2, 16, 3, 40), training=False)
  assert _repeated_pairs(model) == []


@pytest.mark.parametrize("task_name", ["sst", "sts", "squadv1", "squadv2",
                                       "chunk"])
def test_finetuning_model_weights_are_distinct(task_name):
  """Classification, regression, SQuAD 1.1 and 2.0, and tagging heads."""
  config = ff.tiny_config(task_names=[task_name], relative_position=True)
  tokenizer = ff.build_tokenizer(config)
  task = ff.get_task(config, task_name, tokenizer)
  tf_keras.utils.set_random_seed(1)
  model = FinetuningModel(fx.build_discriminator_encoder(config),
                          task.build_head())
  features = task.load("train").features
  model({k: v[:2] for k, v in features.items()}, training=False)
  assert _repeated_pairs(model) == []
