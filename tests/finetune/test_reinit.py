"""finetune/reinit.py: the top layers of a pre-trained encoder get fresh
weights, the rest keep theirs."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from finetune import reinit
from tests import pretrain_fixtures as fx
from util.errors import UserError

SEQ = 8


def _inputs():
  ids = tf.constant([[2, 5, 6, 7, 3, 0, 0, 0]], tf.int32)
  return dict(input_ids=ids, input_mask=tf.cast(ids > 0, tf.int32),
              segment_ids=tf.zeros_like(ids))


def _pretrained_encoder():
  tf_keras.utils.set_random_seed(3)
  encoder = fx.build_discriminator_encoder(fx.tiny_config(seq_len=SEQ))
  encoder(_inputs(), training=False)
  # "Pre-trained" weights, unlike any fresh initialisation: all 0.5.
  for variable in encoder.weights:
    variable.assign(tf.fill(variable.shape, 0.5))
  return encoder


def test_the_top_layer_gets_fresh_weights_and_the_rest_keep_theirs():
  encoder = _pretrained_encoder()
  top = encoder.transformer_layers[-1]
  replaced = reinit.reinitialise_top_layers(encoder, 1, _inputs())
  assert replaced == len(top.weights) > 0
  top_ids = {id(v) for v in top.weights}
  for variable in encoder.weights:
    values = variable.numpy()
    if id(variable) in top_ids:
      assert not np.all(values == 0.5), variable.name
    else:
      assert np.all(values == 0.5), variable.name
  # Fresh as a new encoder's: kernels random, LayerNorm scales 1.
  scales = [v.numpy() for v in top.weights if "gamma" in v.name]
  assert scales and all(np.all(s == 1.0) for s in scales)


def test_zero_layers_changes_nothing_and_too_many_is_a_user_error():
  encoder = _pretrained_encoder()
  assert reinit.reinitialise_top_layers(encoder, 0, _inputs()) == 0
  assert all(np.all(v.numpy() == 0.5) for v in encoder.weights)
  with pytest.raises(UserError, match="reinit_top_layers is 3 but the "
                     "encoder has 2 layers"):
    reinit.reinitialise_top_layers(encoder, 3, _inputs())


def test_shrink_to_fresh_mixes_every_weight_with_a_fresh_encoders():
  encoder = _pretrained_encoder()
  changed = reinit.shrink_to_fresh(encoder, 0.25, _inputs())
  assert changed == len(encoder.weights) > 0
  # What the fresh encoder gave each weight: (w - 0.25 * 0.5) / 0.75.
  for variable in encoder.weights:
    fresh = (variable.numpy() - 0.125) / 0.75
    if "gamma" in variable.name:
      np.testing.assert_allclose(fresh, 1.0, atol=1e-5)
    elif "beta" in variable.name or "bias" in variable.name:
      np.testing.assert_allclose(fresh, 0.0, atol=1e-5)
    elif "kernel" in variable.name or "embeddings" in variable.name:
      assert 0.005 < fresh.std() < 0.05, variable.name  # initializer 0.02.
      assert abs(fresh.mean()) < 0.01, variable.name


def test_shrink_to_fresh_keep_1_changes_nothing_and_out_of_range_fails():
  encoder = _pretrained_encoder()
  assert reinit.shrink_to_fresh(encoder, 1.0, _inputs()) == 0
  assert all(np.all(v.numpy() == 0.5) for v in encoder.weights)
  with pytest.raises(UserError, match="shrink_to_fresh is 1.5"):
    reinit.shrink_to_fresh(encoder, 1.5, _inputs())
