"""Activation names beyond tf-models-official's, and the FFN's GELU.

tf-models-official's "gelu" (our default, as Google's ELECTRA) is the tanh
approximation. "gelu_exact" is the erf form, which Hugging Face calls "gelu"
(BERT and HF ELECTRA configs): a model loaded from such a checkpoint uses it
to compute what the source computes (interop/hf.py). Importing this module
registers the name with Keras, where `tf_utils.get_activation` finds it.

`inner_activation(name)` is what the encoder's feed-forward blocks apply:
for "gelu" and "gelu_exact" the same function with a hand-written gradient
(`_gelu_saving_input`), for other names `tf_utils.get_activation`'s.
"""

import math

import tensorflow as tf
import tf_keras
from official.modeling import tf_utils

# tf.nn.gelu's tanh approximation: 0.5 x (1 + tanh(c (x + a x^3))).
_TANH_C = math.sqrt(2.0 / math.pi)
_TANH_A = 0.044715


def gelu_exact(x):
  """x * Phi(x) with the exact normal CDF (erf); any shape."""
  return tf.nn.gelu(x, approximate=False)


tf_keras.utils.get_custom_objects()["gelu_exact"] = gelu_exact


def gelu_derivative(x, approximate):
  """d gelu(x) / dx, elementwise, in x's dtype.

  Args: x: any shape, float. approximate: the tanh form (True) or the erf
  form (False), as `tf.nn.gelu`'s argument.
  """
  if approximate:
    t = tf.tanh(_TANH_C * (x + _TANH_A * x * x * x))
    return 0.5 * (1.0 + t) + (0.5 * _TANH_C) * x * (1.0 - t * t) * (
        1.0 + (3.0 * _TANH_A) * x * x)
  cdf = 0.5 * (1.0 + tf.math.erf(x * (1.0 / math.sqrt(2.0))))
  return cdf + x * tf.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))


def _gelu_saving_input(approximate):
  """`tf.nn.gelu` whose backward pass keeps only its input.

  The automatic gradient of the tanh form keeps the intermediates of the
  forward pass (x^3, the tanh, ...), each as large as the FFN's inner
  activations ([batch, seq_len, intermediate_size], float32 under
  mixed_bfloat16, where tf-models-official's blocks run the activation in
  float32), and reads them back in the backward pass. This one keeps x and
  recomputes the derivative there, so the backward pass is one elementwise
  pass over x and the incoming gradient, which XLA's fusion
  (hparam `fuse_elementwise`) compiles into one loop. The values are
  `tf.nn.gelu`'s; the gradient equals its automatic one up to float
  rounding (tests/model/test_activations.py).
  """
  @tf.custom_gradient
  def gelu(x):
    def grad(dy):
      return dy * gelu_derivative(x, approximate)
    return tf.nn.gelu(x, approximate=approximate), grad
  return gelu


_FFN_GELU = {"gelu": True, "gelu_exact": False}


def inner_activation(name):
  """The activation function a feed-forward block applies for hparam
  `hidden_act` `name` ("gelu", "gelu_exact", "relu", ...)."""
  if name in _FFN_GELU:
    return _gelu_saving_input(_FFN_GELU[name])
  return tf_utils.get_activation(name)
