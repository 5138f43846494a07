"""One replica's training step, shared by pre-training, fine-tuning and bench/.

    forward + backward  (optionally XLA-compiled; no cross-replica op inside)
      [x gradient_accumulation_steps micro-batches, gradients summed]
    -> unscale (float16 loss scaling)
    -> sum over replicas, clip at the global norm, apply (model/optimization.py)
    -> the global gradient norm, and whether the update was skipped

Only the forward/backward pass is compiled: `apply_gradients` all-reduces the
gradients, and a cross-replica call inside a nested `tf.function` (or an XLA
cluster) is refused by MirroredStrategy ("merge_call called while defining
a new graph"). Keeping it outside lets every strategy and `jit_compile`
compose. A loss that itself needs cross-replica sums of what the forward
pass computes (self-normalised importance weights) gives a separate
`forward_fn`: then only that is compiled, and the tape spans the compiled
call and the uncompiled loss, which may all-reduce.

Under float16 the LossScaleOptimizer skips an update whose gradients are not
finite and lowers the loss scale; such a step returns grad norm 0 and
`skipped` 1, so callers can count it instead of taking it for a diverged run.
"""

import tensorflow as tf
import tf_keras

from model import losses
from model import optimization


class ReplicaTrainStep(object):
  """Callable inside `strategy.run` (or with no strategy): one update.

  Args:
    loss_fn: features -> (loss, outputs), or (features, forward_out) ->
      (loss, outputs) when `forward_fn` is given. `loss` is a float32
      scalar, this replica's share of the global-batch mean (the shares of
      all replicas, and of all micro-batches, sum to it); `outputs` is a
      nest of tensors, returned as is, or summed over the micro-batches
      when accumulating (so it should hold sums, e.g. loss shares, counts).
    variables: the variables to train (a list, or a callable returning it,
      for models whose variables are created on the first call).
    optimizer: a tf_keras optimizer, possibly a LossScaleOptimizer.
    clip_norm: global-norm clip of the summed gradients (0: none).
    jit_compile: XLA-compile the forward/backward pass (or only
      `forward_fn`, when given).
    prepare_fn: features -> features, run before the compiled pass in the
      replica context, on the whole replica batch: where cross-replica sums
      the loss needs (e.g. `model.losses.loss_denominators`) are taken.
    forward_fn: optional features -> nest of tensors, the part of the
      forward pass without cross-replica ops.
    accumulation_steps: split the replica batch into this many equal
      micro-batches along axis 0, run forward/backward on each in turn and
      apply the summed gradients once: the update of the whole batch, with
      the activations of one micro-batch in memory. Rank-0 features (e.g.
      the denominators `prepare_fn` adds) go to every micro-batch whole.

  Call:
    features -> (outputs, grad_norm, skipped): grad_norm is the global norm
    before clipping (0 on a skipped step), skipped is 1.0 when loss scaling
    dropped the update, else 0.0 (float32 scalars).
  """

  def __init__(self, loss_fn, variables, optimizer, clip_norm,
               jit_compile=False, prepare_fn=None, forward_fn=None,
               accumulation_steps=1):
    self._prepare_fn = prepare_fn
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
    if forward_fn is None:
      self._loss = loss_fn
      if jit_compile:
        self._forward_backward = tf.function(self._forward_backward,
                                             jit_compile=True)
    else:
      if jit_compile:
        forward_fn = tf.function(forward_fn, jit_compile=True)
      self._loss = lambda features: loss_fn(features, forward_fn(features))

  def _forward_backward_pass(self, features):
    """(outputs, gradients) of one batch; gradients of the scaled loss."""
    variables = self._variables()
    with tf.GradientTape() as tape:
      loss, outputs = self._loss(features)
      if self.loss_scaling:
        loss = self.optimizer.get_scaled_loss(loss)
    grads = tape.gradient(loss, variables)
    return outputs, [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                     for g, v in zip(grads, variables)]

  def _accumulate(self, features):
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
    outputs, grads = self._forward_backward(micro_batch(0))

    def body(i, outputs, grads):
      more_outputs, more_grads = self._forward_backward(micro_batch(i))
      return (i + 1, tf.nest.map_structure(tf.add, outputs, more_outputs),
              [g + h for g, h in zip(grads, more_grads)])

    _, outputs, grads = tf.while_loop(lambda i, *_: i < k, body,
                                      (tf.constant(1), outputs, grads))
    return outputs, grads

  def __call__(self, features):
    if self._prepare_fn is not None:
      features = self._prepare_fn(features)
    if self.accumulation_steps > 1:
      outputs, grads = self._accumulate(features)
    else:
      outputs, grads = self._forward_backward(features)
    if self.loss_scaling:
      grads = self.optimizer.get_unscaled_gradients(grads)
    norm = optimization.apply_clipped_gradients(
        self.optimizer, grads, self._variables(), self.clip_norm)
    if not self.loss_scaling:
      return outputs, norm, tf.constant(0.0)  # Non-finite: a real failure.
    finite = tf.math.is_finite(norm)
    return (outputs, tf.where(finite, norm, tf.zeros_like(norm)),
            1.0 - tf.cast(finite, tf.float32))


def pretraining_train_step(model, optimizer, config, step, outputs_fn):
  """The ReplicaTrainStep of an `ElectraPretrainer` (run_pretraining.py
  and bench/ use this one).

  The loss denominators are taken first, on the whole replica batch. Under
  `model.needs_cross_replica_sums` (self-normalised importance weights)
  with more than one replica, only `model.forward` is compiled and
  `model.objective` all-reduces outside it; otherwise (one replica: its
  sums are local) the whole forward/backward pass is one compiled function,
  which XLA runs much faster than a compiled forward whose backward is a
  second program fed every saved activation.

  Args:
    model: the pre-training model (variables built).
    optimizer: its optimizer.
    config: the `PretrainingConfig` (clip_norm, jit_compile,
      gradient_accumulation_steps).
    step: the global step (a scalar variable; the sampling warm-up reads it).
    outputs_fn: (model outputs, features) -> nest of tensors that add over
      micro-batches (e.g. `pretrain.step_statistics.step_statistics`).
  Returns: a `ReplicaTrainStep`.
  """

  def forward(features):
    features = dict(features)
    features.pop(losses.DENOMINATORS_KEY)
    return model.forward(features, training=True, step=step)

  def objective(features, forward_out):
    features = dict(features)
    denominators = features.pop(losses.DENOMINATORS_KEY)
    out = model.objective(features, forward_out, denominators)
    return out["total_loss"], outputs_fn(out, features)

  def prepare(features):
    return dict(features, **{
        losses.DENOMINATORS_KEY: losses.loss_denominators(features)})

  split = model.needs_cross_replica_sums and _num_replicas() > 1
  return ReplicaTrainStep(
      objective if split else (
          lambda features: objective(features, forward(features))),
      lambda: model.trainable_variables, optimizer, config.clip_norm,
      jit_compile=config.jit_compile, prepare_fn=prepare,
      forward_fn=forward if split else None,
      accumulation_steps=config.gradient_accumulation_steps)


def _num_replicas():
  """Replicas in sync, from the replica context or the current strategy."""
  context = tf.distribute.get_replica_context()
  if context is not None:
    return context.num_replicas_in_sync
  return tf.distribute.get_strategy().num_replicas_in_sync
