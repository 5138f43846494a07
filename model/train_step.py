"""One replica's training step, shared by pre-training, fine-tuning and bench/.

    forward + backward  (optionally XLA-compiled; no cross-replica op inside)
    -> unscale (float16 loss scaling)
    -> sum over replicas, clip at the global norm, apply (model/optimization.py)
    -> the global gradient norm, and whether the update was skipped

Only the forward/backward pass is compiled: `apply_gradients` all-reduces the
gradients, and a cross-replica call inside a nested `tf.function` (or an XLA
cluster) is refused by MirroredStrategy ("merge_call called while defining
a new graph"). Keeping it outside lets every strategy and `jit_compile`
compose.

Under float16 the LossScaleOptimizer skips an update whose gradients are not
finite and lowers the loss scale; such a step returns grad norm 0 and
`skipped` 1, so callers can count it instead of taking it for a diverged run.
"""

import tensorflow as tf
import tf_keras

from model import optimization


class ReplicaTrainStep(object):
  """Callable inside `strategy.run` (or with no strategy): one update.

  Args:
    loss_fn: features -> (loss, outputs). `loss` is a float32 scalar, this
      replica's share of the global-batch mean (the shares of all replicas
      sum to it); `outputs` is any nest of tensors, returned as is.
    variables: the variables to train (a list, or a callable returning it,
      for models whose variables are created on the first call).
    optimizer: a tf_keras optimizer, possibly a LossScaleOptimizer.
    clip_norm: global-norm clip of the summed gradients (0: none).
    jit_compile: XLA-compile the forward/backward pass.
    prepare_fn: features -> features, run before the compiled pass in the
      replica context: where cross-replica sums the loss needs (e.g.
      `model.losses.loss_denominators`) are taken.

  Call:
    features -> (outputs, grad_norm, skipped): grad_norm is the global norm
    before clipping (0 on a skipped step), skipped is 1.0 when loss scaling
    dropped the update, else 0.0 (float32 scalars).
  """

  def __init__(self, loss_fn, variables, optimizer, clip_norm,
               jit_compile=False, prepare_fn=None):
    self._loss_fn = loss_fn
    self._prepare_fn = prepare_fn
    self._variables = variables if callable(variables) else (
        lambda: variables)
    self.optimizer = optimizer
    self.clip_norm = clip_norm
    self.loss_scaling = isinstance(
        optimizer, tf_keras.mixed_precision.LossScaleOptimizer)
    forward_backward = self._forward_backward
    if jit_compile:
      forward_backward = tf.function(forward_backward, jit_compile=True)
    self._compiled = forward_backward

  def _forward_backward(self, features):
    variables = self._variables()
    with tf.GradientTape() as tape:
      loss, outputs = self._loss_fn(features)
      if self.loss_scaling:
        loss = self.optimizer.get_scaled_loss(loss)
    grads = tape.gradient(loss, variables)
    grads = [tf.zeros_like(v) if g is None else g
             for g, v in zip(grads, variables)]
    return outputs, grads

  def __call__(self, features):
    if self._prepare_fn is not None:
      features = self._prepare_fn(features)
    outputs, grads = self._compiled(features)
    if self.loss_scaling:
      grads = self.optimizer.get_unscaled_gradients(grads)
    norm = optimization.apply_clipped_gradients(
        self.optimizer, grads, self._variables(), self.clip_norm)
    if not self.loss_scaling:
      return outputs, norm, tf.constant(0.0)  # Non-finite: a real failure.
    finite = tf.math.is_finite(norm)
    return (outputs, tf.where(finite, norm, tf.zeros_like(norm)),
            1.0 - tf.cast(finite, tf.float32))
