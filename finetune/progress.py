"""The progress line of a fine-tuning trial: the report training/loop.py
writes to.

One line per window of steps, for example
`sst trial 1/3: step 40/264 (epoch 0.30) loss 0.6931 lr 2.1e-05, 3.2 steps/s,
ETA 1m10s`, with the steps that float16 loss scaling skipped so far when
there are any.
"""

from util import progress


class FinetuningProgress(object):
  """Writes a trial's progress lines and keeps its losses.

  Args:
    log: takes one line.
    num_features: training features per epoch.
    batch_size: the global batch.
    learning_rate: the schedule, called with a step.

  `losses` lists (step, mean training loss of the window ending there).
  """

  def __init__(self, log, num_features, batch_size, learning_rate):
    self._log = log
    self._epoch_steps = num_features / float(batch_size)
    self._learning_rate = learning_rate
    self.losses, self.skipped_steps = [], 0

  def window(self, step, total_steps, sums, num_steps, timing):
    """Writes the line of the `num_steps` steps ending at `step`, whose
    statistics summed to `sums` ({"loss", "skipped_steps"}); `timing` is
    (steps/s, elapsed seconds, ETA seconds). Returns {"loss": mean}."""
    loss = sums["loss"] / num_steps
    self.skipped_steps += int(round(sums["skipped_steps"]))
    self.losses.append((step, loss))
    rate, _, eta = timing
    self._log("step %d/%d (epoch %.2f) loss %.4f lr %.3g, %.1f steps/s, "
              "ETA %s" % (step, total_steps, step / self._epoch_steps, loss,
                          float(self._learning_rate(step)), rate,
                          progress.format_duration(eta)) +
              (" | %d steps skipped by loss scaling" % self.skipped_steps
               if self.skipped_steps else ""))
    return dict(loss=loss)

  def flush(self):
    pass

  def finish(self):
    pass
