"""The fine-tuning model: the pre-trained discriminator encoder and a head."""

import tf_keras

ENCODER_INPUTS = ("input_ids", "input_mask", "segment_ids")


class FinetuningModel(tf_keras.Model):
  """Discriminator encoder + one task head.

  Input: a features dict with `input_ids`, `input_mask`, `segment_ids`
  [batch, seq_len] int32 and whatever task fields the head reads.
  Output: the head's dict of float32 tensors (e.g. logits [batch, labels]).
  """

  def __init__(self, encoder, head, **kwargs):
    super(FinetuningModel, self).__init__(**kwargs)
    self.encoder = encoder
    self.head = head

  def call(self, features, training=None):
    sequence_output = self.encoder({name: features[name]
                                    for name in ENCODER_INPUTS},
                                   training=training)
    return self.head(sequence_output, features, training=training)
