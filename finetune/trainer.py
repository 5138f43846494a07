"""Fine-tunes one task for one trial: train, evaluate every epoch, keep the
best checkpoint, predict.

The loop is the one of pre-training (training/loop.py: progress with ETA,
evaluations, stop signals, divergence); fine-tuning supplies its step, its
evaluation that keeps the best checkpoint and its progress line
(finetune/progress.py). The train step is pre-training's too,
`training.train_step.ReplicaTrainStep`
(forward/backward, optionally XLA-compiled, then all-reduce, global-norm
clipping and apply), run inside `strategy.run`; AdamW with warmup, linear
decay and layer-wise LR decay comes from
`training.optimization.create_optimizer`. With float16 mixed precision the
optimizer is wrapped in Keras's dynamic loss scaling, and a step whose
gradients overflow is skipped and counted in the progress line.
"""

import collections
import os
import time

import numpy as np
import tensorflow as tf
import tf_keras

from finetune import layerwise_decay
from finetune import preprocessing
from finetune import progress as progress_lib
from finetune import reinit
from finetune import start_geometry
from finetune import scorer as scorer_lib
from finetune.model import FinetuningModel
from interop import checkpoints
from interop import loader as interop_loader
from model.builders import build_discriminator_encoder
from training import loop as loop_lib
from training import optimization
from training import train_step as train_step_lib
from finetune.schedule import train_schedule
from util import io_utils
from util.errors import UserError
from util.io_utils import write_json_atomic

BEST_DIR = "best"


