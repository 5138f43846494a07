"""The pre-training loop: strategy, optimizer, checkpoints, progress, summaries.

A custom loop of `tf.function` steps, `iterations_per_loop` steps per call.
Each replica computes its share of the global-batch loss
(model/losses.py); gradients are all-reduced, clipped at the global norm and
applied once (model/optimization.py), so any number of replicas computes the
update of one device. Checkpoints (`tf.train.CheckpointManager`) hold the
model, the optimizer, the step, the dropout RNG state and (default strategy)
the input iterator; tf.distribute's iterators cannot be saved, so under other
strategies a resumed run skips the batches already trained on. Either way a
re-run of the same command resumes exactly where the last checkpoint left
off. Under MultiWorkerMirroredStrategy only the chief writes to the model
directory; the other workers save their (identical) checkpoints to a
temporary directory, as every worker must take part in saving.
"""

import os
import shutil
import tempfile
import time

import numpy as np
import tensorflow as tf
import tf_keras

from interop import loader as interop_loader
from model import checkpoints as checkpoints_lib
from model import optimization
from model import train_step as train_step_lib
from model import builders
from pretrain import data_stream
from pretrain import evaluation
from pretrain import flops as flops_lib
from pretrain import pretrain_data
from pretrain import progress_line
from pretrain import step_statistics
from util import distribution
from util import interrupt
from util import process_setup
from util.errors import Interrupted
from util.errors import TrainingDivergedError
from util.errors import UserError


