"""Metrics against values computed by hand (in the comments)."""

import numpy as np
import pytest

from finetune import results
from finetune.classification import classification_metrics as cm
from finetune.qa import qa_metrics
from finetune.tagging import tagging_metrics as tm

# Confusion of LABELS vs PREDS: TP 2 (0, 4), FN 1 (1), FP 1 (3), TN 1 (2).
LABELS = [1, 1, 0, 0, 1]
PREDS = [1, 0, 0, 1, 1]


def test_classification_metrics_by_hand():
  assert cm.accuracy(LABELS, PREDS) == pytest.approx(60.0)
  # P = R = 2/3 -> F1 = 2/3.
  assert cm.f1(LABELS, PREDS) == pytest.approx(200.0 / 3)
  # (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = 1 / sqrt(36).
  assert cm.matthews_corrcoef(LABELS, PREDS) == pytest.approx(100.0 / 6)
  assert cm.matthews_corrcoef(LABELS, [1] * 5) == 0.0


def test_correlations_by_hand():
  # dx = -1.5 -.5 .5 1.5, dy = -3 -1 0 4: 11 / sqrt(5 * 26).
  assert cm.pearson([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(
      100 * 11 / np.sqrt(130))
  # Ranks of [1, 3, 3, 2] with the tie averaged: 1 3.5 3.5 2 -> 1.5/sqrt(22.5).
  assert cm.spearman([1, 2, 3, 4], [1, 3, 3, 2]) == pytest.approx(
      100 * 1.5 / np.sqrt(22.5))
  assert cm.pearson([1, 2, 3], [2, 2, 2]) == 0.0  # constant: undefined -> 0


def test_classification_scorer_uses_argmax_and_primary_metric():
  scorer = cm.ClassificationScorer(("mcc", "accuracy"))
  logits = np.eye(2)[PREDS] * 3.0 - 1.0
  scorer.update({"logits": logits[:2], "label_ids": np.array(LABELS[:2])})
  scorer.update({"logits": logits[2:], "label_ids": np.array(LABELS[2:])})
  out = scorer.get_results()
  assert list(out) == ["mcc", "accuracy", "num_examples"]
  assert out["mcc"] == pytest.approx(100.0 / 6)
  assert out["accuracy"] == pytest.approx(60.0)
  assert out["num_examples"] == 5
  assert scorer.primary_metric == "mcc"


def test_regression_scorer():
  scorer = cm.RegressionScorer()
  scorer.update({"predictions": np.array([2.0, 4.0, 5.0, 9.0]),
                 "label_values": np.array([1.0, 2.0, 3.0, 4.0])})
  out = scorer.get_results()
  assert out["pearson"] == pytest.approx(100 * 11 / np.sqrt(130))
  assert out["spearman"] == pytest.approx(100.0)
  assert scorer.primary_metric == "spearman"


def _squad(qas):
  return [{"paragraphs": [{"context": "unused", "qas": [
      {"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0}
                                              for t in answers]}
      for qid, answers in qas]}]}]


def test_squad_v1_exact_and_f1_normalisation():
  dataset = _squad([("q1", ["The Morning Star", "Morning Star"]),
                    ("q2", ["in the morning"]),
                    ("q3", ["Boston"])])
  predictions = {
      # case, punctuation and articles are normalised away: EM 1, F1 1.
      "q1": "morning star!",
      # "morning" vs "in morning": EM 0, P 1, R 1/2, F1 2/3.
      "q2": "the morning",
      "q3": "New York"}  # 0, 0
  out = qa_metrics.squad_v1_scores(dataset, predictions)
  assert out["exact"] == pytest.approx(100.0 / 3)
  assert out["f1"] == pytest.approx(100.0 * (1 + 2.0 / 3) / 3)


def test_squad_v2_no_answer_and_threshold():
  dataset = _squad([("q1", ["Boston"]), ("q2", []), ("q3", []),
                    ("q4", ["under the old tree"])])
  predictions = {"q1": "Boston",    # right: 1, 1
                 "q2": "",          # right no-answer: 1, 1
                 "q3": "the cat",   # answered an unanswerable one: 0, 0
                 "q4": "old tree"}  # "old tree" vs "under old tree": 0, 0.8
  na_probs = {"q1": 0.2, "q2": 0.9, "q3": 0.3, "q4": 0.4}
  best_spans = dict(predictions, q2="a dog")
  out = qa_metrics.squad_v2_scores(dataset, predictions, na_probs, best_spans)
  assert out["exact"] == pytest.approx(50.0)
  assert out["f1"] == pytest.approx(100 * (1 + 1 + 0 + 0.8) / 4)
  assert out["HasAns_exact"] == pytest.approx(50.0)
  assert out["HasAns_f1"] == pytest.approx(90.0)
  assert out["NoAns_exact"] == pytest.approx(50.0)
  # Threshold search from "all no-answer" (2 of 4 right), by na_prob:
  # q1 (.2) +1 -> 3 (best), q3 (.3) -1, q4 (.4) +0 / +0.8, q2 (.9) -1.
  assert out["best_exact"] == pytest.approx(75.0)
  assert out["best_exact_thresh"] == pytest.approx(0.2)
  assert out["best_f1"] == pytest.approx(75.0)


def test_span_f1_and_accuracy_by_hand():
  gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG"]]
  pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "O"]]
  # gold spans PER(0-1) LOC(3) ORG(0-1); predicted PER(0-1) ORG(3) ORG(0):
  # 1 of 3 right either way.
  precision, recall, f1 = tm.span_scores(gold, pred)
  assert (precision, recall, f1) == pytest.approx((100 / 3.,) * 3)
  assert tm.word_accuracy(gold, pred) == pytest.approx(100 * 4 / 6.)


def test_span_f1_reads_iob1():
  # CoNLL-2003's IOB1: "I-PER" after "O" starts a span, as "B-PER" does.
  gold = [["I-PER", "O", "I-LOC"]]
  pred = [["B-PER", "O", "I-LOC"]]
  assert tm.span_scores(gold, pred)[2] == pytest.approx(100.0)
  assert tm.word_accuracy(gold, pred) == pytest.approx(200 / 3.)


def test_word_predictions_reassembled_from_windows():
  class Example(object):
    words = ["a", "b", "c"]
  windows = [(0, 0, [1, 2]), (0, 2, [1])]
  predictions = np.array([[9, 3, 4, 9], [9, 5, 9, 9]])
  assert tm.assemble_word_predictions([Example()], windows,
                                      predictions) == [[3, 4, 5]]


def test_trial_summary_mean_std_and_each_trial():
  per_trial = [{"dev": {"accuracy": a, "num_examples": 6}}
               for a in (50.0, 70.0, 90.0)]
  summary = results.summarize(per_trial)
  stats = summary["dev"]["accuracy"]
  assert stats["mean"] == pytest.approx(70.0)
  assert stats["std"] == pytest.approx(20.0)  # sample std
  assert stats["trials"] == [50.0, 70.0, 90.0]
  assert "num_examples" not in summary["dev"]
  assert results.summarize(per_trial[:1])["dev"]["accuracy"]["std"] == 0.0