class Trainer(object):
  """One trial of one task.

  Args:
    specs: the run's configure_finetuning_specs.FinetuningSpecs; read are
      its `network` (the encoder), `training` (start, schedule, optimizer,
      batches) and `runtime` (strategy, jit_compile).
    task: a `Task`.
    strategy: a `tf.distribute.Strategy` (from `util.distribution`).
    trial_dir: where this trial keeps its best checkpoint
      (`<model_dir>/finetuning_models/<task>/trial_<k>`).
    seed: seed of the head's initialisation, dropout and data order.
    log_prefix: start of every progress line, e.g. "sst trial 1/3".
  """

  def __init__(self, specs, task, strategy, trial_dir, seed, log_prefix):
    self.training = specs.training
    self.jit_compile = specs.runtime.jit_compile
    self.task = task
    self.strategy = strategy
    self.trial_dir = trial_dir
    self.seed = seed
    self.log_prefix = log_prefix
    replicas = strategy.num_replicas_in_sync
    for key in ("train_batch_size", "eval_batch_size"):
      if getattr(self.training, key) % replicas:
        raise UserError("hparam %r (%d) must be a multiple of the %d "
                        "replicas of strategy %r." % (
                            key, getattr(self.training, key), replicas,
                            specs.runtime.strategy))
    tf_keras.utils.set_random_seed(seed)
    with strategy.scope():
      self.model = FinetuningModel(
          build_discriminator_encoder(specs.network), task.build_head(),
          name="finetuning")
    self._checkpoint = tf.train.Checkpoint(model=self.model)
    self._encoder_inputs = None  # The first feature rows (`build`).
    self.start_geometry = None  # A pre-trained start's (`init_encoder`).
    self._predict_step = None
    self._last_scorers, self._primary_metrics = {}, {}

  def log(self, message):
    print("%s: %s" % (self.log_prefix, message), flush=True)

  @property
  def best_dir(self):
    return os.path.join(self.trial_dir, BEST_DIR)

  # ---- building and restoring ----------------------------------------------

  def build(self, features):
    """Creates the variables by calling the model on one feature row."""
    row = {name: value[:1] for name, value in features.items()}
    with self.strategy.scope():
      self.model(row, training=False)
    self._encoder_inputs = {k: features[k][:start_geometry.NUM_ROWS]
                            for k in ("input_ids", "input_mask",
                                      "segment_ids")}
    names = [v.name for v in self.model.trainable_variables]
    if len(set(names)) != len(names):
      raise ValueError("duplicate variable names in the fine-tuning model; "
                       "per-variable learning rates need unique names")

  def init_encoder(self, init_checkpoint):
    """Loads pre-trained discriminator weights (None: keep random ones)."""
    if init_checkpoint is None:
      self.log("encoder from random initialisation (init_checkpoint "
               "\"none\")")
      return
    if interop_loader.is_foreign(init_checkpoint):
      interop_loader.load_into(self.model.encoder, init_checkpoint,
                               log=self.log)
    else:
      prefix = checkpoints.restore_discriminator(self.model.encoder,
                                                 init_checkpoint)
      self.log("encoder from pre-trained checkpoint %s (all %d weight "
               "tensors restored)" % (prefix,
                                      len(self.model.encoder.weights)))
    n = self.training.reinit_top_layers
    if n:
      replaced = reinit.reinitialise_top_layers(
          self.model.encoder, n, self._encoder_inputs)
      self.log("re-initialised the top %d layer(s): %d weight tensors" % (
          n, replaced))
    keep = self.training.shrink_to_fresh
    if keep != 1.0:
      changed = reinit.shrink_to_fresh(self.model.encoder, keep,
                                       self._encoder_inputs)
      self.log("moved %d weight tensors toward a fresh encoder (keep %g)" % (
          changed, keep))
    line, self.start_geometry = start_geometry.describe_start(
        self.model.encoder, self._encoder_inputs)
    self.log(line)

  def restore_finetuned(self):
    """Loads this trial's kept fine-tuned model (for do_train false)."""
    latest = tf.train.latest_checkpoint(self.best_dir)
    if latest is None:
      raise UserError("no fine-tuned model for %s in %s; fine-tune first "
                      "(do_train true)." % (self.log_prefix, self.best_dir))
    status = self._checkpoint.restore(latest)
    status.expect_partial().assert_existing_objects_matched()
    return latest

  # ---- training --------------------------------------------------------------

  def _make_optimizer(self, num_train_steps):
    training = self.training
    multipliers = layerwise_decay.layerwise_lr_multipliers(
        self.model.encoder, training.layerwise_lr_decay,
        rule=training.layerwise_lr_decay_rule)
    with self.strategy.scope():
      optimizer = optimization.create_optimizer(
          learning_rate=training.learning_rate,
          num_train_steps=num_train_steps,
          num_warmup_steps=int(training.warmup_proportion * num_train_steps),
          weight_decay_rate=training.weight_decay_rate,
          epsilon=training.adam_epsilon, lr_multipliers=multipliers)
      schedule = optimizer.learning_rate
      if training.loss_scale is not None:
        optimizer = tf_keras.mixed_precision.LossScaleOptimizer(
            optimizer, initial_scale=training.loss_scale)
      optimization.create_slots(optimizer, self.model.trainable_variables)
    return optimizer, schedule

  def _make_train_loop(self, optimizer, global_batch_size):
    model, task, strategy = self.model, self.task, self.strategy

    def loss_fn(features):
      outputs = model(features, training=True)
      losses = tf.cast(task.compute_losses(outputs, features), tf.float32)
      loss = tf.reduce_sum(losses) / global_batch_size
      return loss, loss

    replica_step = train_step_lib.ReplicaTrainStep(
        loss_fn, lambda: model.trainable_variables, optimizer,
        self.training.clip_norm, jit_compile=self.jit_compile)

    # No autograph below: nothing branches on a tensor, and converting
    # every Keras layer costs seconds (docs/performance.md, "Start-up").
    @tf.autograph.experimental.do_not_convert
    def step_fn(features):
      loss, _, skipped = replica_step(features)
      return loss, skipped / strategy.num_replicas_in_sync

    @tf.function
    def train_loop(iterator, num_steps):
      """(the loss summed over the steps, steps skipped by loss scaling)."""
      total, skipped = tf.constant(0.0), tf.constant(0.0)
      for _ in tf.range(num_steps):
        loss, skip = strategy.run(step_fn, args=(next(iterator),))
        total += strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)
        skipped += strategy.reduce(tf.distribute.ReduceOp.SUM, skip,
                                   axis=None)
      return total, skipped

    return train_loop

  def train(self, train_data, eval_data):
    """Fine-tunes on `train_data`, evaluating `eval_data` (list of
    `SplitData`) after every epoch and keeping the best checkpoint.

    Returns (history [{step, epoch, loss, results}], best entry, losses
    [(step, mean loss since the previous line)]).
    """
    training = self.training
    n = preprocessing.num_features(train_data.features)
    batch = training.train_batch_size
    num_steps, eval_steps = train_schedule(n, batch,
                                           training.num_train_epochs)
    if not eval_data:
      eval_steps = [num_steps]
    optimizer, schedule = self._make_optimizer(num_steps)
    train_loop = self._make_train_loop(optimizer, batch)
    iterator = iter(self.strategy.experimental_distribute_dataset(
        preprocessing.train_dataset(train_data.features, batch, self.seed)))
    io_utils.remove_tree(self.best_dir)
    manager = tf.train.CheckpointManager(self._checkpoint, self.best_dir,
                                         max_to_keep=1,
                                         checkpoint_name="model")
    self.log("%d training features, %d steps of %d (%.4g epochs), warmup %d, "
             "evaluation/checkpoint at steps %s" % (
                 n, num_steps, batch, training.num_train_epochs,
                 int(training.warmup_proportion * num_steps),
                 ", ".join(str(s) for s in eval_steps)))
    report = progress_lib.FinetuningProgress(self.log, n, batch, schedule)
    history, best = [], None

    def train(num):
      loss, skipped = train_loop(iterator, tf.constant(num, tf.int32))
      return dict(loss=float(loss), skipped_steps=float(skipped))

    def evaluate(step):
      nonlocal best
      entry = dict(step=step, epoch=round(step * batch / float(n), 4),
                   loss=report.losses[-1][1])
      if eval_data:
        entry["results"] = self.evaluate_all(eval_data)
      history.append(entry)
      best = self._keep_if_best(entry, best, eval_data, manager)

    calls = loop_lib.LoopCalls(
        train=train, save=None, evaluate=evaluate, on_stop=self._on_stop,
        on_divergence=self._on_divergence)
    settings = loop_lib.LoopSettings(
        num_steps, training.log_every, training.log_every,
        save=loop_lib.Steps(),
        evaluate=loop_lib.Steps(at=eval_steps))
    loop_lib.TrainingLoop(settings, calls, report).run(0)
    evaluate(num_steps)  # The loop leaves the last step's to its caller.
    return history, best, report.losses

  def _on_stop(self, step):
    return ("%s: interrupted at step %d; the trials finished before it are "
            "kept, and re-running the same command runs this one again." % (
                self.log_prefix, step))

  def _on_divergence(self, names, first, last):
    return ("%s: the training loss is not finite between steps %d and %d; "
            "lower hparam 'learning_rate' (now %g)." % (
                self.log_prefix, first, last, self.training.learning_rate))

  def _keep_if_best(self, entry, best, eval_data, manager):
    """Saves the checkpoint and best.json if `entry` beats `best`; logs the
    evaluation. Returns the best entry so far."""
    # Without dev data the kept model is simply the last one.
    improved = (not eval_data or best is None or
                self._primary(entry) > self._primary(best))
    if improved:
      best = entry
      checkpoints.save_checkpoint(manager, entry["step"])
      self._write_best(entry, eval_data)
    if eval_data:
      self.log("step %d (epoch %.2f): %s%s" % (
          entry["step"], entry["epoch"],
          "; ".join("%s %s" % (split, scorer_lib.results_str(r))
                    for split, r in entry["results"].items()),
          " (best so far, saved)" if improved else ""))
    return best

  def _primary(self, entry):
    split = self.task.eval_splits[0]
    return entry["results"][split][self._primary_metrics[split]]

  def _write_best(self, entry, eval_data):
    write_json_atomic(os.path.join(self.trial_dir, "best.json"),
                      dict(entry, seed=self.seed))
    for split_data in eval_data:
      scorer = self._last_scorers.get(split_data.split)
      if scorer is not None:
        scorer.write_predictions(self.trial_dir)

  # ---- evaluation and prediction ---------------------------------------------

  def predict(self, split_data):
    """Evaluation outputs of every feature of a split, in feature order."""
    if self._predict_step is None:
      model, task, strategy = self.model, self.task, self.strategy

      # No autograph below: nothing branches on a tensor, and converting
      # every Keras layer costs seconds (docs/performance.md, "Start-up").
      @tf.function(autograph=False)
      def predict_step(batch):
        def replica_fn(features):
          outputs = task.eval_outputs(model(features, training=False),
                                      features)
          outputs["feature_index"] = features["feature_index"]
          return outputs
        per_replica = strategy.run(replica_fn, args=(batch,))
        return tf.nest.map_structure(
            lambda t: strategy.gather(t, axis=0), per_replica)

      self._predict_step = predict_step
    dataset = self.strategy.experimental_distribute_dataset(
        preprocessing.eval_dataset(split_data.features,
                                   self.training.eval_batch_size))
    collected = collections.defaultdict(list)
    for batch in dataset:
      for name, value in self._predict_step(batch).items():
        collected[name].append(value.numpy())
    outputs = {name: np.concatenate(values)
               for name, values in collected.items()}
    index = outputs.pop("feature_index")
    keep = np.flatnonzero(index != preprocessing.PADDING_INDEX)
    order = keep[np.argsort(index[keep], kind="stable")]
    return {name: value[order] for name, value in outputs.items()}

  def evaluate_all(self, eval_data):
    """{split: results} for every evaluation split (`SplitData` list)."""
    all_results = collections.OrderedDict()
    self._last_scorers, self._primary_metrics = {}, {}
    for split_data in eval_data:
      scorer = self.task.get_scorer(split_data)
      scorer.update(self.predict(split_data))
      all_results[split_data.split] = scorer.get_results()
      self._last_scorers[split_data.split] = scorer
      self._primary_metrics[split_data.split] = scorer.primary_metric
    return all_results

  def primary_metric(self):
    return self._primary_metrics.get(self.task.eval_splits[0])

  def write_test_outputs(self, test_data, directory):
    """Predicts every test split; returns the paths written."""
    return [self.task.write_test_predictions(split_data,
                                             self.predict(split_data),
                                             directory)
            for split_data in test_data]

  # ---- one whole trial -------------------------------------------------------

  def run(self, train_data, eval_data, test_data, init_checkpoint, test_dir):
    """Trains (if `train_data`), evaluates and writes test outputs.

    Returns the trial's record: seed, `final` (results at the end of
    training), `best` (the kept checkpoint's step, epoch and results),
    `history` and `test_outputs`.
    """
    first = (train_data or (eval_data + test_data)[0]).features
    self.build(first)
    record = dict(seed=self.seed)
    start = time.time()
    if train_data is not None:
      self.init_encoder(init_checkpoint)
      history, best, losses = self.train(train_data, eval_data)
      record.update(history=history, losses=losses,
                    final=history[-1].get("results"), best=best)
      if self.start_geometry:
        record["start_geometry"] = self.start_geometry
      if test_data and best["step"] != history[-1]["step"]:
        self.restore_finetuned()
    else:
      path = self.restore_finetuned()
      self.log("evaluating the fine-tuned model %s" % path)
      results = self.evaluate_all(eval_data) if eval_data else None
      record.update(final=results, best=dict(results=results))
      if eval_data:
        self.log("; ".join("%s %s" % (split, scorer_lib.results_str(r))
                           for split, r in results.items()))
    record["primary_metric"] = self.primary_metric()
    if test_data:
      record["test_outputs"] = self.write_test_outputs(test_data, test_dir)
      self.log("test predictions: %s" % ", ".join(record["test_outputs"]))
    record["seconds"] = round(time.time() - start, 1)
    return record
