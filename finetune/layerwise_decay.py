"""Layer-wise learning-rate decay (ELECTRA fine-tuning, Clark et al. 2020).

With n transformer layers and decay d, depths are: 0 for the input side
(embeddings, the embedding projection and the relative position bias shared
by all layers), i + 1 for transformer layer i (0 = bottom). Two rules
(hparam `layerwise_lr_decay_rule`):

  * "default", ours: lr * d^(n - depth). The top transformer layer gets lr,
    layer i lr * d^(n - 1 - i), the input side lr * d^n.
  * "electra", the TF1 code's `_get_layer_lrs` (model/optimization.py of
    google-research/electra), which puts the task head at depth n + 2 and
    gives lr * d^(n + 2 - depth): the top layer gets lr * d^2, layer i
    lr * d^(n + 1 - i), the input side lr * d^(n + 2). Every encoder rate
    is ours times d^2.

Under both, task heads are not in the encoder and keep the base rate (ELECTRA's
head at depth n + 2 gets d^0). Variables are grouped by the sub-layer that owns
them, not by their names.
"""

# Powers of d added to the default rule's, per rule.
RULE_EXTRA_POWER = {"default": 0, "electra": 2}


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


def layerwise_lr_multipliers(encoder, decay, rule="default"):
  """{variable name: learning-rate factor} for every trainable encoder variable.

  The factor is decay ** (n - depth) under `rule` "default" and
  decay ** (n + 2 - depth) under "electra" (module docstring). Raises
  ValueError for another rule, or if the encoder owns a trainable variable
  none of its known sub-layers holds (a new sub-layer needs a depth here).
  """
  if rule not in RULE_EXTRA_POWER:
    raise ValueError("unknown layer-wise LR decay rule %r; one of %s"
                     % (rule, ", ".join(sorted(RULE_EXTRA_POWER))))
  top = len(encoder.transformer_layers) + RULE_EXTRA_POWER[rule]
  multipliers = {}
  for depth, layer in encoder_depths(encoder):
    for variable in layer.trainable_variables:
      multipliers[variable.name] = float(decay) ** (top - depth)
  unassigned = [v.name for v in encoder.trainable_variables
                if v.name not in multipliers]
  if unassigned:
    raise ValueError("layer-wise LR decay has no depth for encoder "
                     "variables %s" % ", ".join(unassigned))
  return multipliers
