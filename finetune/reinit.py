"""Moving a pre-trained encoder part of the way back to a fresh one before
fine-tuning: its top transformer layers (hparam `reinit_top_layers`) or
every weight (hparam `shrink_to_fresh`).

Zhang et al., "Revisiting few-sample BERT fine-tuning" (ICLR 2021), found
that the top layers of a pre-trained encoder are specialised to its
pre-training task and that fresh weights there make fine-tuning on few
examples more stable. For an ELECTRA discriminator still near its prior
the argument is stronger: its top layer maps every token to about the
same replaced-token logit, so the [CLS] state varies little from one text
to the next and the classifier starts from a near-constant input.

Ash and Adams, "On warm-starting neural network training" (NeurIPS 2020),
found that a network trained briefly and then trained on a task
generalises worse than a fresh one, and that "shrink and perturb" (scale
the weights down, add fresh noise) removes the gap while keeping the head
start. `shrink_to_fresh` does that with a fresh encoder as the noise, so
LayerNorm gains and biases move toward their initial values too.
"""

import tensorflow as tf

from util.errors import UserError


def fresh_like(encoder, inputs):
  """A freshly initialised, built encoder of `encoder`'s configuration,
  with fresh embeddings of its own (under the current Keras seed)."""
  config = encoder.get_config()
  embeddings = config["embeddings"]
  config["embeddings"] = type(embeddings).from_config(embeddings.get_config())
  fresh = type(encoder).from_config(config)
  fresh(inputs, training=False)
  return fresh


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
  fresh = fresh_like(encoder, inputs)
  replaced = 0
  for mine, new in zip(blocks[-num_layers:],
                       fresh.transformer_layers[-num_layers:]):
    for variable, value in zip(mine.weights, new.weights):
      variable.assign(tf.identity(value))
      replaced += 1
  return replaced


def shrink_to_fresh(encoder, keep, inputs):
  """Every weight w of `encoder` becomes keep * w + (1 - keep) * w_fresh,
  w_fresh from a freshly initialised encoder of the same configuration
  (under the current Keras seed): keep 1 leaves the pre-trained start as
  it is, keep 0 is random initialisation.

  Args:
    encoder: a built `ElectraEncoder`.
    keep: the pre-trained weights' share, in [0, 1].
    inputs: as for `reinitialise_top_layers`.

  Returns the number of weight tensors changed (0 when keep is 1).
  """
  if not 0.0 <= keep <= 1.0:
    raise UserError("shrink_to_fresh is %r; it must be in [0, 1] (1 keeps "
                    "the pre-trained weights as they are)." % (keep,))
  if keep == 1.0:
    return 0
  fresh = fresh_like(encoder, inputs)
  for variable, value in zip(encoder.weights, fresh.weights):
    variable.assign(keep * variable + (1.0 - keep) * tf.cast(value,
                                                             variable.dtype))
  return len(encoder.weights)
