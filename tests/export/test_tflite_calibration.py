"""export/tflite_calibration.py: the INT8 outputs' mean shift, in the units
of the head's bias, and the bias it is taken off (restored after). The
export with it is tested in tests/export/test_tflite_export.py."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from export import tflite_calibration as calibration
from util.errors import UserError


def _softmax(logits):
  e = np.exp(logits)
  return e / e.sum(axis=1, keepdims=True)


def test_a_classifiers_shift_is_the_centred_mean_log_probability_change():
  logits = np.array([[0.2, -0.1, 0.4], [1.0, 0.0, -1.0]])
  moved = logits + [0.05, -0.02, 0.0] + [[0.3], [-0.7]]  # + per-text constant
  shift = calibration.output_shift(
      "classification", dict(probabilities=_softmax(logits)),
      dict(probabilities=_softmax(moved)))
  want = np.array([0.05, -0.02, 0.0])
  np.testing.assert_allclose(shift, want - want.mean(), atol=1e-9)
  # Taken off the logits, it gives the reference's probabilities again.
  np.testing.assert_allclose(_softmax(moved - shift), _softmax(logits),
                             atol=1e-9)


def test_a_regressions_shift_is_the_mean_score_change():
  shift = calibration.output_shift(
      "regression", dict(score=np.array([1.0, 2.0, 3.0])),
      dict(score=np.array([1.1, 2.3, 2.9])))
  np.testing.assert_allclose(shift, [0.1], atol=1e-9)


def test_the_bias_is_shifted_inside_the_block_only():
  head = tf.Module()
  head.dense = tf.Module()
  head.dense.bias = tf.Variable([0.5, -0.5])
  with calibration.shifted_bias(head, [0.1, -0.1]):
    np.testing.assert_allclose(head.dense.bias.numpy(), [0.4, -0.4])
  np.testing.assert_allclose(head.dense.bias.numpy(), [0.5, -0.5])
  with pytest.raises(RuntimeError):
    with calibration.shifted_bias(head, [1.0, 1.0]):
      raise RuntimeError("conversion failed")
  np.testing.assert_allclose(head.dense.bias.numpy(), [0.5, -0.5])


Example = collections.namedtuple("Example", ["text_a", "text_b"])


class _Task(object):
  """A task whose training split has `examples` (None: no training file)."""

  def __init__(self, examples):
    self.examples = examples

  def get_examples(self, split):
    assert split == "train"
    if self.examples is None:
      raise UserError("task 'x': no train file")
    return self.examples


def test_calibration_texts_are_the_first_training_examples():
  task = _Task([Example("a %d" % i, "b %d" % i) for i in range(300)])
  texts = calibration.calibration_texts(task, ["text", "text_b"])
  assert texts["text"][:2] == ["a 0", "a 1"] and texts["text_b"][1] == "b 1"
  assert len(texts["text"]) == calibration.TEXTS
  one = calibration.calibration_texts(_Task([Example("a", None)]), ["text"])
  assert one == {"text": ["a"]}


def test_measure_says_why_it_does_not_correct():
  logs = []
  module = tf.Module()
  module.text_input_names = ["text"]
  assert calibration.measure(_Task(None), "classification", module, None,
                             None, logs.append) is None
  assert calibration.measure(_Task([]), "tagging", module, None, None,
                             logs.append) is None
  assert "no training texts (task 'x': no train file)" in logs[0]
  assert "tagging model's INT8 outputs are not bias-corrected" in logs[1]
