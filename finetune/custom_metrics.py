"""Metrics of tasks described by a task.json: the GLUE and tagging scorers
with the metric list (and so the primary metric) taken from the task, plus
macro-averaged F1.

The first metric of a task's list is its primary one (it selects the kept
checkpoint).
"""

import collections

import numpy as np
from sklearn import metrics as sklearn_metrics

from finetune.classification import classification_metrics
from finetune.tagging import tagging_metrics


def macro_f1(labels, predictions):
  """Unweighted mean of the per-class F1 over the classes that occur in the
  gold labels or the predictions, in percent (scikit-learn's
  `f1_score(average="macro")`)."""
  return 100.0 * float(sklearn_metrics.f1_score(
      labels, predictions, average="macro", zero_division=0))


CLASSIFICATION_METRICS = dict(classification_metrics.CLASSIFICATION_METRICS,
                              macro_f1=macro_f1)
REGRESSION_METRICS = dict(classification_metrics.REGRESSION_METRICS)
# Tagging: "f1" is span F1 (precision and recall are reported with it),
# "accuracy" word accuracy.
TAGGING_METRICS = ("f1", "accuracy")


class ClassificationScorer(classification_metrics.ClassificationScorer):
  """`ClassificationScorer` that also knows `macro_f1`."""

  def get_results(self):
    out = self._concatenated()
    predictions = np.argmax(out["logits"], axis=-1)
    results = collections.OrderedDict(
        (name, CLASSIFICATION_METRICS[name](out["label_ids"], predictions))
        for name in self._metric_names)
    results["num_examples"] = int(len(predictions))
    return results


class RegressionScorer(classification_metrics.RegressionScorer):
  """`RegressionScorer` over `metric_names` (the first is primary)."""

  def __init__(self, metric_names):
    super(RegressionScorer, self).__init__()
    self._metric_names = tuple(metric_names)
    self.primary_metric = self._metric_names[0]

  def get_results(self):
    out = self._concatenated()
    results = collections.OrderedDict(
        (name, REGRESSION_METRICS[name](out["label_values"],
                                        out["predictions"]))
        for name in self._metric_names)
    results["num_examples"] = int(len(out["predictions"]))
    return results


class TaggingScorer(tagging_metrics.TaggingScorer):
  """`TaggingScorer` whose primary metric is the task's first metric (span
  F1 is computed when the task's `span_labels` is set)."""

  def __init__(self, task, split_data, metric_names):
    super(TaggingScorer, self).__init__(task, split_data)
    self.primary_metric = tuple(metric_names)[0]
