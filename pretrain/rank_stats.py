"""Exact ROC AUC and rank correlations in numpy, with ties handled exactly.

The pre-training evaluation's statistics (pretrain/eval_metrics.py): D's
AUC over real tokens, and the hardness estimator's Pearson and Spearman
correlation with D's actual loss. Each returns None where the value is
undefined (one class only, fewer than two points, a constant input).
"""

import math

import numpy as np


def average_ranks(x):
  """1-based ranks of `x` [n], ties sharing their mean rank; [n] float64."""
  x = np.asarray(x).ravel()
  _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
  last_rank = np.cumsum(counts).astype(np.float64)
  return (last_rank - (counts - 1) / 2.0)[inverse.ravel()]


def exact_auc(scores, labels):
  """ROC AUC of `scores` [n] for binary `labels` [n], ties counted as 1/2.

  AUC = (sum of positives' ranks - n_pos (n_pos + 1) / 2) / (n_pos n_neg), which
  equals P(score_pos > score_neg) + P(tie) / 2 over all pairs. None if one class
  is empty.
  """
  labels = np.asarray(labels).ravel() > 0
  n_pos = int(labels.sum())
  n_neg = labels.size - n_pos
  if n_pos == 0 or n_neg == 0:
    return None
  rank_sum = average_ranks(scores)[labels].sum()
  return float((rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def pearson(x, y):
  """Pearson correlation of `x`, `y` [n]; None if n < 2 or either constant."""
  x = np.asarray(x, np.float64).ravel()
  y = np.asarray(y, np.float64).ravel()
  if x.size < 2 or x.min() == x.max() or y.min() == y.max():
    return None
  dx, dy = x - x.mean(), y - y.mean()
  r = np.dot(dx, dy) / math.sqrt(np.dot(dx, dx) * np.dot(dy, dy))
  return float(np.clip(r, -1.0, 1.0))


def spearman(x, y):
  """Spearman correlation (Pearson of mean ranks) of `x`, `y` [n], or None."""
  if np.asarray(x).size < 2:
    return None
  return pearson(average_ranks(x), average_ranks(y))
