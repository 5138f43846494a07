"""The discriminator's head: one replaced-token logit per token."""

import tensorflow as tf
import tf_keras
from official.modeling import tf_utils

from model import activations  # noqa: F401 (registers "gelu_exact")
from model.initializers import truncated_normal


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class ReplacedTokenHead(tf_keras.layers.Layer):
  """dense(hidden, act) -> dense(1): one logit z_t per token.

  Args:
    hidden_size: width of the transform (the encoder's hidden size).
    hidden_act: activation of the transform.
    initializer_range: stddev of the truncated-normal initial kernels.

  Input: [batch, seq_len, hidden] (compute dtype). Output: [batch, seq_len]
  float32 logits; sigmoid(z_t) = P(token t was replaced). The transform runs
  in the compute dtype; the logit layer in float32 (its input cast up), as
  the vocabulary heads' LayerNorm and projection do, so that under a mixed
  policy z keeps float32 precision: it feeds L_D, HP-Loss's target and the
  AUC.
  """

  def __init__(self, hidden_size, hidden_act="gelu", initializer_range=0.02,
               **kwargs):
    super(ReplacedTokenHead, self).__init__(**kwargs)
    self._config = dict(hidden_size=hidden_size, hidden_act=hidden_act,
                        initializer_range=initializer_range)
    self.dense = tf_keras.layers.Dense(
        hidden_size, activation=tf_utils.get_activation(hidden_act),
        kernel_initializer=truncated_normal(initializer_range),
        name="transform")
    self.logit = tf_keras.layers.Dense(
        1, kernel_initializer=truncated_normal(initializer_range),
        dtype=tf.float32, name="logit")

  def call(self, hidden):
    return tf.squeeze(self.logit(self.dense(hidden)), -1)

  def get_config(self):
    config = super(ReplacedTokenHead, self).get_config()
    config.update(self._config)
    return config
