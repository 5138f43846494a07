"""The discriminator: an encoder network and the replaced-token head."""

import tf_keras

from model.layers.replaced_token_head import ReplacedTokenHead


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class Discriminator(tf_keras.Model):
  """Encoder + replaced-token head.

  Args:
    encoder: the discriminator's `ElectraEncoder` (model/networks/encoder.py).
    hidden_size: the encoder's hidden size (the head's width).
    hidden_act: the head's activation.
    initializer_range: stddev of the head's truncated-normal initial kernels.

  Inputs: dict `input_ids`, `input_mask`, `segment_ids` [batch, seq_len].
  Output: logits z [batch, seq_len] float32; sigmoid(z_t) = P(replaced).
  """

  def __init__(self, encoder, hidden_size, hidden_act="gelu",
               initializer_range=0.02, **kwargs):
    super(Discriminator, self).__init__(**kwargs)
    self._config = dict(hidden_size=hidden_size, hidden_act=hidden_act,
                        initializer_range=initializer_range)
    self.encoder = encoder
    self.head = ReplacedTokenHead(hidden_size, hidden_act, initializer_range,
                                  name="replaced_token_head")

  def call(self, inputs, training=None):
    return self.head(self.encoder(inputs, training=training))

  def get_config(self):
    """Constructor arguments, the encoder as the network object itself."""
    return dict(self._config, encoder=self.encoder, name=self.name)

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
