"""One replica's training step, shared by pre-training, fine-tuning and bench/.

    forward + backward  (optionally XLA-compiled; no cross-replica op inside)
      [x gradient_accumulation_steps micro-batches, gradients summed]
    -> unscale (float16 loss scaling)
    -> sum over replicas, clip at the global norm, apply
       (training/optimization.py)
    -> the global gradient norm, and whether the update was skipped

Only the forward/backward pass is compiled: `apply_gradients` all-reduces the
gradients, and a cross-replica call inside a nested `tf.function` (or an XLA
cluster) is refused by MirroredStrategy ("merge_call called while defining
a new graph"). Keeping it outside lets every strategy and `jit_compile`
compose. Sums over replicas that the loss needs are therefore taken before
the compiled pass, on the whole replica batch, and handed to it as extra
arguments (`ReplicaTrainStep.__call__`'s `batch_values`). A loss that itself
needs cross-replica sums of what the forward pass computes (self-normalised
importance weights) compiles only its forward pass
(`pretraining_train_step`): the tape spans the compiled call and the
uncompiled rest of the loss, which may all-reduce.

Under float16 the LossScaleOptimizer skips an update whose gradients are not
finite and lowers the loss scale; such a step returns grad norm 0 and
`skipped` 1, so callers can count it instead of taking it for a diverged run.
"""

import tensorflow as tf
import tf_keras

from model import losses
from training import optimization


class ReplicaTrainStep(object):
  """Callable inside `strategy.run` (or with no strategy): one update.

  Args:
    loss_fn: (features, *batch_values) -> (loss, outputs). `loss` is a
      float32 scalar, this replica's share of the global-batch mean (the
      shares of all replicas, and of all micro-batches, sum to it);
      `outputs` is a nest of tensors, returned as is, or summed over the
      micro-batches when accumulating (so it should hold sums, e.g. loss
      shares, counts).
    variables: the variables to train (a list, or a callable returning it,
      for models whose variables are created on the first call).
    optimizer: a tf_keras optimizer, possibly a LossScaleOptimizer.
    clip_norm: global-norm clip of the summed gradients (0: none).
    jit_compile: XLA-compile the forward/backward pass.
    accumulation_steps: split the replica batch into this many equal
      micro-batches along axis 0, run forward/backward on each in turn and
      apply the summed gradients once: the update of the whole batch, with
      the activations of one micro-batch in memory.

  Call:
    (features, *batch_values) -> (outputs, grad_norm, skipped):
    `batch_values` are nests of tensors of the whole replica batch, taken
    by the caller in the replica context (where cross-replica sums may be
    taken, e.g. `model.losses.loss_denominators`); every micro-batch's
    `loss_fn` gets them whole. grad_norm is the global norm before clipping
    (0 on a skipped step), skipped is 1.0 when loss scaling dropped the
    update, else 0.0 (float32 scalars).
  """

  def __init__(self, loss_fn, variables, optimizer, clip_norm,
               jit_compile=False, accumulation_steps=1):
    self._loss = loss_fn
    self._variables = variables if callable(variables) else (
        lambda: variables)
    self.optimizer = optimizer
    self.clip_norm = clip_norm
    self.accumulation_steps = int(accumulation_steps)
    if self.accumulation_steps < 1:
      raise ValueError("accumulation_steps must be >= 1, got %d" %
                       self.accumulation_steps)
    self.loss_scaling = isinstance(
        optimizer, tf_keras.mixed_precision.LossScaleOptimizer)
    self._forward_backward = self._forward_backward_pass
    if jit_compile:
      self._forward_backward = tf.function(self._forward_backward,
                                           jit_compile=True)

  def _forward_backward_pass(self, features, *batch_values):
    """(outputs, gradients) of one batch; gradients of the scaled loss."""
    variables = self._variables()
    with tf.GradientTape() as tape:
      loss, outputs = self._loss(features, *batch_values)
      if self.loss_scaling:
        loss = self.optimizer.get_scaled_loss(loss)
    grads = tape.gradient(loss, variables)
    return outputs, [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                     for g, v in zip(grads, variables)]

  def _accumulate(self, features, batch_values):
    """Forward/backward over the micro-batches in turn, summing outputs
    and gradients (a `tf.while_loop`, so one micro-batch is live at a time).
    """
    k = self.accumulation_steps

    def micro_batches(t):
      if t.shape.rank == 0:
        return t
      if t.shape[0] is not None and t.shape[0] % k:
        raise ValueError("a replica batch of %d does not split into %d "
                         "micro-batches" % (t.shape[0], k))
      return tf.reshape(t, tf.concat([[k, -1], tf.shape(t)[1:]], 0))

    split = tf.nest.map_structure(micro_batches, features)

    def micro_batch(i):
      return tf.nest.map_structure(
          lambda t: t if t.shape.rank == 0 else tf.gather(t, i), split)

    # The first micro-batch outside the loop gives the sums their structure.
    outputs, grads = self._forward_backward(micro_batch(0), *batch_values)

    def body(i, outputs, grads):
      more_outputs, more_grads = self._forward_backward(micro_batch(i),
                                                        *batch_values)
      return (i + 1, tf.nest.map_structure(tf.add, outputs, more_outputs),
              [g + h for g, h in zip(grads, more_grads)])

    _, outputs, grads = tf.while_loop(lambda i, *_: i < k, body,
                                      (tf.constant(1), outputs, grads))
    return outputs, grads

  def __call__(self, features, *batch_values):
    if self.accumulation_steps > 1:
      outputs, grads = self._accumulate(features, batch_values)
    else:
      outputs, grads = self._forward_backward(features, *batch_values)
    if self.loss_scaling:
      grads = self.optimizer.get_unscaled_gradients(grads)
    norm = optimization.apply_clipped_gradients(
        self.optimizer, grads, self._variables(), self.clip_norm)
    if not self.loss_scaling:
      return outputs, norm, tf.constant(0.0)  # Non-finite: a real failure.
    finite = tf.math.is_finite(norm)
    return (outputs, tf.where(finite, norm, tf.zeros_like(norm)),
            1.0 - tf.cast(finite, tf.float32))


