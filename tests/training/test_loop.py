"""training/loop.py alone, and with pretrain/reporting.py, on stand-ins.

The loop's train call returns made-up sums, its saves and evaluations are
recorded, its clock is a counter: no model, no TensorFlow step.
"""

import math
import os
import signal
import types

import numpy as np
import pytest
import tensorflow as tf

from pretrain import reporting
from training import loop as loop_lib
from util.errors import Interrupted
from util.errors import TrainingDivergedError

SETTINGS = loop_lib.LoopSettings(
    total_steps=7, iterations_per_loop=3, log_every=2,
    save=loop_lib.Steps(every=4), evaluate=loop_lib.Steps(every=3))


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

  def calls(self, save=True):
    def on_stop(step):
      self.stopped.append(step)
      return "stopped at %d" % step

    def on_divergence(names, first, last):
      return "non-finite %s between %d and %d; last saved %s" % (
          ", ".join(names), first, last, self.saved[-1:])

    return loop_lib.LoopCalls(
        train=lambda n: self.trained.append(n) or self._sums_of(n),
        save=self.saved.append if save else None,
        evaluate=self.evaluated.append, on_stop=on_stop,
        on_divergence=on_divergence)


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
  # A line every 2 steps, at each evaluation and at the end.
  steps = [line.split(" ")[1] for line in lines]
  assert steps == ["2/7", "3/7", "4/7", "6/7", "7/7"], lines
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
                     match=r"non-finite total_loss between 5 and 6; "
                     r"last saved \[4\]"):
    _run(recorder, lines)
  assert recorder.saved == [4]


def test_a_stop_request_saves_and_raises_interrupted_after_the_call():
  recorder, lines = Recorder(), []
  with pytest.raises(Interrupted, match="^stopped at 2$") as e:
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
  assert [s for s, _ in values["total_loss"]] == [2, 3, 4, 6, 7]
  assert all(math.isclose(v, 2.0) for _, v in values["total_loss"])
  assert set(values) >= {"mlm_loss", "gen_accuracy", "grad_norm",
                         "learning_rate", "skipped_steps"}


def test_steps_members_next_and_count():
  steps = loop_lib.Steps(every=4, at=(3, 8, 9))
  assert [s for s in range(1, 13) if s in steps] == [3, 4, 8, 9, 12]
  assert [steps.next_after(s) for s in (0, 3, 4, 8, 9)] == [3, 4, 8, 9, 12]
  assert steps.count_between(0, 12) == 4 and steps.count_between(4, 9) == 1
  assert loop_lib.Steps().next_after(5) is None and 5 not in loop_lib.Steps()
  assert loop_lib.Steps(every=10 ** 6).count_between(0, 10 ** 12) == 999999


class _Lines(object):
  """A stand-in report: each window's (step, steps, sums, timing)."""

  def __init__(self):
    self.windows, self.finished = [], False

  def window(self, step, total, sums, num_steps, timing):
    self.windows.append((step, num_steps, sums, timing))
    return dict(sums, step=step)

  def flush(self):
    pass

  def finish(self):
    self.finished = True


def test_fine_tuning_evaluates_at_listed_steps_and_saves_on_no_schedule():
  # Fine-tuning: evaluations at the epochs' ends (steps 3 and 7 of 10; the
  # last one is the caller's), no checkpoints on a schedule.
  recorder, report = Recorder(lambda n: dict(loss=float(n))), _Lines()
  settings = loop_lib.LoopSettings(
      total_steps=10, iterations_per_loop=4, log_every=4,
      save=loop_lib.Steps(), evaluate=loop_lib.Steps(at=(3, 7, 10)))
  loop = loop_lib.TrainingLoop(settings, recorder.calls(save=False), report)
  last = loop.run(0, types.SimpleNamespace(requested=False))
  assert recorder.trained == [3, 1, 3, 1, 2]
  assert recorder.evaluated == [3, 7] and recorder.saved == []
  assert [(w[0], w[1]) for w in report.windows] == [
      (3, 3), (4, 1), (7, 3), (8, 1), (10, 2)]
  assert last == dict(loss=2.0, step=10) and report.finished


def test_the_eta_counts_the_evaluations_still_to_come():
  # Each train call takes 1 s per step, each evaluation 10 s (the clock
  # advances only in them).
  now = [0.0]

  def train(n):
    now[0] += n
    return dict(loss=1.0)

  def evaluate(step):
    now[0] += 10.0

  calls = loop_lib.LoopCalls(train=train, save=None, evaluate=evaluate,
                             on_stop=str, on_divergence=None)
  settings = loop_lib.LoopSettings(
      total_steps=8, iterations_per_loop=8, log_every=2,
      save=loop_lib.Steps(), evaluate=loop_lib.Steps(every=2))
  report = _Lines()
  loop_lib.TrainingLoop(settings, calls, report, clock=lambda: now[0]).run(
      0, types.SimpleNamespace(requested=False))
  timings = {w[0]: w[3] for w in report.windows}
  # At step 2: 6 steps at 1 step/s, no evaluation timed yet.
  assert timings[2] == (1.0, 2.0, 6.0)
  # At step 4: 4 steps, and the evaluation at 6 at the 10 s measured.
  assert timings[4] == (1.0, 14.0, 14.0)
  assert timings[8][2] == 0.0


def test_the_loop_takes_stop_signals_itself_and_stops_after_the_call():
  # No StopRequest given: a SIGTERM during a call is a stop request, not
  # an exception in the middle of the step.
  def sums_of(n):
    if not recorder.trained[:-1]:
      os.kill(os.getpid(), signal.SIGTERM)
    return _sums(n)
  recorder, lines = Recorder(sums_of), []
  report = reporting.ProgressReport(
      lines.append, tf.summary.create_noop_writer(), 8, 1e9, 1e12,
      False, learning_rate=lambda: 1e-3, loss_scale=lambda: 1.0)
  loop = loop_lib.TrainingLoop(SETTINGS, recorder.calls(), report)
  with pytest.raises(Interrupted, match="^stopped at 2$") as e:
    loop.run(0)
  assert e.value.exit_code == 143 and recorder.trained == [2]
