"""SQuAD decoding and the official EM/F1.

Decoding: tf-models-official's `squad_lib.postprocess_output` (n-best start
and end positions per window, valid spans only, mapped back to the original
text) gives each question its best non-empty span. For SQuAD 2.0 the
question's no-answer logit is the smallest over its windows (the window most
confident it holds the answer), na_prob = sigmoid(logit), and the prediction
is "" when na_prob > NO_ANSWER_THRESHOLD.

Scores: the official evaluation scripts as shipped in tf-models-official
(`squad_evaluate_v1_1`, `squad_evaluate_v2_0`), in percent. For 2.0,
`exact`/`f1` are the official script's output on the predictions file with
the na_probs file (what a submission scores); `best_exact`/`best_f1` and
their `*_thresh` are the official best no-answer threshold on na_prob, found
on this split from the non-empty spans (an upper bound tuned on dev).
"""

import collections
import math
import os

from official.nlp.data import squad_lib
from official.nlp.tools import squad_evaluate_v1_1
from official.nlp.tools import squad_evaluate_v2_0

from finetune import scorer
from util.io_utils import write_json_atomic

NO_ANSWER_THRESHOLD = 0.5

_RawResult = collections.namedtuple("RawResult",
                                    ["unique_id", "start_logits",
                                     "end_logits"])

# predictions: {qid: final answer ("" = no answer)}; best_spans: {qid: best
# non-empty span}; na_probs: {qid: P(no answer)} or None for SQuAD 1.1.
Decoded = collections.namedtuple("Decoded",
                                 ["predictions", "best_spans", "na_probs"])


def _sigmoid(x):
  return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else (
      math.exp(x) / (1.0 + math.exp(x)))


def decode(task, split_data, outputs):
  """Answers from the evaluation outputs of every window of a split.

  `outputs`: {"start_logits", "end_logits": [num_windows, seq_len],
  "no_answer_logit": [num_windows] (2.0)} in window order.
  """
  windows = split_data.meta
  results = [_RawResult(w.unique_id, outputs["start_logits"][i].tolist(),
                        outputs["end_logits"][i].tolist())
             for i, w in enumerate(windows)]
  best_spans, _, _ = squad_lib.postprocess_output(
      split_data.examples, windows, results,
      n_best_size=task.settings.n_best_size,
      max_answer_length=task.settings.max_answer_length,
      do_lower_case=task.settings.do_lower_case,
      version_2_with_negative=False)
  best_spans = dict(best_spans)
  if not task.v2:
    return Decoded(best_spans, best_spans, None)
  no_answer_logit = {}
  for i, window in enumerate(windows):
    qid = split_data.examples[window.example_index].qas_id
    logit = float(outputs["no_answer_logit"][i])
    no_answer_logit[qid] = min(no_answer_logit.get(qid, logit), logit)
  na_probs = {qid: _sigmoid(logit) for qid, logit in no_answer_logit.items()}
  predictions = {qid: "" if na_probs[qid] > NO_ANSWER_THRESHOLD else text
                 for qid, text in best_spans.items()}
  return Decoded(predictions, best_spans, na_probs)


def squad_v1_scores(dataset, predictions):
  """Official SQuAD 1.1 exact match and F1 (percent)."""
  official = squad_evaluate_v1_1.evaluate(dataset, predictions)
  return collections.OrderedDict([
      ("exact", 100.0 * official["exact_match"]),
      ("f1", 100.0 * official["final_f1"])])


def squad_v2_scores(dataset, predictions, na_probs, best_spans=None):
  """Official SQuAD 2.0 scores (percent); see the module docstring."""
  official = squad_evaluate_v2_0.evaluate(dataset, predictions, na_probs)
  results = collections.OrderedDict(
      (name, float(official[name])) for name in (
          "exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact",
          "NoAns_f1") if name in official)
  tuned = squad_evaluate_v2_0.evaluate(
      dataset, best_spans if best_spans is not None else predictions,
      na_probs)
  for name in ("exact", "f1"):
    results["best_" + name] = float(tuned["final_" + name])
    results["best_%s_thresh" % name] = float(tuned["final_%s_thresh" % name])
  return results


def write_prediction_files(decoded, directory, prefix):
  """Writes `<prefix>_predictions.json` ({qid: answer}, the official
  submission format) and for 2.0 `<prefix>_na_probs.json`; returns paths."""
  paths = [os.path.join(directory, prefix + "_predictions.json")]
  write_json_atomic(paths[0], decoded.predictions)
  if decoded.na_probs is not None:
    paths.append(os.path.join(directory, prefix + "_na_probs.json"))
    write_json_atomic(paths[1], decoded.na_probs)
  return paths


class SpanBasedQAScorer(scorer.Scorer):
  """SQuAD EM/F1 of one split; F1 is primary."""

  primary_metric = "f1"

  def __init__(self, task, split_data):
    super(SpanBasedQAScorer, self).__init__()
    self._task = task
    self._split_data = split_data
    self._decoded = None

  def get_results(self):
    self._decoded = decode(self._task, self._split_data, self._concatenated())
    dataset = self._task.dataset(self._split_data.split)
    if self._task.v2:
      results = squad_v2_scores(dataset, self._decoded.predictions,
                                self._decoded.na_probs,
                                self._decoded.best_spans)
    else:
      results = squad_v1_scores(dataset, self._decoded.predictions)
    results["num_examples"] = len(self._split_data.examples)
    return results

  def write_predictions(self, directory):
    if self._decoded is None:
      return []
    return write_prediction_files(self._decoded, directory,
                                  self._split_data.split)
