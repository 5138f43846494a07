"""How spread out a set of hidden states is: their mean pairwise cosine and
their effective rank.

An encoder whose states share one direction and vary along few others has
lost what tells tokens (and texts) apart; a weak pre-trained start that
fine-tunes worse than random initialisation looks like that, where a good
released encoder spreads its states more than random initialisation does
(docs/performance.md, "What the start's token states look like").

Effective rank (Roy and Vetterli 2007): exp of the entropy of the
normalised singular values of the centred states, between 1 (every state
on one line) and the width.
"""

import numpy as np


def spread(states):
  """(mean cosine over distinct pairs, effective rank) of `states` [n,
  width] (n >= 2)."""
  states = np.asarray(states, np.float64)
  unit = states / np.maximum(np.linalg.norm(states, axis=1, keepdims=True),
                             1e-12)
  total = unit.sum(axis=0)
  n = len(unit)
  cosine = (total @ total - n) / max(n * (n - 1), 1)
  singular = np.linalg.svd(states - states.mean(axis=0), compute_uv=False)
  p = singular / max(singular.sum(), 1e-12)
  rank = float(np.exp(-np.sum(p * np.log(np.maximum(p, 1e-12)))))
  return float(cosine), rank
