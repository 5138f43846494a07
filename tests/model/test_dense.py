"""add_bias and EinsumDense (model/layers/dense.py): the plain bias add's
values and gradients, its sum kept out of auto-clustering, and the layers
of the encoder that use it."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from model.layers import dense
from tests import pretrain_fixtures as fx
from util import xla_fusion


@pytest.mark.parametrize("bias_shape", [[6], [2, 3]])
def test_values_and_gradients_are_the_plain_adds(bias_shape):
  x = tf.random.stateless_normal([4, 5] + bias_shape, [1, 2])
  bias = tf.Variable(tf.random.stateless_normal(bias_shape, [3, 4]))
  upstream = tf.random.stateless_normal(x.shape, [5, 6])
  grads = []
  for add in (dense.add_bias, lambda a, b: a + b):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = add(x, bias)
    grads.append([y] + tape.gradient(y, [x, bias], upstream))
  for ours, plain in zip(*grads):
    np.testing.assert_allclose(ours.numpy(), plain.numpy(), rtol=1e-6,
                               atol=1e-6)


def test_bias_is_cast_to_the_input_dtype():
  x = tf.ones([2, 3], tf.bfloat16)
  y = dense.add_bias(x, tf.Variable([1.0, 2.0, 3.0]))
  assert y.dtype == tf.bfloat16
  np.testing.assert_array_equal(y.numpy().astype(np.float32),
                                [[2.0, 3.0, 4.0]] * 2)


def test_bias_gradient_sum_stays_out_of_auto_clustering(monkeypatch):
  monkeypatch.setattr(xla_fusion, "is_on", lambda: True)
  bias = tf.Variable(tf.zeros([4]))

  @tf.function
  def bias_grad(x):
    with tf.GradientTape() as tape:
      y = tf.reduce_sum(tf.tanh(dense.add_bias(x, bias)))
    return tape.gradient(y, bias)

  graph = bias_grad.get_concrete_function(
      tf.TensorSpec([2, 3, 4], tf.float32)).graph
  compile_attr = {}
  for op in graph.get_operations():
    if op.type == "Sum":
      try:
        compile_attr[op.name] = op.get_attr("_XlaCompile")
      except ValueError:
        compile_attr[op.name] = None
  # The bias's gradient is out; the loss's own sum is left to clustering.
  assert sorted(compile_attr.values(), key=str) == [False, None], compile_attr


def test_adopt_keeps_the_layer_and_refuses_other_layers():
  layer = tf_keras.layers.EinsumDense("ab,bc->ac", output_shape=3,
                                      bias_axes="c")
  x = tf.random.stateless_normal([2, 5], [7, 8])
  before = layer(x)
  variables = list(layer.variables)
  assert dense.EinsumDense.adopt(layer) is layer
  assert isinstance(layer, dense.EinsumDense)
  assert dense.EinsumDense.adopt(layer) is layer  # again: left as it is
  assert [v.name for v in layer.variables] == [v.name for v in variables]
  np.testing.assert_allclose(layer(x).numpy(), before.numpy(), rtol=1e-6)
  with pytest.raises(TypeError, match="Dense"):
    dense.EinsumDense.adopt(tf_keras.layers.Dense(3))


def test_the_encoder_projections_and_vocabulary_heads_use_it():
  model = fx.build_pretrainer_with_variables(fx.tiny_config())
  einsum_denses = [layer for layer in model.submodules
                   if isinstance(layer, tf_keras.layers.EinsumDense)]
  # Per transformer layer: query, key, value, attention output,
  # intermediate, output.
  names = sorted({layer.name for layer in einsum_denses})
  assert {"query", "key", "value", "attention_output"} <= set(names), names
  assert len(einsum_denses) % 6 == 0 and einsum_denses, names
  assert all(type(layer) is dense.EinsumDense for layer in einsum_denses), [
      type(layer).__name__ for layer in einsum_denses]
