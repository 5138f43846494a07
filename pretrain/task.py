"""What pre-training trains: the model, its optimizer and the step function.

The first of the trainer's three parts (pretrain/trainer.py puts them
together): this one builds, under the strategy's scope, the pre-training
model, its optimizer and the global step, and gives the `tf.function` that
runs a loop of train steps. Each replica computes its share of the
global-batch loss (model/losses.py); gradients are all-reduced, clipped at
the global norm and applied once (training/optimization.py, through
training/train_step.py), so any number of replicas computes the update of
one device. Checkpoints are pretrain/checkpointing.py's, the outer loop
training/loop.py's and its reporting pretrain/reporting.py's.
"""

import tensorflow as tf
import tf_keras

from model import builders
from training import optimization
from training import train_step as train_step_lib
from pretrain import step_statistics
from util.errors import UserError


class PretrainingTask(object):
  """The model, optimizer and global step of a run, and its train loop.

  Args (the specs of configure_specs.py):
    network, objective, masking: the NetworkSpec, ObjectiveSpec and
      MaskingSpec the model is built from (model/builders.py).
    optimization: the OptimizationSpec of the optimizer, the global batch
      and its micro-batches.
    runtime: the RuntimeSpec (`jit_compile` compiles the train step).
    strategy: the tf.distribute strategy whose scope holds the variables.

  Attributes:
    model, optimizer, global_step (int64 variable, the steps trained),
    num_replicas.
  """

  def __init__(self, network, objective, masking, optimization, runtime,
               strategy):
    self.optimization = optimization
    self.jit_compile = runtime.jit_compile
    self.strategy = strategy
    self.num_replicas = strategy.num_replicas_in_sync
    _check_batch_splits(optimization.train_batch_size, self.num_replicas,
                        optimization.gradient_accumulation_steps)
    with strategy.scope():
      self.model = builders.build_pretrainer_with_variables(
          network, objective, masking)
      self.optimizer = _optimizer(optimization, self.model)
      self.global_step = tf.Variable(
          0, dtype=tf.int64, trainable=False, name="global_step",
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    self._train_step = None  # Built on the first trace of the train loop.

  def _replica_step(self, features):
    """One update in one replica: its step statistics (sums), with the
    gradient norm and whether loss scaling skipped the step, both divided
    by the replicas so that their sum over replicas is the value."""
    if self._train_step is None:
      learns_sampler = self.model.learns_sampler
      optimization = self.optimization
      self._train_step = train_step_lib.pretraining_train_step(
          self.model, self.optimizer, self.global_step,
          lambda out, features: step_statistics.step_statistics(
              out, features, learns_sampler),
          clip_norm=optimization.clip_norm, jit_compile=self.jit_compile,
          accumulation_steps=optimization.gradient_accumulation_steps)
    stats, norm, skipped = self._train_step(features)
    self.global_step.assign_add(1)
    stats = dict(stats)
    stats["grad_norm"] = norm / self.num_replicas
    stats["skipped_steps"] = skipped / self.num_replicas
    if not self.model.temperature_at.constant:
      # Of the step just trained (the curriculum's temperature).
      stats["temperature_sum"] = self.model.temperature_at(
          self.global_step - 1) / self.num_replicas
    return stats

  def make_train_loop(self):
    """A `tf.function` (iterator, num_steps) -> {statistic: sum over the
    `num_steps` (>= 1) steps and the replicas} that trains `num_steps`
    steps on the iterator's batches."""
    strategy = self.strategy

    # No autograph below: nothing branches on a tensor, and converting
    # every Keras layer costs seconds (docs/performance.md, "Start-up").
    # A function of its own, so that its two calls below trace the step
    # once.
    @tf.function(autograph=False)
    def one_step(iterator):
      per_replica = strategy.run(self._replica_step, args=(next(iterator),))
      return {k: strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None)
              for k, v in per_replica.items()}

    @tf.function
    def train_loop(iterator, num_steps):
      """Sums of the step statistics over `num_steps` (>= 1) steps."""
      # The first step outside the loop gives the sums their structure (a
      # loop variable may not start as None).
      sums = one_step(iterator)
      for _ in tf.range(num_steps - 1):
        stats = one_step(iterator)
        sums = {k: sums[k] + stats[k] for k in sums}
      return sums

    return train_loop

  def learning_rate(self):
    """The learning rate of the optimizer's current step."""
    schedule = self.optimizer.learning_rate
    if callable(schedule):
      return float(schedule(self.optimizer.iterations))
    return float(schedule)

  def loss_scale(self):
    """The float16 loss scale now (only with mixed_precision float16)."""
    return float(self.optimizer.loss_scale)


def _check_batch_splits(batch_size, num_replicas, accumulation_steps):
  """Raises UserError unless the global batch splits into equal slices."""
  slices = num_replicas * accumulation_steps
  if batch_size % slices:
    raise UserError(
        "train_batch_size %d is not divisible by the %d replicas x %d "
        "gradient_accumulation_steps; use a multiple of %d." % (
            batch_size, num_replicas, accumulation_steps, slices))


def _optimizer(spec, model):
  """The optimizer of an OptimizationSpec for `model` (loss-scaled when
  the spec has a `loss_scale`: float16), its slots made."""
  optimizer = optimization.create_optimizer(
      spec.learning_rate, spec.num_train_steps,
      spec.num_warmup_steps, spec.weight_decay_rate,
      spec.adam_epsilon, spec.lr_decay_power,
      lr_multipliers=builders.learning_rate_multipliers(
          model, spec.generator_lr_multiplier, spec.embedding_lr_multiplier),
      frozen=builders.encoder_variable_names(model),
      frozen_steps=spec.encoder_frozen_steps)
  if spec.loss_scale is not None:
    optimizer = tf_keras.mixed_precision.LossScaleOptimizer(
        optimizer, initial_scale=spec.loss_scale)
  optimization.create_slots(optimizer, model.trainable_variables)
  return optimizer
