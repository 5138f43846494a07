"""Layer-wise learning-rate decay (ELECTRA fine-tuning, Clark et al. 2020).

With n transformer layers and decay d, a variable at depth k gets the
learning rate lr * d^(n - k):
  * depth n, the top transformer layer: lr (d^0);
  * depth i + 1, transformer layer i (0 = bottom): lr * d^(n - 1 - i);
  * depth 0, the input side (embeddings, the embedding projection and the
    relative position bias shared by all layers): lr * d^n, the most decayed.
Task heads are not in the encoder and keep the base rate. (The TF1 ELECTRA
code counts one depth too many and gives the top layer lr * d; not here.)
Variables are grouped by the sub-layer that owns them, not by their names.
"""


def encoder_depths(encoder):
  """[(depth, layer)] for the sub-layers of an `ElectraEncoder`, bottom up."""
  groups = [(0, encoder.embeddings)]
  for layer in (encoder.embedding_projection,
                getattr(encoder, "relative_position_bias", None)):
    if layer is not None:
      groups.append((0, layer))
  groups += [(i + 1, layer) for i, layer in
             enumerate(encoder.transformer_layers)]
  return groups


def layerwise_lr_multipliers(encoder, decay):
  """{variable name: decay ** (n - depth)} for every trainable encoder variable.

  Raises ValueError if the encoder owns a trainable variable none of its known
  sub-layers holds (a new sub-layer needs a depth here).
  """
  num_layers = len(encoder.transformer_layers)
  multipliers = {}
  for depth, layer in encoder_depths(encoder):
    for variable in layer.trainable_variables:
      multipliers[variable.name] = float(decay) ** (num_layers - depth)
  unassigned = [v.name for v in encoder.trainable_variables
                if v.name not in multipliers]
  if unassigned:
    raise ValueError("layer-wise LR decay has no depth for encoder "
                     "variables %s" % ", ".join(unassigned))
  return multipliers
