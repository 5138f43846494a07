"""The pre-training progress line, printed every `log_every` steps."""

from util import progress


def progress_line(step, total, steps_per_sec, batch_size, elapsed, eta, m,
                  flops_per_step, peak, learns_sampler):
  """One line: step/total, speed, elapsed/ETA, the window's mean losses and
  accuracies (`m`, step_statistics' summary), model FLOP/s and MFU against
  `peak` FLOP/s.

  Args:
    step, total: the step reached and the run's last step.
    steps_per_sec: the window's speed; batch_size: the global batch.
    elapsed, eta: seconds.
    m: {metric: value} of the window.
    flops_per_step: the analytic FLOPs of one step.
    learns_sampler: whether the model has a sampling loss to show.
  """
  achieved = flops_per_step * steps_per_sec
  parts = ["step %d/%d (%.1f%%)" % (step, total, 100.0 * step / total),
           "%.2f steps/s %.1f seq/s" % (steps_per_sec,
                                        steps_per_sec * batch_size),
           "elapsed %s ETA %s" % (progress.format_duration(elapsed),
                                  progress.format_duration(eta)),
           "loss %.4f mlm %.4f" % (m["total_loss"], m["mlm_loss"])]
  if "disc_loss" in m:
    parts[-1] += " disc %.4f" % m["disc_loss"]
    if learns_sampler:
      parts[-1] += " samp %.4f" % m["sampling_loss"]
    parts.append("gen_acc %.3f disc_acc %.3f repl %.3f" % (
        m["gen_accuracy"], m["disc_accuracy"], m["replacement_rate"]))
    parts.append("D loss repl %.3f orig %.3f" % (m["disc_loss_replaced"],
                                                 m["disc_loss_original"]))
  if "temperature" in m:
    parts.append("T %.2f" % m["temperature"])
  if "hp_estimator_pearson" in m:
    parts.append("hp_r %.3f" % m["hp_estimator_pearson"])
  parts.append("%.3g TFLOP/s MFU %.2f%%" % (achieved / 1e12,
                                            100.0 * achieved / peak))
  if m.get("skipped_steps"):
    parts.append("%d steps skipped by loss scaling" % m["skipped_steps"])
  return " | ".join(parts)