class PretrainingTrainer(object):
  """Builds the strategy, model, optimizer and checkpoint of a config.

  Args:
    config: a configure.PretrainingConfig.
    log: where progress lines go.
    strategy: the tf.distribute strategy, if already made (it must be made
      before any TensorFlow op runs); else made from the config.

  The process must be set up for the config first:
  `util.process_setup.set_up_process(config.mixed_precision, config.seed,
  checkpointed_dropout=True)`, as run_pretraining.py does.
  """

  def __init__(self, config, log=print, strategy=None):
    self.config = config
    self.log = log
    # Dropout must draw from tf.random.Generator state (checkpointed: see
    # `checkpoints_lib.dropout_rng_checkpoint`); the entry script set that up.
    process_setup.check_set_up(config.mixed_precision,
                               checkpointed_dropout=True)
    self.strategy = strategy or distribution.get_strategy(config)
    self.num_replicas = self.strategy.num_replicas_in_sync
    slices = self.num_replicas * config.gradient_accumulation_steps
    if config.train_batch_size % slices:
      raise UserError(
          "train_batch_size %d is not divisible by the %d replicas x %d "
          "gradient_accumulation_steps; use a multiple of %d." % (
              config.train_batch_size, self.num_replicas,
              config.gradient_accumulation_steps, slices))
    with self.strategy.scope():
      self.model = builders.build_pretrainer_with_variables(config)
      optimizer = optimization.create_optimizer(
          config.learning_rate, config.num_train_steps,
          config.num_warmup_steps, config.weight_decay_rate,
          config.adam_epsilon, config.lr_decay_power,
          lr_multipliers=builders.generator_lr_multipliers(
              self.model, config.generator_lr_multiplier),
          frozen=builders.encoder_variable_names(self.model),
          frozen_steps=config.encoder_frozen_steps)
      if config.mixed_precision == "float16":
        optimizer = tf_keras.mixed_precision.LossScaleOptimizer(
            optimizer, initial_scale=config.initial_loss_scale)
      self.optimizer = optimizer
      self.global_step = tf.Variable(
          0, dtype=tf.int64, trainable=False, name="global_step",
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    # Host-side bookkeeping, saved with each checkpoint: how many training
    # examples were consumed, and the settings of the stream they came from.
    with tf.device("/cpu:0"):
      self.examples_seen = tf.Variable(0, dtype=tf.int64, trainable=False,
                                       name="examples_seen")
      self.data_stream = tf.Variable(data_stream.settings(config),
                                     trainable=False, name="data_stream")
    self.is_chief = self.strategy.extended.should_checkpoint
    self.checkpoint_dir = checkpoints_lib.pretrained_checkpoint_dir(
        config.model_dir)
    self._save_dir = self.checkpoint_dir
    self.train_flops = flops_lib.pretraining_step_flops(config)
    self._eval_step = None  # Built on the first evaluation, then reused.
    self._train_step = None  # Built on the first trace of the train loop.
    self._stop = interrupt.StopRequest()  # Ctrl-C while train() runs.
    self._warm_started = False

  def _checkpoint(self, iterator=None):
    dropout_rng = checkpoints_lib.dropout_rng_checkpoint(self.model)
    items = dict(model=self.model, optimizer=self.optimizer,
                 step=self.global_step, dropout_rng=dropout_rng,
                 examples_seen=self.examples_seen,
                 data_stream=self.data_stream)
    if iterator is not None:
      items["iterator"] = iterator
    return tf.train.Checkpoint(**items)

  def restore(self, iterator=None, restore_iterator=True):
    """Restores the latest checkpoint, if any; returns the saving manager.

    Every worker restores from `checkpoint_dir`; the manager saves there on
    the chief and to a temporary directory on other workers. `iterator` is
    saved with every checkpoint; it is also restored unless
    `restore_iterator` is false (the stream was restarted at an offset).
    """
    checkpoint = self._checkpoint(iterator)
    latest = tf.train.latest_checkpoint(self.checkpoint_dir)
    if latest:
      restoring = checkpoint if restore_iterator else self._checkpoint()
      try:
        restoring.restore(latest).expect_partial()
      except (ValueError, tf.errors.InvalidArgumentError,
              tf.errors.NotFoundError) as e:
        raise UserError("cannot restore %s into this model (another model "
                        "shape?): %s" % (latest, str(e).splitlines()[0]))
      self.data_stream.assign(data_stream.settings(self.config))
      self.log("Restored %s (step %d)" % (latest,
                                          int(self.global_step.numpy())))
    elif self.config.init_checkpoint and not self._warm_started:
      self.warm_start(self.config.init_checkpoint)
    return tf.train.CheckpointManager(
        checkpoint, self._save_dir,
        max_to_keep=self.config.keep_checkpoint_max if self.is_chief else 1)

  def warm_start(self, path):
    """Loads the model weights of another pre-training run's checkpoint.

    Only `model/...` is read: the optimizer, step and data position start
    anew. Weights the checkpoint lacks keep their initialisation and are
    named in the log; a checkpoint that shares no weight is an error.
    Returns the names of the variables that were restored.
    """
    if interop_loader.is_foreign(path):  # HF folders or Google TF1.
      report = interop_loader.load_into(self.model, path, log=self.log)
      self._warm_started = True
      return report["loaded"]
    prefix = checkpoints_lib.resolve_checkpoint(path)
    before = [v.numpy() for v in self.model.variables]
    try:
      tf.train.Checkpoint(model=self.model).restore(prefix).expect_partial()
    except (ValueError, tf.errors.InvalidArgumentError) as e:
      raise UserError("cannot warm-start from %s (hparam 'init_checkpoint'): "
                      "its weights have other shapes than this model's: %s"
                      % (prefix, str(e).splitlines()[0]))
    changed = [not np.array_equal(b, v.numpy())
               for b, v in zip(before, self.model.variables)]
    restored = [v.name for v, c in zip(self.model.variables, changed) if c]
    fresh = [v.name for v, c in zip(self.model.variables, changed) if not c]
    if not restored:
      raise UserError("init_checkpoint %s shares no weight with this model "
                      "(not an electra-hp pre-training checkpoint?)." % prefix)
    self._warm_started = True
    self.log("Warm start from %s: %d of %d weight tensors restored%s" % (
        prefix, len(restored), len(restored) + len(fresh),
        "; fresh: " + ", ".join(fresh) if fresh else ""))
    return restored

  def _train_iterator(self, input_fn):
    """(iterator, whether checkpoints hold it, whether to restore it).

    The iterator's saved state is used when the latest checkpoint holds one
    written with today's `data_stream.KEYS`. Otherwise (another batch size or
    seed, or a tf.distribute iterator, which cannot be checkpointed in
    TF 2.20) the stream starts after the examples already trained on: the
    pipeline's order depends on the seed only, so that is where an
    uninterrupted run would be.
    """
    iterator = iter(self.strategy.distribute_datasets_from_function(input_fn))
    saveable = isinstance(iterator, tf.data.Iterator)
    latest = tf.train.latest_checkpoint(self.checkpoint_dir)
    if not latest:
      return iterator, saveable, True
    reader = checkpoints_lib.load_checkpoint(latest)
    names = reader.get_variable_to_shape_map()
    current = data_stream.settings(self.config)
    changed = []
    if data_stream.STREAM_KEY in names:
      changed = data_stream.changed_settings(
          reader.get_tensor(data_stream.STREAM_KEY).decode(), current)
    # Checkpoints without the stream settings predate the pipeline's skip
    # stage: their iterator state does not fit today's pipeline.
    has_iterator = (data_stream.STREAM_KEY in names and
                    any(n.startswith("iterator/") for n in names))
    if saveable and has_iterator and not changed:
      return iterator, saveable, True
    examples = (int(reader.get_tensor(data_stream.EXAMPLES_KEY))
                if data_stream.EXAMPLES_KEY in names
                else int(reader.get_tensor(data_stream.STEP_KEY)) *
                self.config.train_batch_size)
    self.log("Resuming the data stream at example %d (%s): the examples "
             "before it are skipped, so the run continues where it stopped." % (
                 examples, "changed: " + ", ".join(changed) if changed else
                 "the checkpoint holds no input-iterator state"))
    input_fn.skip_examples = examples
    return (iter(self.strategy.distribute_datasets_from_function(input_fn)),
            saveable, False)

  def _replica_step(self, features):
    if self._train_step is None:
      learns_sampler = self.model.learns_sampler
      self._train_step = train_step_lib.pretraining_train_step(
          self.model, self.optimizer, self.config, self.global_step,
          lambda out, features: step_statistics.step_statistics(
              out, features, learns_sampler))
    stats, norm, skipped = self._train_step(features)
    self.global_step.assign_add(1)
    stats = dict(stats)
    stats["grad_norm"] = norm / self.num_replicas
    stats["skipped_steps"] = skipped / self.num_replicas
    return stats

  def _make_train_loop(self):
    strategy = self.strategy

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

  def _learning_rate(self):
    schedule = self.optimizer.learning_rate
    if callable(schedule):
      return float(schedule(self.optimizer.iterations))
    return float(schedule)

  def train(self):
    """Trains to `num_train_steps`, resuming from the last checkpoint."""
    c = self.config
    input_fn = pretrain_data.get_input_fn(c, is_training=True)
    iterator, saveable, restore_iterator = self._train_iterator(input_fn)
    if not self.is_chief:
      self._save_dir = tempfile.mkdtemp(prefix="electra_worker_checkpoints_")
    try:
      with input_fn.data_errors(), interrupt.stop_requests() as self._stop:
        return self._train(iterator if saveable else None, restore_iterator,
                           iterator)
    finally:
      if not self.is_chief:
        shutil.rmtree(self._save_dir, ignore_errors=True)

  def _train(self, saved_iterator, restore_iterator, iterator):
    c = self.config
    manager = self.restore(saved_iterator, restore_iterator)
    step = int(self.global_step.numpy())
    total = c.num_train_steps
    if step >= total:
      self.log("Training already finished: step %d of %d. Nothing to do."
               % (step, total))
      return None
    peak = self._log_start(step, total)
    writer = (tf.summary.create_file_writer(os.path.join(c.model_dir, "train"))
              if self.is_chief else tf.summary.create_noop_writer())
    train_loop = self._make_train_loop()
    start_time, start_step = time.time(), step
    window_sums, window_steps, window_start = None, 0, time.time()
    last = None
    skipped_total = 0
    while step < total:
      boundaries = [total, _next_multiple(step, c.log_every),
                    _next_multiple(step, c.save_checkpoints_steps)]
      if c.eval_every:
        boundaries.append(_next_multiple(step, c.eval_every))
      n = min(c.iterations_per_loop, min(boundaries) - step)
      sums = train_loop(iterator, tf.constant(n, tf.int32))
      sums = {k: v.numpy() for k, v in sums.items()}
      self.examples_seen.assign_add(n * c.train_batch_size)
      self._check_finite(sums, step, n)
      step += n
      window_steps += n
      window_sums = sums if window_sums is None else {
          k: window_sums[k] + sums[k] for k in sums}
      if step % c.log_every == 0 or step == total:
        now = time.time()
        last = self._window_statistics(window_sums, window_steps)
        skipped_total += last["skipped_steps"]
        rate = window_steps / max(now - window_start, 1e-9)
        self._log_progress(step, total, rate, now - start_time,
                           (total - step) / max(
                               (step - start_step) / max(now - start_time,
                                                         1e-9), 1e-9),
                           last, peak)
        with writer.as_default(step=step):
          for key, value in last.items():
            tf.summary.scalar(key, value)
        window_sums, window_steps, window_start = None, 0, time.time()
      if step % c.save_checkpoints_steps == 0 or step == total:
        path = checkpoints_lib.save_checkpoint(manager, step)
        if self.is_chief:
          self.log("Saved checkpoint %s" % path)
      if c.eval_every and step % c.eval_every == 0 and step < total:
        self.evaluate(step=step)
      if self._stop.requested and step < total:
        writer.flush()
        self._stop_at(step, manager)
    writer.flush()
    if skipped_total:
      self.log("%d steps skipped by loss scaling (non-finite float16 "
               "gradients); loss scale now %g." % (
                   skipped_total, float(self.optimizer.loss_scale)))
    return last

  def _log_start(self, step, total):
    """The run's first line; returns the peak FLOP/s of all replicas."""
    c = self.config
    peak, source = flops_lib.peak_flops_per_second(c.peak_tflops,
                                                   c.mixed_precision)
    peak *= self.num_replicas
    self.log("Training steps %d -> %d on %d replica(s), global batch %d, "
             "%.3g TFLOPs per step (analytic), peak %.3g TFLOP/s%s." % (
                 step, total, self.num_replicas, c.train_batch_size,
                 self.train_flops / 1e12, peak / 1e12,
                 " (%s)" % source))
    return peak

  def _check_finite(self, sums, step, n):
    """Raises TrainingDivergedError if a sum of the `n` steps after `step`
    is not finite."""
    if not all(np.isfinite(v) for v in sums.values()):
      bad = [k for k, v in sums.items() if not np.isfinite(v)]
      raise TrainingDivergedError(
          "non-finite %s between steps %d and %d; stopped without saving. "
          "The last good checkpoint is %s. Lower learning_rate or check "
          "the data." % (", ".join(bad), step + 1, step + n,
                         tf.train.latest_checkpoint(self.checkpoint_dir)
                         or "(none yet)"))

  def _window_statistics(self, window_sums, window_steps):
    """The statistics of the progress line from the sums of its window of
    steps; `skipped_steps` counts the steps loss scaling skipped."""
    last = step_statistics.summarize_sums(window_sums, window_steps)
    skipped = int(round(float(window_sums["skipped_steps"])))
    last["grad_norm"] = float(window_sums["grad_norm"]) / max(
        window_steps - skipped, 1)
    last["skipped_steps"] = skipped
    last["learning_rate"] = self._learning_rate()
    return last

  def _stop_at(self, step, manager):
    """Ctrl-C: a checkpoint of `step` (unless one was just saved), then
    Interrupted (exit 130) saying how to resume."""
    latest = manager.latest_checkpoint
    if not latest or not latest.endswith("-%d" % step):
      latest = checkpoints_lib.save_checkpoint(manager, step)
    raise Interrupted(
        "interrupted at step %d of %d; checkpoint %s saved. Re-run the same "
        "command to resume from it." % (step, self.config.num_train_steps,
                                        latest))

  def _log_progress(self, step, total, steps_per_sec, elapsed, eta, m, peak):
    self.log(progress_line.progress_line(
        step, total, steps_per_sec, self.config.train_batch_size, elapsed,
        eta, m, self.train_flops, peak, self.model.learns_sampler))

  def evaluate(self, step=None):
    """Evaluates the current weights on the eval shards; writes results."""
    step = int(self.global_step.numpy()) if step is None else step
    if self._eval_step is None:
      self._eval_step = evaluation.make_eval_step(self.config, self.model,
                                                  self.strategy)
    return evaluation.evaluate(self.config, self.model, self.strategy, step,
                               log=self.log, eval_step=self._eval_step)


def _next_multiple(step, every):
  return (step // every + 1) * every
