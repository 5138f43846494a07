"""The training loop of both stages: calls of steps, progress with ETA,
checkpoints, evaluations, stop signals and divergence.

Pre-training (pretrain/trainer.py) and fine-tuning (finetune/trainer.py)
each supply what differs as `LoopCalls`: how n steps are trained, how a
checkpoint is saved, how the model is evaluated and what a stop or a
divergence means for their files, plus a report that writes their progress
lines. The loop decides when: it trains in calls of at most
`iterations_per_loop` steps that end on every boundary (a progress line,
a checkpoint, an evaluation, the last step); after each call it checks
that the statistics are finite, reports, saves, evaluates and honours a
stop request (Ctrl-C, SIGTERM, SIGHUP: util/interrupt.py). It runs alone
on stand-ins (tests/training/test_loop.py).
"""

import collections
import time

import numpy as np

from util import interrupt
from util.errors import Interrupted
from util.errors import TrainingDivergedError


class Steps(object):
  """A set of steps: every `every`-th (0: none) and those in `at`.

  `step in steps` tells whether a step is a member; `next_after(step)` is
  the smallest member above `step` (None if there is none).
  """

  def __init__(self, every=0, at=()):
    self.every = int(every)
    self.at = tuple(sorted(set(int(s) for s in at)))

  def __contains__(self, step):
    return bool(self.every and step % self.every == 0) or step in self.at

  def next_after(self, step):
    candidates = [s for s in self.at if s > step]
    if self.every:
      candidates.append((step // self.every + 1) * self.every)
    return min(candidates) if candidates else None

  def count_between(self, low, high):
    """How many members lie strictly between `low` and `high`."""
    count = sum(1 for s in self.at if low < s < high and not (
        self.every and s % self.every == 0))
    if self.every and high > low:
      count += (high - 1) // self.every - low // self.every
    return count

  def __repr__(self):
    return "Steps(every=%d, at=%r)" % (self.every, self.at)


# When the loop stops: `total_steps` in all, at most `iterations_per_loop`
# steps per train call; a progress line every `log_every` steps, at every
# evaluation and at the last step; a checkpoint at the steps of `save`
# (Steps) and at the last one; an evaluation at the steps of `evaluate`
# (Steps) before the last one (the last one's evaluation is the caller's).
LoopSettings = collections.namedtuple(
    "LoopSettings", ["total_steps", "iterations_per_loop", "log_every",
                     "save", "evaluate"])

# What the loop calls besides the report:
#   train(n): trains n steps; returns {statistic: sum over them} (numbers).
#   save(step): saves a checkpoint; None if the stage saves none on a
#     schedule (fine-tuning keeps its best model at evaluations).
#   evaluate(step): evaluates.
#   on_stop(step): what a stop request at `step` leaves (saving it first
#     if the stage resumes): the message of the Interrupted it raises.
#   on_divergence(names, first, last): the message of the
#     TrainingDivergedError when statistics `names` went non-finite between
#     steps `first` and `last`.
LoopCalls = collections.namedtuple(
    "LoopCalls", ["train", "save", "evaluate", "on_stop", "on_divergence"])


class _Clock(object):
  """Seconds spent training and evaluating, for the rate and the ETA."""

  def __init__(self, clock, start_step):
    self.clock, self.start_step = clock, start_step
    self.start = clock()
    self.train_seconds, self.eval_seconds = 0.0, []
    self.window_seconds, self.window_steps = 0.0, 0

  def timed(self, fn, *args):
    """(fn(*args), seconds it took)."""
    begin = self.clock()
    result = fn(*args)
    return result, self.clock() - begin

  def trained(self, num_steps, seconds):
    self.train_seconds += seconds
    self.window_seconds += seconds
    self.window_steps += num_steps

  def timing(self, step, settings):
    """(steps/s of the window, seconds since the start, ETA in seconds):
    the steps left at the training rate so far plus the evaluations left
    at their mean duration."""
    rate = self.window_steps / max(self.window_seconds, 1e-9)
    overall = (step - self.start_step) / max(self.train_seconds, 1e-9)
    eta = (settings.total_steps - step) / max(overall, 1e-9)
    if self.eval_seconds:
      evals_left = settings.evaluate.count_between(step,
                                                   settings.total_steps)
      eta += evals_left * float(np.mean(self.eval_seconds))
    self.window_seconds, self.window_steps = 0.0, 0
    return rate, self.clock() - self.start, eta


class TrainingLoop(object):
  """Runs the loop of `settings` (LoopSettings) with `calls` (LoopCalls).

  `report` writes progress: `window(step, total_steps, sums, num_steps,
  (steps_per_second, elapsed_seconds, eta_seconds))` returns the
  statistics of a window of steps and writes its line; `flush()` is
  called before a stop, `finish()` at the end. `clock` gives seconds.
  """

  def __init__(self, settings, calls, report, clock=time.time):
    self.settings = settings
    self._calls = calls
    self._report = report
    self._clock = clock

  def run(self, step, stop=None):
    """Trains from `step` to the last step; returns the statistics of the
    last progress line (None if there was nothing to train).

    Args:
      step: the step reached (restored).
      stop: a util.interrupt.StopRequest; None: the loop takes stop
        signals itself for as long as it runs.
    Raises:
      Interrupted: a stop was requested; raised after the current call,
        with `calls.on_stop`'s message.
      TrainingDivergedError: a statistic became non-finite (nothing saved).
    """
    if stop is None:
      with interrupt.stop_requests() as requests:
        return self._run(step, requests)
    return self._run(step, stop)

  def _run(self, step, stop):
    total = self.settings.total_steps
    clock = _Clock(self._clock, step)
    sums, window_steps, last = None, 0, None
    while step < total:
      n = self._loop_length(step)
      new, seconds = clock.timed(self._calls.train, n)
      self._check_finite(new, step, n)
      clock.trained(n, seconds)
      step += n
      window_steps += n
      sums = new if sums is None else {k: sums[k] + new[k] for k in new}
      if self._reports_at(step):
        last = self._report.window(step, total, sums, window_steps,
                                   clock.timing(step, self.settings))
        sums, window_steps = None, 0
      self._after_call(step, stop, clock)
    self._report.finish()
    return last

  def _reports_at(self, step):
    s = self.settings
    return (step % s.log_every == 0 or step == s.total_steps or
            self._evaluates_at(step))

  def _evaluates_at(self, step):
    return step in self.settings.evaluate and step < self.settings.total_steps

  def _loop_length(self, step):
    """Steps of the next call: to the nearest boundary, at most
    `iterations_per_loop`."""
    s = self.settings
    boundaries = [s.total_steps, (step // s.log_every + 1) * s.log_every]
    for schedule in (s.save, s.evaluate):
      following = schedule.next_after(step)
      if following is not None:
        boundaries.append(following)
    return min(s.iterations_per_loop, min(boundaries) - step)

  def _after_call(self, step, stop, clock):
    """Saves, evaluates and stops at `step` as the settings and a stop
    request say."""
    s = self.settings
    if self._calls.save is not None and (step in s.save or
                                         step == s.total_steps):
      self._calls.save(step)
    if self._evaluates_at(step):
      _, seconds = clock.timed(self._calls.evaluate, step)
      clock.eval_seconds.append(seconds)
    if stop.requested and step < s.total_steps:
      self._report.flush()
      raise Interrupted(self._calls.on_stop(step), signum=stop.signum)

  def _check_finite(self, sums, step, n):
    """Raises TrainingDivergedError if a sum of the `n` steps after `step`
    is not finite."""
    bad = [k for k, v in sums.items() if not np.isfinite(v)]
    if bad:
      raise TrainingDivergedError(
          self._calls.on_divergence(bad, step + 1, step + n))
