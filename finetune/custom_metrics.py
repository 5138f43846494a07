"""Metrics of tasks described by a task.json.

Classification and regression use the GLUE scorers
(`finetune.classification.classification_metrics`, which also hold
`macro_f1`) with the task's metric list; tagging uses the tagging scorer with
the task's first metric as primary. The first metric of a task's list is its
primary one (it selects the kept checkpoint).
"""

from finetune.tagging import tagging_metrics

# Tagging: "f1" is span F1 (precision and recall are reported with it),
# "accuracy" word accuracy.
TAGGING_METRICS = ("f1", "accuracy")


class TaggingScorer(tagging_metrics.TaggingScorer):
  """`TaggingScorer` whose primary metric is the task's first metric (span
  F1 is computed when the task's `span_labels` is set)."""

  def __init__(self, task, split_data, metric_names):
    super(TaggingScorer, self).__init__(task, split_data)
    self.primary_metric = tuple(metric_names)[0]
