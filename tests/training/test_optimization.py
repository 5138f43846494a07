"""training/optimization.py: frozen variables keep their values for the first
`frozen_steps` steps (no update, no weight decay), then train as usual."""

import numpy as np
import tensorflow as tf

from training import optimization
from tests import pretrain_fixtures as pf


def test_frozen_variables_move_only_after_frozen_steps():
  frozen = tf.Variable(np.ones([3, 2], np.float32), name="encoder_kernel")
  free = tf.Variable(np.ones([3, 2], np.float32), name="head_kernel")
  optimizer = optimization.create_optimizer(
      1e-2, 100, 0, weight_decay_rate=0.1, frozen=[frozen.name],
      frozen_steps=2)
  grads = [tf.ones_like(frozen), tf.ones_like(free)]
  for step in range(3):
    before = [frozen.numpy(), free.numpy()]
    optimizer.apply_gradients(zip(grads, (frozen, free)))
    moved = [np.abs(v.numpy() - b).max() for v, b in zip((frozen, free),
                                                           before)]
    assert moved[1] > 1e-3, step  # The head trains from the first step.
    if step < 2:
      assert moved[0] == 0.0, step  # Not even weight decay.
    else:
      assert moved[0] > 1e-3
  assert int(optimizer.iterations.numpy()) == 3


def test_no_frozen_steps_freezes_nothing():
  var = tf.Variable(np.ones([2], np.float32), name="v")
  optimizer = optimization.create_optimizer(1e-2, 100, 0, frozen=[var.name],
                                            frozen_steps=0)
  optimizer.apply_gradients([(tf.ones_like(var), var)])
  assert np.abs(var.numpy() - 1.0).max() > 1e-3


def test_the_frozen_names_are_ds_encoder_with_the_shared_embeddings():
  from model import builders  # pylint: disable=g-import-not-at-top
  from tests import pretrain_fixtures  # pylint: disable=g-import-not-at-top
  model = pf.build_pretrainer_with_variables(
      pretrain_fixtures.tiny_config())
  names = set(builders.encoder_variable_names(model))
  word = model.discriminator.encoder.embeddings.word_embeddings.embeddings
  assert word.name in names
  heads = (model.discriminator.trainable_variables +
           model.generator.trainable_variables)
  fresh = {v.name for v in heads} - {
      v.name for v in model.discriminator.encoder.trainable_variables}
  assert fresh and not fresh & names  # G and every head train from step 0.
