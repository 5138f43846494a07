"""Base class of the evaluation metrics of a task."""

import collections

import numpy as np


class Scorer(object):
  """Accumulates predictions for one split and computes its metrics.

  `update` receives the outputs of the evaluation step for a batch of
  features (numpy arrays, padding rows already removed); `get_results`
  returns an ordered {metric name: value} with values in percent where the
  official metric is a rate or correlation, as GLUE and SQuAD report them.
  `primary_metric` names the value used to keep the best checkpoint.
  """

  primary_metric = None

  def __init__(self):
    self._outputs = collections.defaultdict(list)

  def update(self, outputs):
    for name, value in outputs.items():
      self._outputs[name].append(value)

  def _concatenated(self):
    return {name: np.concatenate(values)
            for name, values in self._outputs.items()}

  def get_results(self):
    raise NotImplementedError()

  def write_predictions(self, directory):
    """Writes the split's predictions for inspection (optional)."""
    return None


def results_str(results):
  """'accuracy: 81.25, f1: 80.00' from a results dict (counts left out)."""
  return ", ".join("%s: %.2f" % (name, value)
                   for name, value in results.items()
                   if isinstance(value, float))
