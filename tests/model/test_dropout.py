"""CounterDropout: a hashed dropout mask (model/layers/dropout.py)."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from model.layers import dropout as dropout_lib
from model.layers.dropout import CounterDropout

_SHAPE = [8, 4, 64, 64]  # 131,072 elements


def _mask(seed, rate=0.1, shape=None):
  return dropout_lib.keep_scale(tf.constant(shape or _SHAPE), tf.constant(
      seed, tf.int32), rate, tf.float32).numpy()


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_drops_at_the_rate_and_scales_the_rest(rate):
  mask = _mask([3, 7], rate)
  n = mask.size
  dropped = np.mean(mask == 0.0)
  assert abs(dropped - rate) < 5 * np.sqrt(rate * (1 - rate) / n)
  np.testing.assert_allclose(mask[mask != 0.0], 1.0 / (1.0 - rate),
                             rtol=1e-6)


def test_mask_is_a_function_of_the_seed():
  np.testing.assert_array_equal(_mask([3, 7]), _mask([3, 7]))
  for other in ([3, 8], [4, 7]):
    differ = np.mean(_mask([3, 7]) != _mask(other))
    # Independent masks differ where exactly one drops: 2 * 0.1 * 0.9.
    assert abs(differ - 0.18) < 0.01, (other, differ)


def test_neighbouring_elements_are_not_correlated():
  dropped = (_mask([11, 5]) == 0.0).reshape(-1)
  both = np.mean(dropped[1:] & dropped[:-1])
  assert abs(both - 0.01) < 0.003


def test_compiled_and_plain_paths_agree():
  x = tf.random.stateless_normal(_SHAPE, seed=[1, 2])
  seed = tf.constant([5, 9], tf.int32)
  np.testing.assert_array_equal(
      dropout_lib._scale(x, seed, 0.1).numpy(),
      dropout_lib._scale_compiled(x, seed, 0.1).numpy())


def test_gradient_applies_the_same_mask():
  x = tf.random.stateless_normal(_SHAPE, seed=[1, 2])
  weights = tf.random.stateless_normal(_SHAPE, seed=[3, 4])
  seed = tf.constant([21, 22], tf.int32)
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = dropout_lib.counter_dropout(x, 0.1, seed)
    loss = tf.reduce_sum(y * weights)
  mask = _mask([21, 22])
  np.testing.assert_allclose(y.numpy(), x.numpy() * mask, rtol=1e-6)
  np.testing.assert_allclose(tape.gradient(loss, x).numpy(),
                             weights.numpy() * mask, rtol=1e-6)


def test_layer_is_identity_unless_training():
  x = tf.ones([4, 16])
  layer = CounterDropout(0.5)
  np.testing.assert_array_equal(layer(x, training=False).numpy(), x.numpy())
  np.testing.assert_array_equal(CounterDropout(0.0)(x, training=True),
                                x.numpy())
  assert np.any(layer(x, training=True).numpy() == 0.0)


def test_layer_draws_a_new_seed_per_call_from_its_generator():
  x = tf.ones([4, 256])
  tf_keras.utils.set_random_seed(5)
  first = CounterDropout(0.3)
  a, b = first(x, training=True).numpy(), first(x, training=True).numpy()
  tf_keras.utils.set_random_seed(5)
  again = CounterDropout(0.3)
  assert np.any(a != b)
  np.testing.assert_array_equal(again(x, training=True).numpy(), a)


def test_bfloat16_input_keeps_its_dtype():
  x = tf.cast(tf.ones([4, 16]), tf.bfloat16)
  layer = CounterDropout(0.1, dtype="mixed_bfloat16")
  assert layer(x, training=True).dtype == tf.bfloat16


def test_noise_shape_is_refused():
  with pytest.raises(ValueError, match="noise_shape"):
    CounterDropout(0.1, noise_shape=[1, 16])
