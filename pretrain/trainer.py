"""Pre-training: the strategy, and the three parts of a run put together.

`PretrainingTrainer` joins what is trained (pretrain/task.py: model,
optimizer, step function), its checkpoints and the data stream's resume
point (pretrain/checkpointing.py) and the loop of both stages
(training/loop.py) with pre-training's progress lines (pretrain/
reporting.py), as tf-models-official's Task, Trainer and Controller divide
a run. It also evaluates (pretrain/
evaluation.py), reusing one traced eval step.
"""

import functools

import tensorflow as tf

from interop import checkpoints as checkpoints_lib
from pretrain import checkpointing
from pretrain import corpus_embeddings
from pretrain import data_stream
from pretrain import evaluation
from pretrain import flops as flops_lib
from pretrain import peak as peak_lib
from pretrain import pretrain_data
from pretrain import reporting
from pretrain import task as task_lib
from training import loop as loop_lib
from util import distribution
from util import process_setup


class PretrainingTrainer(object):
  """Builds the strategy, the task and the checkpoints of a run.

  Args:
    specs: the run's configure_specs.PretrainingSpecs
      (`configure_specs.pretraining_specs(config)`); each part gets the
      specs it reads.
    log: where progress lines go.
    strategy: the tf.distribute strategy, if already made (it must be made
      before any TensorFlow op runs); else made from `specs.runtime`.

  The process must be set up for the run first:
  `util.process_setup.set_up_process(config.mixed_precision, config.seed,
  checkpointed_dropout=True)`, as run_pretraining.py does.
  """

  def __init__(self, specs, log=print, strategy=None):
    self.specs = specs
    self.log = log
    run = specs.run
    # Dropout must draw from tf.random.Generator state (checkpointed: see
    # `checkpoints_lib.dropout_rng_checkpoint`); the entry script set that up.
    process_setup.check_set_up(specs.runtime.mixed_precision,
                               checkpointed_dropout=True)
    self.strategy = strategy or distribution.get_strategy(specs.runtime)
    self.task = task_lib.PretrainingTask(
        specs.network, specs.objective, specs.masking, specs.optimization,
        specs.runtime, self.strategy)
    self.num_replicas = self.task.num_replicas
    self.model, self.optimizer = self.task.model, self.task.optimizer
    self.global_step = self.task.global_step
    self.is_chief = self.strategy.extended.should_checkpoint
    self.checkpoint_dir = checkpoints_lib.pretrained_checkpoint_dir(
        run.model_dir)
    self.checkpoints = checkpointing.PretrainingCheckpoints(
        self.model, self.optimizer, self.global_step, self.checkpoint_dir,
        self.is_chief, run.keep_checkpoint_max,
        data_stream.settings(specs.data, specs.masking),
        specs.data.train_batch_size, init_checkpoint=run.init_checkpoint,
        generator_checkpoint=run.generator_checkpoint,
        corpus_embeddings=self._corpus_embeddings(specs, log), log=log)
    self.train_flops = flops_lib.pretraining_step_flops(
        specs.network, specs.objective, specs.masking,
        specs.data.train_batch_size)
    # Built on the first evaluation, then reused (the writer flushes after
    # each evaluation and is closed with the trainer's last reference).
    self._eval_step = self._eval_writer = None

  @staticmethod
  def _corpus_embeddings(specs, log):
    """What starts a new run's embedding table from the training shards
    (hparam `embedding_init` "corpus"), or None."""
    if specs.run.embedding_init != "corpus":
      return None
    special = pretrain_data.read_special_ids(specs.data.vocab_file)
    return functools.partial(
        corpus_embeddings.start_from_corpus,
        pattern=specs.data.pretrain_tfrecords,
        special_ids=sorted(special.values()), seed=specs.data.seed, log=log)

  def restore(self):
    """Restores the latest checkpoint (or warm-starts from
    `init_checkpoint`, once); returns the checkpoint manager."""
    return self.checkpoints.restore()

  def warm_start(self, path):
    """Loads the model weights of another run's checkpoint (see
    `checkpointing.PretrainingCheckpoints.warm_start`)."""
    return self.checkpoints.warm_start(path)

  def close(self):
    """Removes what the run keeps only while it runs (a worker's
    temporary checkpoints)."""
    self.checkpoints.close()

  def _training_stream(self):
    """(input_fn, iterator, StreamStart): the training examples from where
    the latest checkpoint left them."""
    input_fn = pretrain_data.get_input_fn(self.specs.data, self.specs.masking,
                                          is_training=True)
    iterator = iter(self.strategy.distribute_datasets_from_function(input_fn))
    start = self.checkpoints.stream_start(
        saveable=isinstance(iterator, tf.data.Iterator))
    if not start.restore_iterator:
      input_fn = input_fn.at_offset(start.skip_examples)
      iterator = iter(self.strategy.distribute_datasets_from_function(
          input_fn))
    return input_fn, iterator, start

  def train(self):
    """Trains to `num_train_steps`, resuming from the last checkpoint;
    returns the statistics of the last progress line (None if there was
    nothing to do)."""
    input_fn, iterator, start = self._training_stream()
    try:
      with input_fn.data_errors():
        manager = self.checkpoints.restore(
            iterator if start.saveable else None, start.restore_iterator)
        return self._train(iterator, manager)
    finally:
      self.close()

  def _train(self, iterator, manager):
    """The loop from the restored step, unless the run is finished."""
    c = self.specs.run
    batch_size = self.specs.data.train_batch_size
    step = int(self.global_step.numpy())
    if step >= c.num_train_steps:
      if manager.latest_checkpoint is None:  # num_train_steps 0.
        self.checkpoints.save(manager, step)
        self.log("num_train_steps is 0: the start (e.g. embedding_init "
                 "'corpus') is saved as it is, to evaluate or fine-tune.")
        return None
      self.log("Training already finished: step %d of %d. Nothing to do."
               % (step, c.num_train_steps))
      return None
    report = self._progress_report(step)
    train_loop = self.task.make_train_loop()

    def train(num_steps):
      sums = train_loop(iterator, tf.constant(num_steps, tf.int32))
      sums = {k: v.numpy() for k, v in sums.items()}
      self.checkpoints.count_examples(num_steps * batch_size)
      return sums

    def on_stop(step):
      return ("interrupted at step %d of %d; checkpoint %s saved. Re-run "
              "the same command to resume from it." % (
                  step, c.num_train_steps,
                  self.checkpoints.save_at_stop(manager, step)))

    def on_divergence(names, first, last):
      return ("non-finite %s between steps %d and %d; stopped without "
              "saving. The last good checkpoint is %s. Lower learning_rate "
              "or check the data." % (
                  ", ".join(names), first, last,
                  self.checkpoints.latest() or "(none yet)"))

    calls = loop_lib.LoopCalls(
        train=train, save=lambda s: self.checkpoints.save(manager, s),
        evaluate=lambda s: self.evaluate(step=s), on_stop=on_stop,
        on_divergence=on_divergence)
    settings = loop_lib.LoopSettings(
        c.num_train_steps, c.iterations_per_loop, c.log_every,
        save=loop_lib.Steps(every=c.save_checkpoints_steps),
        evaluate=loop_lib.Steps(every=c.eval_every))
    return loop_lib.TrainingLoop(settings, calls, report).run(step)

  def _progress_report(self, step):
    """The run's ProgressReport, after its first line."""
    runtime, run = self.specs.runtime, self.specs.run
    peak, source = flops_lib.peak_flops_per_second(runtime.peak_tflops,
                                                   runtime.mixed_precision)
    peak *= self.num_replicas
    report = reporting.ProgressReport(
        self.log, reporting.summary_writer(run.model_dir, self.is_chief),
        self.specs.data.train_batch_size, self.train_flops, peak,
        self.model.learns_sampler, self.task.learning_rate,
        self.task.loss_scale, raise_peak=peak_lib.probe_raiser(
            source, runtime.mixed_precision, self.num_replicas))
    report.start(step, run.num_train_steps, self.num_replicas, source)
    return report

  def evaluate(self, step=None):
    """Evaluates the current weights on the eval shards; writes results."""
    step = int(self.global_step.numpy()) if step is None else step
    if self._eval_step is None:
      self._eval_step = evaluation.make_eval_step(
          self.model, self.strategy, bool(self.specs.objective.focal_gamma))
      if self.is_chief:  # Only the chief writes.
        self._eval_writer = evaluation.eval_writer(self.specs.run.model_dir)
    return evaluation.evaluate(self.specs, self.model, self.strategy, step,
                               log=self.log, eval_step=self._eval_step,
                               writer=self._eval_writer)
