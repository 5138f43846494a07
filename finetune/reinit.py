"""Re-initialising the top transformer layers of a pre-trained encoder
before fine-tuning (hparam `reinit_top_layers`).

Zhang et al., "Revisiting few-sample BERT fine-tuning" (ICLR 2021), found
that the top layers of a pre-trained encoder are specialised to its
pre-training task and that fresh weights there make fine-tuning on few
examples more stable. For an ELECTRA discriminator still near its prior
the argument is stronger: its top layer maps every token to about the
same replaced-token logit, so the [CLS] state varies little from one text
to the next and the classifier starts from a near-constant input.
"""

import tensorflow as tf

from util.errors import UserError


def reinitialise_top_layers(encoder, num_layers, inputs):
  """Gives the top `num_layers` transformer blocks of `encoder` the
  weights of a freshly initialised encoder of the same configuration
  (under the current Keras seed); the embeddings and lower blocks keep
  theirs.

  Args:
    encoder: a built `ElectraEncoder` (model/networks/encoder.py).
    num_layers: how many of the top blocks, 0 to the encoder's depth.
    inputs: a dict of `input_ids`, `input_mask`, `segment_ids` [batch,
      seq] int32 to build the fresh encoder with.

  Returns the number of weight tensors replaced. Raises UserError when
  `num_layers` exceeds the encoder's depth.
  """
  blocks = encoder.transformer_layers
  if num_layers > len(blocks):
    raise UserError("reinit_top_layers is %d but the encoder has %d "
                    "layers; set it to at most %d." % (
                        num_layers, len(blocks), len(blocks)))
  if num_layers <= 0:
    return 0
  fresh = type(encoder).from_config(encoder.get_config())
  fresh(inputs, training=False)
  replaced = 0
  for mine, new in zip(blocks[-num_layers:],
                       fresh.transformer_layers[-num_layers:]):
    for variable, value in zip(mine.weights, new.weights):
      variable.assign(tf.identity(value))
      replaced += 1
  return replaced
