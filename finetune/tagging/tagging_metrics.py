"""Sequence tagging metrics: word accuracy and span F1.

Span F1 is `seqeval`'s default (conlleval-compatible) mode, which reads
both IOB2 ("B-" starts every span) and CoNLL-2003's IOB1 ("I-" may start a
span); precision/recall/F1 are micro-averaged over span types, in percent.
"""

import collections

import numpy as np
from seqeval import metrics as seqeval_metrics

from finetune import scorer


def word_accuracy(gold_sequences, predicted_sequences):
  """Percent of words whose predicted label is the gold label."""
  gold = [label for sequence in gold_sequences for label in sequence]
  predicted = [label for sequence in predicted_sequences for label in sequence]
  return 100.0 * float(np.mean(np.asarray(gold) == np.asarray(predicted)))


def span_scores(gold_sequences, predicted_sequences):
  """(precision, recall, F1) of labelled spans, percent."""
  return tuple(100.0 * float(fn(gold_sequences, predicted_sequences,
                                zero_division=0))
               for fn in (seqeval_metrics.precision_score,
                          seqeval_metrics.recall_score,
                          seqeval_metrics.f1_score))


def assemble_word_predictions(examples, windows, predictions):
  """Per-sentence predicted label ids from per-window token predictions.

  `windows[i]` = (example index, first word index, token position of each
  word's first sub-token); `predictions[i]` = [seq_len] label ids.
  """
  words = [[None] * len(example.words) for example in examples]
  for (example_index, first_word, positions), tokens in zip(windows,
                                                            predictions):
    for offset, position in enumerate(positions):
      words[example_index][first_word + offset] = int(tokens[position])
  return words


class TaggingScorer(scorer.Scorer):
  """Word accuracy, and span precision/recall/F1 for span label sets.

  Expects outputs `predictions` [num_windows, seq_len] label ids.
  """

  def __init__(self, task, split_data):
    super(TaggingScorer, self).__init__()
    self._task = task
    self._split_data = split_data
    self.primary_metric = "f1" if task.span_labels else "accuracy"

  def get_results(self):
    labels = self._task.label_list
    predicted_ids = assemble_word_predictions(
        self._split_data.examples, self._split_data.meta,
        self._concatenated()["predictions"])
    predicted = [[labels[i] for i in ids] for ids in predicted_ids]
    gold = [[labels[i] for i in example.labels]
            for example in self._split_data.examples]
    results = collections.OrderedDict()
    if self._task.span_labels:
      (results["precision"], results["recall"],
       results["f1"]) = span_scores(gold, predicted)
    results["accuracy"] = word_accuracy(gold, predicted)
    results["num_examples"] = len(gold)
    return results
