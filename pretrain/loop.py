"""The pre-training loop: loops of steps, reports, checkpoints, evaluations.

The third of the trainer's three parts (pretrain/trainer.py). It trains in
calls of at most `iterations_per_loop` steps that end on every multiple of
`log_every`, `save_every` and `eval_every` and at the last step; after each
call it checks that the statistics are finite, reports a finished window
of steps (pretrain/reporting.py), saves, evaluates and honours a Ctrl-C
(util/interrupt.py). What a step trains is pretrain/task.py's, how a
checkpoint is written pretrain/checkpointing.py's: the loop only calls
them, so it runs alone on stand-ins.
"""

import collections
import time

import numpy as np

from util.errors import Interrupted
from util.errors import TrainingDivergedError

# How often the loop stops: the run's last step, at most
# `iterations_per_loop` steps per call, a progress line every `log_every`
# steps, a checkpoint every `save_every`, an evaluation every `eval_every`
# (0: none).
LoopSettings = collections.namedtuple(
    "LoopSettings", ["total_steps", "iterations_per_loop", "log_every",
                     "save_every", "eval_every"])

# What the loop calls besides the report: `train(n)` trains n steps and
# returns {statistic: sum over them} (numbers); `save(step)` saves a
# checkpoint; `save_at_stop(step)` returns the path of a checkpoint of
# `step`, saving one unless it exists; `latest()` is the last good
# checkpoint or None; `evaluate(step)` evaluates (with eval_every only).
LoopCalls = collections.namedtuple(
    "LoopCalls", ["train", "save", "save_at_stop", "latest", "evaluate"])


class _Window(object):
  """Sums of the step statistics since the last progress line."""

  def __init__(self, start_time):
    self.sums, self.steps, self.start_time = None, 0, start_time

  def add(self, sums, num_steps):
    self.steps += num_steps
    self.sums = sums if self.sums is None else {
        k: self.sums[k] + sums[k] for k in sums}


class TrainingLoop(object):
  """Runs the loop of `settings` (a LoopSettings) with `calls` (LoopCalls),
  reporting to `report` (a reporting.ProgressReport); `clock` gives
  seconds."""

  def __init__(self, settings, calls, report, clock=time.time):
    self.settings = settings
    self._calls = calls
    self._report = report
    self._clock = clock
    self._start = None  # (time, step) of the run's start.

  def run(self, step, stop):
    """Trains from `step` to the last step; returns the statistics of the
    last progress line (None if none was due).

    Args:
      step: the step reached (restored).
      stop: a util.interrupt.StopRequest; when `requested`, the loop saves
        a checkpoint after the current call and raises Interrupted.
    Raises:
      TrainingDivergedError: a statistic became non-finite (nothing saved).
    """
    total = self.settings.total_steps
    self._start = (self._clock(), step)
    window, last = _Window(self._clock()), None
    while step < total:
      n = self._loop_length(step)
      sums = self._calls.train(n)
      self._check_finite(sums, step, n)
      step += n
      window.add(sums, n)
      if step % self.settings.log_every == 0 or step == total:
        last = self._report_window(step, window)
        window = _Window(self._clock())
      self._after_loop(step, stop)
    self._report.finish()
    return last

  def _loop_length(self, step):
    """Steps of the next call: to the nearest boundary, at most
    `iterations_per_loop`."""
    s = self.settings
    boundaries = [s.total_steps, _next_multiple(step, s.log_every),
                  _next_multiple(step, s.save_every)]
    if s.eval_every:
      boundaries.append(_next_multiple(step, s.eval_every))
    return min(s.iterations_per_loop, min(boundaries) - step)

  def _report_window(self, step, window):
    """Reports `window`, ending at `step`; returns its statistics."""
    now = self._clock()
    start_time, start_step = self._start
    elapsed = now - start_time
    rate = window.steps / max(now - window.start_time, 1e-9)
    eta = (self.settings.total_steps - step) / max(
        (step - start_step) / max(elapsed, 1e-9), 1e-9)
    return self._report.window(step, self.settings.total_steps, window.sums,
                               window.steps, (rate, elapsed, eta))

  def _after_loop(self, step, stop):
    """Saves, evaluates and stops at `step` as the settings and Ctrl-C say."""
    s = self.settings
    if step % s.save_every == 0 or step == s.total_steps:
      self._calls.save(step)
    if s.eval_every and step % s.eval_every == 0 and step < s.total_steps:
      self._calls.evaluate(step)
    if stop.requested and step < s.total_steps:
      self._report.flush()
      raise Interrupted(
          "interrupted at step %d of %d; checkpoint %s saved. Re-run the "
          "same command to resume from it." % (
              step, s.total_steps, self._calls.save_at_stop(step)),
          signum=stop.signum)

  def _check_finite(self, sums, step, n):
    """Raises TrainingDivergedError if a sum of the `n` steps after `step`
    is not finite."""
    if not all(np.isfinite(v) for v in sums.values()):
      bad = [k for k, v in sums.items() if not np.isfinite(v)]
      raise TrainingDivergedError(
          "non-finite %s between steps %d and %d; stopped without saving. "
          "The last good checkpoint is %s. Lower learning_rate or check "
          "the data." % (", ".join(bad), step + 1, step + n,
                         self._calls.latest() or "(none yet)"))


def _next_multiple(step, every):
  return (step // every + 1) * every
