"""BiasedSelfAttention's batched-matmul attention against Keras's einsums."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from model.layers import attention


def _layer_and_inputs(dtype):
  layer = attention.BiasedSelfAttention(num_heads=2, key_dim=8,
                                        dtype=dtype)
  hidden = tf.random.stateless_normal([3, 5, 16], [1, 2])
  mask = tf.constant([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]])
  bias = attention.padding_bias(mask)
  layer(hidden, hidden, attention_mask=bias)  # builds
  compute = tf.as_dtype(layer.compute_dtype)
  q, k, v = (tf.cast(tf.random.stateless_normal([3, 5, 2, 8], [i, 7]),
                     compute) for i in range(3))
  return layer, (q, k, v), bias


def _values_and_grads(compute, inputs, bias):
  with tf.GradientTape() as tape:
    tape.watch(inputs)
    output, probs = compute(*inputs, attention_mask=bias, training=False)
    loss = tf.reduce_sum(tf.cast(output, tf.float32) ** 2)
  return [output, probs] + tape.gradient(loss, list(inputs))


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5),
                                       ("mixed_bfloat16", 2e-2)])
def test_attention_equals_keras_einsum_attention(dtype, tol):
  layer, inputs, bias = _layer_and_inputs(dtype)
  ours = _values_and_grads(layer._compute_attention, inputs, bias)
  keras = _values_and_grads(
      lambda *a, **k: tf_keras.layers.MultiHeadAttention._compute_attention(
          layer, *a, **k), inputs, bias)
  assert ours[0].shape == (3, 5, 2, 8) and ours[1].shape == (3, 2, 5, 5)
  for got, want in zip(ours, keras):
    assert got.dtype == want.dtype
    np.testing.assert_allclose(tf.cast(got, tf.float32).numpy(),
                               tf.cast(want, tf.float32).numpy(),
                               rtol=tol, atol=tol)
  # Padding keys get no attention.
  np.testing.assert_array_equal(ours[1].numpy()[2, :, :, 1:], 0)


def test_attention_has_no_einsum_over_heads():
  """The traced attention is matmuls: no Einsum op (they transpose inside
  every call)."""
  layer, inputs, bias = _layer_and_inputs("float32")
  graph = tf.function(layer._compute_attention).get_concrete_function(
      *inputs, attention_mask=bias, training=False).graph
  types = {op.type for op in graph.get_operations()}
  assert "BatchMatMulV2" in types and "Einsum" not in types