def pretraining_train_step(model, optimizer, step, outputs_fn, clip_norm,
                           jit_compile=False, accumulation_steps=1):
  """The train step of an `ElectraPretrainer` (run_pretraining.py and
  bench/ use this one): features -> (outputs, grad_norm, skipped), as a
  `ReplicaTrainStep`.

  The loss denominators are taken first, on the whole replica batch, and
  handed to the pass beside the features. Under
  `model.needs_cross_replica_sums` (self-normalised importance weights)
  with more than one replica, only `model.forward` is compiled and
  `model.objective` all-reduces outside it; otherwise (one replica: its
  sums are local) the whole forward/backward pass is one compiled function,
  which XLA runs much faster than a compiled forward whose backward is a
  second program fed every saved activation.

  Args:
    model: the pre-training model (variables built).
    optimizer: its optimizer.
    step: the global step (a scalar variable; the sampling warm-up reads it).
    outputs_fn: (model outputs, features) -> nest of tensors that add over
      micro-batches (e.g. `pretrain.step_statistics.step_statistics`).
    clip_norm, jit_compile, accumulation_steps: as `ReplicaTrainStep`'s
      (hparams `clip_norm`, `jit_compile`, `gradient_accumulation_steps`).
  """
  compile_forward_only = (jit_compile and
                          model.needs_cross_replica_sums and
                          _num_replicas() > 1)

  def forward(features):
    return model.forward(features, training=True, step=step)

  if compile_forward_only:
    forward = tf.function(forward, jit_compile=True)

  def loss_fn(features, denominators):
    out = model.objective(features, forward(features), denominators)
    return out["total_loss"], outputs_fn(out, features)

  replica_step = ReplicaTrainStep(
      loss_fn, lambda: model.trainable_variables, optimizer, clip_norm,
      jit_compile=jit_compile and not compile_forward_only,
      accumulation_steps=accumulation_steps)

  def train_step(features):
    return replica_step(features, losses.loss_denominators(features))

  return train_step


def _num_replicas():
  """Replicas in sync, from the replica context or the current strategy."""
  context = tf.distribute.get_replica_context()
  if context is not None:
    return context.num_replicas_in_sync
  return tf.distribute.get_strategy().num_replicas_in_sync
