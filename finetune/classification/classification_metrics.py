"""GLUE's official metrics: accuracy, F1, Matthews and Pearson/Spearman
correlation (scikit-learn and SciPy, as tf-models-official's GLUE tasks)."""

import collections
import warnings

import numpy as np
from scipy import stats
from sklearn import metrics as sklearn_metrics

from finetune import scorer


def accuracy(labels, predictions):
  return 100.0 * float(np.mean(np.asarray(labels) == np.asarray(predictions)))


def f1(labels, predictions, positive_label=1):
  """F1 of the positive class (MRPC, QQP), in percent."""
  return 100.0 * float(sklearn_metrics.f1_score(
      labels, predictions, pos_label=positive_label, zero_division=0))


def macro_f1(labels, predictions):
  """Unweighted mean of the per-class F1 over the classes that occur in the
  gold labels or the predictions, in percent (scikit-learn's
  `f1_score(average="macro")`)."""
  return 100.0 * float(sklearn_metrics.f1_score(
      labels, predictions, average="macro", zero_division=0))


def matthews_corrcoef(labels, predictions):
  """Matthews correlation (CoLA) x 100; 0 when a prediction is constant."""
  return 100.0 * float(sklearn_metrics.matthews_corrcoef(labels, predictions))


def _correlation(fn, labels, predictions):
  with warnings.catch_warnings():
    # A constant prediction has no defined correlation; report 0 as GLUE's
    # scorer, without SciPy's warning.
    warnings.simplefilter("ignore")
    value = fn(np.asarray(labels, np.float64),
               np.asarray(predictions, np.float64))[0]
  return 0.0 if np.isnan(value) else 100.0 * float(value)


def pearson(labels, predictions):
  return _correlation(stats.pearsonr, labels, predictions)


def spearman(labels, predictions):
  return _correlation(stats.spearmanr, labels, predictions)


CLASSIFICATION_METRICS = {"accuracy": accuracy, "f1": f1,
                          "macro_f1": macro_f1, "mcc": matthews_corrcoef}
REGRESSION_METRICS = {"pearson": pearson, "spearman": spearman}


class ClassificationScorer(scorer.Scorer):
  """Metrics over argmax predictions; the first of `metric_names` is primary.

  Expects outputs `logits` [n, num_labels] and `label_ids` [n].
  """

  def __init__(self, metric_names):
    super(ClassificationScorer, self).__init__()
    self._metric_names = tuple(metric_names)
    self.primary_metric = self._metric_names[0]

  def get_results(self):
    out = self._concatenated()
    predictions = np.argmax(out["logits"], axis=-1)
    results = collections.OrderedDict(
        (name, CLASSIFICATION_METRICS[name](out["label_ids"], predictions))
        for name in self._metric_names)
    results["num_examples"] = int(len(predictions))
    return results


class RegressionScorer(scorer.Scorer):
  """Correlations of `predictions` [n] with `label_values` [n]; the first of
  `metric_names` is primary (Spearman by default, as in ELECTRA for STS-B)."""

  def __init__(self, metric_names=("spearman", "pearson")):
    super(RegressionScorer, self).__init__()
    self._metric_names = tuple(metric_names)
    self.primary_metric = self._metric_names[0]

  def get_results(self):
    out = self._concatenated()
    results = collections.OrderedDict(
        (name, REGRESSION_METRICS[name](out["label_values"],
                                        out["predictions"]))
        for name in sorted(self._metric_names))
    results["num_examples"] = int(len(out["predictions"]))
    return results
