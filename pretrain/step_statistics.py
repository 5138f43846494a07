"""What the pre-training progress line and summaries show, from step sums.

`step_statistics` runs in each replica inside the train loop and returns
sums (so they add over replicas and steps); `summarize_sums` turns the sums
of a window of steps into means and ratios on the host.

`hp_estimator_pearson` (the progress line's `hp_r`) is the Pearson
correlation, over the real masked positions of the window, of the log of
the sampler's estimate of D's loss with the log of D's actual loss
(docs/method.md §13.2): HP-Dist's estimate p_S/p_G is heavy-tailed and
overflows float32 outside log space, and its square would sooner.
"""

import math

import tensorflow as tf


def step_statistics(out, features, learns_sampler):
  """Sums (this replica's) of what the progress line and summaries show."""
  w = tf.cast(features["masked_lm_weights"], tf.float32)
  mask = tf.cast(features["input_mask"], tf.float32)
  stats = dict(
      total_loss=out["total_loss"], mlm_loss=out["mlm_loss"],
      gen_correct=tf.reduce_sum(w * tf.cast(tf.equal(
          out["masked_lm_preds"], features["masked_lm_ids"]), tf.float32)),
      num_masked=tf.reduce_sum(w))
  if "disc_loss" not in out:
    return stats
  predicted = tf.cast(out["disc_probs"] > 0.5, tf.int32)
  replaced_tokens = mask * tf.cast(out["disc_labels"], tf.float32)
  token_loss = tf.cast(out["disc_loss_per_token"], tf.float32)
  stats.update(
      # D's loss on replaced and on original tokens apart: at the prior,
      # D's loss is low on originals and high on replacements.
      disc_loss_replaced_sum=tf.reduce_sum(replaced_tokens * token_loss),
      disc_loss_original_sum=tf.reduce_sum((mask - replaced_tokens) *
                                           token_loss),
      num_replaced_tokens=tf.reduce_sum(replaced_tokens),
      disc_loss=out["disc_loss"], sampling_loss=out["sampling_loss"],
      disc_correct=tf.reduce_sum(mask * tf.cast(tf.equal(
          predicted, out["disc_labels"]), tf.float32)),
      num_tokens=tf.reduce_sum(mask),
      replaced=tf.reduce_sum(w * tf.cast(tf.not_equal(
          out["sampled_tokens"], features["masked_lm_ids"]), tf.float32)))
  if learns_sampler:
    x = out["est_log_disc_loss"] * w
    y = out["actual_log_disc_loss"] * w
    stats.update(sx=tf.reduce_sum(x), sy=tf.reduce_sum(y),
                 sxx=tf.reduce_sum(x * x), syy=tf.reduce_sum(y * y),
                 sxy=tf.reduce_sum(x * y))
  return stats


def summarize_sums(sums, num_steps):
  """Host-side means and ratios from summed step statistics."""
  s = {k: float(v) for k, v in sums.items()}
  result = {k: s[k] / num_steps for k in
            ("total_loss", "mlm_loss", "disc_loss", "sampling_loss")
            if k in s}
  result["gen_accuracy"] = s["gen_correct"] / max(s["num_masked"], 1.0)
  if "temperature_sum" in s:
    result["temperature"] = s["temperature_sum"] / num_steps
  if "disc_correct" in s:
    result["disc_accuracy"] = s["disc_correct"] / max(s["num_tokens"], 1.0)
    result["replacement_rate"] = s["replaced"] / max(s["num_masked"], 1.0)
    replaced = s["num_replaced_tokens"]
    result["disc_loss_replaced"] = s["disc_loss_replaced_sum"] / max(
        replaced, 1.0)
    result["disc_loss_original"] = s["disc_loss_original_sum"] / max(
        s["num_tokens"] - replaced, 1.0)
  if "sxy" in s:
    n = s["num_masked"]
    cov = s["sxy"] / n - (s["sx"] / n) * (s["sy"] / n)
    vx = s["sxx"] / n - (s["sx"] / n) ** 2
    vy = s["syy"] / n - (s["sy"] / n) ** 2
    result["hp_estimator_pearson"] = (
        cov / math.sqrt(vx * vy) if vx > 0 and vy > 0 else float("nan"))
  return result
