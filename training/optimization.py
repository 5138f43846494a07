"""AdamW with linear warmup and decay, per-variable LR multipliers, clipping.

Built on tf-models-official's `AdamWeightDecay` (Adam with decoupled weight
decay) and its `LinearWarmup` schedule. Three additions:
  * `lr_multipliers`: {variable name: factor} scales the learning rate of a
    variable (layer-wise LR decay in fine-tuning). Adam is invariant to the
    scale of a gradient, so the factor must scale the update, not the gradient.
  * `frozen` for `frozen_steps`: those variables keep their values (no update,
    no weight decay) for the first `frozen_steps` steps of the optimizer.
  * `apply_clipped_gradients`: all-reduces the per-replica gradients first and
    clips the *global* gradient norm after, so N replicas compute exactly the
    update one device computes for the same global batch.
Unlike the TF1 ELECTRA code, Adam here uses bias correction (Keras's Adam).
"""

import re

import tensorflow as tf
import tf_keras
from official.modeling.optimization import legacy_adamw
from official.modeling.optimization import lr_schedule

# The suffix MirroredStrategy adds to the names of the other replicas' copies.
_REPLICA_SUFFIX = re.compile(r"/replica_\d+(?=:\d+$)")

# No weight decay on LayerNorm parameters and biases (BERT/ELECTRA).
NO_DECAY_PATTERNS = ["layer_norm", "LayerNorm", "bias"]


class AdamWeightDecay(legacy_adamw.AdamWeightDecay):
  """AdamW whose learning rate can be scaled per variable.

  Args:
    lr_multipliers: optional {variable.name: float}; variables not listed get
      the base learning rate.
    frozen: optional variable names whose learning rate is 0 while the
      optimizer's `iterations` < `frozen_steps` (Adam's moments still
      accumulate).
    frozen_steps: see `frozen`.
    Other arguments as `official.modeling.optimization.legacy_adamw`.
  """

  def __init__(self, lr_multipliers=None, frozen=(), frozen_steps=0,
               **kwargs):
    super(AdamWeightDecay, self).__init__(**kwargs)
    self._lr_multipliers = dict(lr_multipliers or {})
    self._frozen = frozenset(frozen) if frozen_steps > 0 else frozenset()
    self._frozen_steps = int(frozen_steps)

  def _scaled_apply_state(self, var, apply_state):
    # Under MirroredStrategy `var` is one replica's copy; copy k > 0 of "a:0"
    # is named "a/replica_k:0" and must get the factor of "a:0".
    name = _REPLICA_SUFFIX.sub("", var.name)
    factor = self._lr_multipliers.get(name, 1.0)
    frozen = name in self._frozen
    if (factor == 1.0 and not frozen) or apply_state is None:
      return apply_state
    key = (var.device, var.dtype.base_dtype)
    coefficients = apply_state.get(key) or self._fallback_apply_state(*key)
    if frozen:
      factor = factor * tf.cast(self.iterations >= self._frozen_steps,
                                var.dtype.base_dtype)
    scaled = dict(coefficients)
    for lr_name in ("lr_t", "lr"):
      if lr_name in scaled:
        scaled[lr_name] = scaled[lr_name] * factor
    return {key: scaled}

  def _resource_apply_dense(self, grad, var, apply_state=None):
    return super(AdamWeightDecay, self)._resource_apply_dense(
        grad, var, self._scaled_apply_state(var, apply_state))

  def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
    return super(AdamWeightDecay, self)._resource_apply_sparse(
        grad, var, indices, self._scaled_apply_state(var, apply_state))


def learning_rate_schedule(learning_rate, num_train_steps, num_warmup_steps,
                           lr_decay_power=1.0):
  """Linear warmup to `learning_rate`, then polynomial (linear) decay to 0."""
  decay = tf_keras.optimizers.schedules.PolynomialDecay(
      initial_learning_rate=learning_rate, decay_steps=max(1, num_train_steps),
      end_learning_rate=0.0, power=lr_decay_power)
  if num_warmup_steps <= 0:
    return decay
  return lr_schedule.LinearWarmup(
      after_warmup_lr_sched=decay, warmup_steps=num_warmup_steps,
      warmup_learning_rate=0.0)


def create_optimizer(learning_rate, num_train_steps, num_warmup_steps,
                     weight_decay_rate=0.01, epsilon=1e-6, lr_decay_power=1.0,
                     lr_multipliers=None, frozen=(), frozen_steps=0):
  """AdamW with ELECTRA's schedule; clip with `apply_clipped_gradients`."""
  return AdamWeightDecay(
      frozen=frozen, frozen_steps=frozen_steps,
      learning_rate=learning_rate_schedule(learning_rate, num_train_steps,
                                           num_warmup_steps, lr_decay_power),
      weight_decay_rate=weight_decay_rate, beta_1=0.9, beta_2=0.999,
      epsilon=epsilon, exclude_from_weight_decay=NO_DECAY_PATTERNS,
      gradient_clip_norm=0.0, lr_multipliers=lr_multipliers)


def create_slots(optimizer, variables):
  """Creates `optimizer`'s slot variables for `variables` (and its
  hyperparameters) now, in the current strategy scope, instead of in its
  first `apply_gradients`: a `tf.function` whose first call creates
  variables is traced twice, so a train loop traced after this call is
  traced once (a tiny pre-training starts ~4 s of CPU sooner)."""
  # Keras's legacy optimizers (and their LossScaleOptimizer, which passes
  # the call on) have no public method for this.
  optimizer._create_all_weights(variables)  # pylint: disable=protected-access


def apply_clipped_gradients(optimizer, grads, variables, clip_norm):
  """Sums gradients over replicas, clips the global norm, applies them.

  Call inside `strategy.run` (replica context) or outside any strategy.
  `grads` must already be scaled for the global batch (loss / global batch).
  Returns the global gradient norm before clipping (a scalar).
  """
  grads = [tf.convert_to_tensor(g) for g in grads]
  replica_context = tf.distribute.get_replica_context()
  if replica_context is not None:
    grads = replica_context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
  if clip_norm and clip_norm > 0:
    grads, norm = tf.clip_by_global_norm(grads, clip_norm)
  else:
    norm = tf.linalg.global_norm(grads)
  optimizer.apply_gradients(zip(grads, variables),
                            experimental_aggregate_gradients=False)
  return norm
