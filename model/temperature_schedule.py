"""The replacement curriculum: p_G's sampling temperature as a function of
the training step (docs/method.md §5.1).

Early in pre-training p_G is close to the unigram distribution, so a
replacement is as frequent as the token it replaced and only context gives
it away; D then sits at the prior for thousands of steps. A temperature
above 1 flattens p_G, which over-samples rare tokens that D spots without
context; decaying it to 1 hands D harder replacements as it learns (after
Fast-ELECTRA, Dong et al. 2024, whose generator is fixed and whose
temperature decays).
"""

import math

import tensorflow as tf

SHAPES = ("linear", "cosine")


class TemperatureSchedule(object):
  """T(step): `initial` at step 0 to `final` at `decay_steps`, then `final`.

  Args:
    initial: T at step 0, > 0 (hparam `temperature`).
    final: T from `decay_steps` on, > 0 (hparam `temperature_final`);
      None: `initial` (a constant temperature).
    decay_steps: steps from `initial` to `final` (hparam
      `temperature_decay_steps`); 0 with `final` != `initial` is a step
      change at step 0.
    shape: "linear" or "cosine" (half a cosine: slow at both ends).

  Call: `schedule(step)`, step a Python number or a scalar tensor -> T, a
  Python float when the temperature is constant (so a constant 1 costs
  nothing), else a float32 scalar tensor.
  """

  def __init__(self, initial=1.0, final=None, decay_steps=0, shape="linear"):
    final = initial if final is None else final
    if initial <= 0 or final <= 0:
      raise ValueError("temperatures must be > 0, got %r and %r" %
                       (initial, final))
    if decay_steps < 0:
      raise ValueError("decay_steps must be >= 0, got %r" % decay_steps)
    if shape not in SHAPES:
      raise ValueError("shape must be one of %s, got %r" % (SHAPES, shape))
    self.initial = float(initial)
    self.final = float(final)
    self.decay_steps = int(decay_steps)
    self.shape = shape

  @property
  def constant(self):
    """Whether T is the same at every step."""
    return self.initial == self.final

  def __call__(self, step):
    if self.constant:
      return self.initial
    if self.decay_steps == 0:
      return tf.constant(self.final, tf.float32)
    done = tf.clip_by_value(
        tf.cast(step, tf.float32) / float(self.decay_steps), 0.0, 1.0)
    if self.shape == "cosine":
      done = 0.5 * (1.0 - tf.cos(math.pi * done))
    return self.initial + (self.final - self.initial) * done

  def value_at(self, step):
    """T at a Python step, as a Python float (for logs and reports)."""
    return float(self(tf.constant(step)))

  def get_config(self):
    return dict(initial=self.initial, final=self.final,
                decay_steps=self.decay_steps, shape=self.shape)
