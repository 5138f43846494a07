"""Bias adds whose gradient TensorFlow's kernel sums, not XLA's.

A bias's gradient is the output gradient summed over the leading (batch,
sequence) axes. Under XLA auto-clustering (util/xla_fusion.py, on for
bfloat16 on CPU) that sum joins the cluster of the elementwise gradient
next to it, and XLA's CPU reduction along leading axes is 2.5x slower than
TensorFlow's (a [16, 128, 1024] sum to [1024]: 4.6 against 1.7 ms in
bfloat16, 4.2 against 1.7 ms in float32; bench/cpu_kernels.py on a 2-core
Xeon). `add_bias`
keeps that one sum out of the clusters; every value and gradient is the
plain `x + bias`'s.

The dense layers that get it are built inside tf-models-official's
`TransformerScaffold` and Keras's `MultiHeadAttention`, which take no layer
class, so `EinsumDense.adopt` turns a built Keras `EinsumDense` into ours in
place: same variables, same checkpoint, only `call` differs.
"""

import tensorflow as tf
import tf_keras

from util import xla_fusion


@tf.custom_gradient
def _add_bias(x, bias):
  def grad(upstream):
    leading = list(range(upstream.shape.rank - bias.shape.rank))
    with xla_fusion.outside_clusters():
      bias_grad = tf.reduce_sum(upstream, axis=leading)
    return upstream, bias_grad
  return x + bias, grad


def add_bias(x, bias):
  """x + bias, with the bias's gradient summed outside auto-clustering.

  Args: x [..., *bias.shape]; bias (a tensor or variable) broadcast over
  x's leading axes, cast to x's dtype. Returns x's shape and dtype.
  """
  return _add_bias(x, tf.cast(tf.convert_to_tensor(bias), x.dtype))


class EinsumDense(tf_keras.layers.EinsumDense):
  """Keras's `EinsumDense` whose bias is added by `add_bias`. Arguments,
  inputs, outputs, variables and config are Keras's."""

  def call(self, inputs):
    outputs = tf.einsum(self.equation, inputs, self.kernel)
    if self.bias is not None:
      outputs = add_bias(outputs, self.bias)
    if self.activation is not None:
      outputs = self.activation(outputs)
    return outputs

  @classmethod
  def adopt(cls, layer):
    """Makes Keras's `EinsumDense` `layer` (built or not) one of these, in
    place, and returns it; one already of these is returned as it is."""
    if isinstance(layer, cls):
      return layer
    if type(layer) is not tf_keras.layers.EinsumDense:  # pylint: disable=unidiomatic-typecheck
      raise TypeError("adopt takes a tf_keras EinsumDense, not %s" %
                      type(layer).__name__)
    layer.__class__ = cls
    return layer
