"""Activation names beyond tf-models-official's.

tf-models-official's "gelu" (our default, as Google's ELECTRA) is the tanh
approximation. "gelu_exact" is the erf form, which Hugging Face calls "gelu"
(BERT and HF ELECTRA configs): a model loaded from such a checkpoint uses it
to compute what the source computes (interop/hf.py). Importing this module
registers the name with Keras, where `tf_utils.get_activation` finds it.
"""

import tensorflow as tf
import tf_keras


def gelu_exact(x):
  """x * Phi(x) with the exact normal CDF (erf); any shape."""
  return tf.nn.gelu(x, approximate=False)


tf_keras.utils.get_custom_objects()["gelu_exact"] = gelu_exact
