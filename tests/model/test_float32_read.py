"""read_float32 (model/layers/float32_read.py): a float32 weight's own
value inside a mixed-precision layer's call, with its gradient, and the
embedding lookup that uses it."""

import numpy as np
import tensorflow as tf
import tf_keras

from model.layers import embeddings
from model.layers.float32_read import read_float32


class _Reader(tf_keras.layers.Layer):

  def __init__(self, **kwargs):
    super(_Reader, self).__init__(**kwargs)
    self._autocast = False  # x stays float32

  def build(self, input_shape):
    self.w = self.add_weight("w", shape=[3], initializer=tf_keras.initializers
                             .Constant([1.0 + 2.0**-12, 2.0, 3.0]))

  def call(self, x):
    return x * read_float32(self.w), x * tf.cast(self.w, tf.float32)


def test_inside_a_mixed_call_the_read_keeps_float32_and_its_gradient():
  # tests/conftest.py puts the global policy back after each test.
  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
  layer = _Reader()
  x = tf.ones([3])
  with tf.GradientTape() as tape:
    exact, autocast = layer(x)
  grad = tape.gradient(exact, layer.w)
  assert exact.dtype == tf.float32
  # 1 + 2^-12 survives float32 but not bfloat16's autocast read.
  np.testing.assert_array_equal(exact.numpy(), [1.0 + 2.0**-12, 2.0, 3.0])
  np.testing.assert_array_equal(autocast.numpy(), [1.0, 2.0, 3.0])
  np.testing.assert_array_equal(grad.numpy(), [1.0, 1.0, 1.0])


def test_embedding_lookup_casts_only_the_rows():
  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
  layer = embeddings.DenseReadEmbedding(vocab_size=5, embedding_width=4)
  ids = tf.constant([[0, 3], [4, 4]])
  with tf.GradientTape() as tape:
    rows = layer(ids)
    loss = tf.reduce_sum(tf.cast(rows, tf.float32))
  grad = tf.convert_to_tensor(tape.gradient(loss, layer.embeddings))
  table = tf.convert_to_tensor(layer.embeddings._variable)  # pylint: disable=protected-access
  assert rows.dtype == tf.bfloat16
  want = tf.cast(tf.gather(table, [[0, 3], [4, 4]]), tf.bfloat16)
  np.testing.assert_array_equal(rows.numpy(), want.numpy())
  np.testing.assert_array_equal(grad.numpy()[:, 0], [1.0, 0.0, 0.0, 1.0, 2.0])
