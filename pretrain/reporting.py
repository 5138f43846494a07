"""What a pre-training run reports: its first line, the progress line of each
window of steps, TensorBoard scalars and the loss-scaling summary.

The report of training/loop.py for pre-training; the line's format is
pretrain/progress_line.py's, the statistics pretrain/step_statistics.py's.
"""

import os

import tensorflow as tf

from pretrain import progress_line
from pretrain import step_statistics


def summary_writer(model_dir, is_chief):
  """The TensorBoard writer of `model_dir/train` (a no-op off the chief)."""
  if is_chief:
    return tf.summary.create_file_writer(os.path.join(model_dir, "train"))
  return tf.summary.create_noop_writer()


def window_statistics(window_sums, window_steps, learning_rate):
  """The statistics of the progress line from the sums of its window of
  steps; `grad_norm` is the mean over the steps not skipped,
  `skipped_steps` counts the steps loss scaling skipped."""
  last = step_statistics.summarize_sums(window_sums, window_steps)
  skipped = int(round(float(window_sums["skipped_steps"])))
  last["grad_norm"] = float(window_sums["grad_norm"]) / max(
      window_steps - skipped, 1)
  last["skipped_steps"] = skipped
  last["learning_rate"] = learning_rate
  return last


class ProgressReport(object):
  """Logs the progress of a run and writes its TensorBoard scalars.

  Args:
    log: where lines go.
    writer: a `tf.summary` writer (`summary_writer`).
    batch_size: the global batch.
    flops_per_step: the analytic FLOPs of one step.
    peak: the peak FLOP/s of all replicas (MFU's denominator).
    learns_sampler: whether the model has a sampling loss to show.
    learning_rate: () -> the learning rate now.
    loss_scale: () -> the float16 loss scale now (read only when loss
      scaling skipped steps).
    raise_peak: for a probed peak, FLOP/s -> None, called when a window
      achieves more than `peak` (pretrain/peak.py `probe_raiser`); MFU
      then counts against the achieved rate. None keeps `peak`.
  """

  def __init__(self, log, writer, batch_size, flops_per_step, peak,
               learns_sampler, learning_rate, loss_scale, raise_peak=None):
    self._log = log
    self._writer = writer
    self._batch_size = batch_size
    self._flops_per_step = flops_per_step
    self._peak = peak
    self._learns_sampler = learns_sampler
    self._learning_rate = learning_rate
    self._loss_scale = loss_scale
    self._raise_peak = raise_peak
    self._peak_raised = False
    self.skipped_steps = 0  # Over the whole run.

  def start(self, step, total, num_replicas, peak_source):
    """The run's first line."""
    self._log("Training steps %d -> %d on %d replica(s), global batch %d, "
              "%.3g TFLOPs per step (analytic), peak %.3g TFLOP/s%s." % (
                  step, total, num_replicas, self._batch_size,
                  self._flops_per_step / 1e12, self._peak / 1e12,
                  " (%s)" % peak_source))

  def window(self, step, total, window_sums, window_steps, timing):
    """Reports a window of steps ending at `step`; returns its statistics.

    Args:
      window_sums: {statistic: sum over the window's steps}.
      timing: (steps per second, elapsed seconds, ETA seconds).
    """
    last = window_statistics(window_sums, window_steps, self._learning_rate())
    self.skipped_steps += last["skipped_steps"]
    steps_per_sec, elapsed, eta = timing
    self._check_peak(self._flops_per_step * steps_per_sec)
    self._log(progress_line.progress_line(
        step, total, steps_per_sec, self._batch_size, elapsed, eta, last,
        self._flops_per_step, self._peak, self._learns_sampler))
    with self._writer.as_default(step=step):
      for key, value in last.items():
        tf.summary.scalar(key, value)
    return last

  def _check_peak(self, achieved):
    """Raises a probed peak that the run has beaten (said once)."""
    if self._raise_peak is None or achieved <= self._peak:
      return
    if not self._peak_raised:
      self._log("The steps ran at %.3g TFLOP/s, above the matmul probe's "
                "%.3g: the probe was measured on a busy machine. MFU now "
                "counts against the steps' rate, and the probe's cache "
                "keeps it." % (achieved / 1e12, self._peak / 1e12))
    self._peak_raised = True
    self._peak = achieved
    self._raise_peak(achieved)

  def flush(self):
    """Writes the pending summaries."""
    self._writer.flush()

  def finish(self):
    """Flushes; says how many steps loss scaling skipped, if any."""
    self.flush()
    if self.skipped_steps:
      self._log("%d steps skipped by loss scaling (non-finite float16 "
                "gradients); loss scale now %g." % (
                    self.skipped_steps, self._loss_scale()))
