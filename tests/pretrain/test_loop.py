"""pretrain/loop.py and pretrain/reporting.py alone, on stand-ins.

The loop's train call returns made-up sums, its saves and evaluations are
recorded, its clock is a counter: no model, no TensorFlow step.
"""

import math
import signal
import types

import numpy as np
import pytest
import tensorflow as tf

from pretrain import loop as loop_lib
from pretrain import reporting
from util.errors import Interrupted
from util.errors import TrainingDivergedError

SETTINGS = loop_lib.LoopSettings(total_steps=7, iterations_per_loop=3,
                                 log_every=2, save_every=4, eval_every=3)


def _sums(n, skipped=0, loss=2.0):
  """The step statistics of `n` steps (mean loss `loss`) as sums."""
  return dict(total_loss=np.float32(n * loss), mlm_loss=np.float32(n),
              gen_correct=np.float32(3 * n), num_masked=np.float32(4 * n),
              grad_norm=np.float32(n - skipped),
              skipped_steps=np.float32(skipped))


class Recorder(object):
  """The loop's calls, recording what they were asked for."""

  def __init__(self, sums_of=_sums):
    self.trained, self.saved, self.evaluated, self.stopped = [], [], [], []
    self._sums_of = sums_of

  def calls(self):
    def save_at_stop(step):
      self.stopped.append(step)
      return "ckpt-%d" % step
    return loop_lib.LoopCalls(
        train=lambda n: self.trained.append(n) or self._sums_of(n),
        save=self.saved.append, save_at_stop=save_at_stop,
        latest=lambda: "ckpt-%d" % self.saved[-1] if self.saved else None,
        evaluate=self.evaluated.append)


def _run(recorder, lines, requested=False, writer=None, settings=SETTINGS):
  report = reporting.ProgressReport(
      lines.append, writer or tf.summary.create_noop_writer(), 8, 1e9, 1e12,
      False, learning_rate=lambda: 1e-3, loss_scale=lambda: 512.0)
  ticks = iter(range(1000))
  loop = loop_lib.TrainingLoop(settings, recorder.calls(), report,
                               clock=lambda: float(next(ticks)))
  # As util.interrupt.StopRequest after a SIGTERM.
  stop = types.SimpleNamespace(requested=requested,
                               signum=signal.SIGTERM if requested else None)
  return loop.run(0, stop)


def test_calls_end_on_every_boundary_and_save_evaluate_report_there():
  recorder, lines = Recorder(), []
  last = _run(recorder, lines)
  assert recorder.trained == [2, 1, 1, 2, 1]
  assert recorder.saved == [4, 7]
  assert recorder.evaluated == [3, 6]  # Not at the last step.
  steps = [line.split(" ")[1] for line in lines]
  assert steps == ["2/7", "4/7", "6/7", "7/7"], lines
  assert "loss 2.0000 mlm 1.0000" in lines[-1]
  assert last["total_loss"] == 2.0 and last["gen_accuracy"] == 0.75
  assert last["grad_norm"] == 1.0 and last["skipped_steps"] == 0
  assert last["learning_rate"] == 1e-3


def test_a_resumed_run_starts_at_its_step_and_a_finished_one_does_nothing():
  recorder = Recorder()
  report = reporting.ProgressReport(
      lambda line: None, tf.summary.create_noop_writer(), 8, 1e9, 1e12,
      False, learning_rate=lambda: 0.0, loss_scale=lambda: 1.0)
  loop = loop_lib.TrainingLoop(SETTINGS, recorder.calls(), report)
  stop = types.SimpleNamespace(requested=False)
  loop.run(5, stop)
  assert recorder.trained == [1, 1] and recorder.saved == [7]
  assert loop.run(7, stop) is None and recorder.trained == [1, 1]


def test_non_finite_sums_stop_without_saving_naming_the_last_checkpoint():
  def sums_of(n):
    return _sums(n, loss=float("nan")) if len(recorder.trained) > 3 else (
        _sums(n))
  recorder, lines = Recorder(sums_of), []
  with pytest.raises(TrainingDivergedError,
                     match=r"non-finite total_loss between steps 5 and 6; "
                     r"stopped without saving. The last good checkpoint is "
                     r"ckpt-4\."):
    _run(recorder, lines)
  assert recorder.saved == [4]


def test_a_stop_request_saves_and_raises_interrupted_after_the_call():
  recorder, lines = Recorder(), []
  with pytest.raises(Interrupted, match="interrupted at step 2 of 7; "
                     "checkpoint ckpt-2 saved. Re-run the same command") as e:
    _run(recorder, lines, requested=True)
  assert e.value.exit_code == 143  # 128 + SIGTERM.
  assert recorder.trained == [2] and recorder.stopped == [2]
  assert len(lines) == 1


def test_skipped_steps_are_reported_per_window_and_summed_at_the_end():
  recorder, lines = Recorder(lambda n: _sums(n, skipped=1)), []
  last = _run(recorder, lines)
  assert "1 steps skipped by loss scaling" in lines[0]
  assert lines[-1] == ("5 steps skipped by loss scaling (non-finite float16 "
                       "gradients); loss scale now 512.")
  assert last["skipped_steps"] == 1 and last["grad_norm"] == 0.0


def test_window_statistics_average_the_norm_over_applied_steps():
  sums = _sums(4, skipped=1)
  stats = reporting.window_statistics(sums, 4, learning_rate=0.5)
  assert stats["grad_norm"] == 1.0 and stats["skipped_steps"] == 1
  assert stats["total_loss"] == 2.0 and stats["learning_rate"] == 0.5


def test_progress_is_written_to_tensorboard(tmp_path):
  writer = tf.summary.create_file_writer(str(tmp_path))
  _run(Recorder(), [], writer=writer)
  values = {}
  for path in tf.io.gfile.glob(str(tmp_path / "events*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        values.setdefault(value.tag, []).append(
            (event.step, float(tf.make_ndarray(value.tensor))))
  assert [s for s, _ in values["total_loss"]] == [2, 4, 6, 7]
  assert all(math.isclose(v, 2.0) for _, v in values["total_loss"])
  assert set(values) >= {"mlm_loss", "gen_accuracy", "grad_norm",
                         "learning_rate", "skipped_steps"}
