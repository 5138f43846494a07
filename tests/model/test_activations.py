"""The feed-forward GELU with a hand-written gradient (model/activations.py)."""

import numpy as np
import pytest
import tensorflow as tf

from model import activations

_X = np.linspace(-9.0, 9.0, 721).astype(np.float32)


def _value_and_grad(fn, x):
  x = tf.constant(x)
  with tf.GradientTape() as tape:
    tape.watch(x)
    y = fn(x)
  return y, tape.gradient(y, x, output_gradients=tf.ones_like(y) * 0.75)


@pytest.mark.parametrize("name,approximate", [("gelu", True),
                                              ("gelu_exact", False)])
def test_values_and_gradient_are_tf_nn_gelus(name, approximate):
  ours, ours_grad = _value_and_grad(activations.inner_activation(name), _X)
  ref, ref_grad = _value_and_grad(
      lambda x: tf.nn.gelu(x, approximate=approximate), _X)
  np.testing.assert_array_equal(ours.numpy(), ref.numpy())
  np.testing.assert_allclose(ours_grad.numpy(), ref_grad.numpy(),
                             rtol=1e-5, atol=5e-6)


@pytest.mark.parametrize("approximate", [True, False])
def test_derivative_matches_finite_differences(approximate):
  x = _X.astype(np.float64)
  h = 1e-5

  def gelu(v):
    return tf.nn.gelu(tf.constant(v), approximate=approximate)

  numeric = (gelu(x + h).numpy() - gelu(x - h).numpy()) / (2 * h)
  derivative = activations.gelu_derivative(tf.constant(x), approximate)
  np.testing.assert_allclose(derivative.numpy(), numeric, atol=1e-8)


def test_the_two_forms_differ():
  """The derivative follows `approximate` (else the above could pass by a
  single formula that fits both within tolerance)."""
  tanh = activations.gelu_derivative(tf.constant(_X), True).numpy()
  erf = activations.gelu_derivative(tf.constant(_X), False).numpy()
  assert np.max(np.abs(tanh - erf)) > 5e-4


def test_bfloat16_input_keeps_dtype():
  x = tf.cast(tf.constant(_X), tf.bfloat16)
  y, grad = _value_and_grad(activations.inner_activation("gelu"), x)
  assert y.dtype == tf.bfloat16 and grad.dtype == tf.bfloat16


def test_other_names_are_tf_models_officials():
  relu = activations.inner_activation("relu")
  np.testing.assert_array_equal(relu(tf.constant(_X)).numpy(),
                                np.maximum(_X, 0.0))
