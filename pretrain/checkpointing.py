"""Pre-training checkpoints: save, restore, warm start, and where the data
stream resumes.

The second of the trainer's three parts (pretrain/trainer.py). Checkpoints
(`tf.train.CheckpointManager`) hold the model, the optimizer, the step, the
dropout RNG state, the examples consumed, the settings of the stream they
came from and (default strategy) the input iterator. tf.distribute's
iterators cannot be saved, so under other strategies a resumed run skips
the batches already trained on (`stream_start`). Either way a re-run of the
same command resumes exactly where the last checkpoint left off. Under
MultiWorkerMirroredStrategy only the chief writes to the model directory;
the other workers save their (identical) checkpoints to a temporary
directory, as every worker must take part in saving. Saves are atomic
(interop/checkpoints.save_checkpoint).
"""

import collections
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from interop import checkpoints as checkpoints_lib
from interop import loader as interop_loader
from model import builders
from pretrain import data_stream
from util.errors import UserError


# Where the training stream starts: `restore_iterator`, from the iterator
# state saved in the latest checkpoint (or at the start, without one); else
# `skip_examples` into the stream. `saveable`: the iterator's state can be
# checkpointed.
StreamStart = collections.namedtuple(
    "StreamStart", ["saveable", "restore_iterator", "skip_examples"])


class PretrainingCheckpoints(object):
  """The checkpoints of one pre-training run.

  Args:
    model, optimizer, global_step: what is trained (pretrain/task.py).
    checkpoint_dir: where checkpoints are read, and written by the chief.
    is_chief: whether this worker writes to `checkpoint_dir`; the others
      save to a temporary directory, made now and removed by `close()`.
    keep_max: checkpoints the chief keeps.
    stream_settings: `data_stream.settings(config)` of this run.
    batch_size: the global batch (examples per step), to find the stream's
      offset in checkpoints that predate `examples_seen`.
    init_checkpoint: weights to start from when there is no checkpoint yet.
    generator_checkpoint: a pre-training checkpoint whose generator starts
      G when there is no checkpoint yet (a fixed generator, hparam
      `generator_checkpoint`; `load_generator`).
    corpus_embeddings: without `init_checkpoint`, a function of the model
      that starts its embedding table from the corpus when there is no
      checkpoint yet (hparam `embedding_init`; pretrain/corpus_embeddings.py).
    log: where messages go.
  """

  def __init__(self, model, optimizer, global_step, checkpoint_dir, is_chief,
               keep_max, stream_settings, batch_size, init_checkpoint=None,
               generator_checkpoint=None, corpus_embeddings=None, log=print):
    self.model, self.optimizer, self.global_step = (model, optimizer,
                                                    global_step)
    self.checkpoint_dir = checkpoint_dir
    self.is_chief = is_chief
    self.save_dir = checkpoint_dir if is_chief else tempfile.mkdtemp(
        prefix="electra_worker_checkpoints_")
    self._keep_max = keep_max
    self._stream_settings = stream_settings
    self._batch_size = batch_size
    self._init_checkpoint = init_checkpoint
    self._generator_checkpoint = generator_checkpoint
    self._corpus_embeddings = corpus_embeddings
    self._log = log
    self._warm_started = False
    self._checked = False
    # Host-side bookkeeping, saved with each checkpoint: how many training
    # examples were consumed, and the settings of the stream they came from.
    with tf.device("/cpu:0"):
      self.examples_seen = tf.Variable(0, dtype=tf.int64, trainable=False,
                                       name="examples_seen")
      self.data_stream = tf.Variable(stream_settings, trainable=False,
                                     name="data_stream")

  def close(self):
    """Removes a non-chief worker's temporary save directory."""
    if not self.is_chief:
      shutil.rmtree(self.save_dir, ignore_errors=True)

  def latest(self):
    """The latest checkpoint's prefix, or None. The first call finds the
    newest intact one from the files (`checkpoints.latest_intact`: a lost
    or stale state file, a damaged newest checkpoint) and, on the chief,
    repairs the state file before the run saves next to it."""
    if not self._checked:
      self._checked = True
      return checkpoints_lib.latest_intact(
          self.checkpoint_dir, log=self._log, repair=self.is_chief)
    return tf.train.latest_checkpoint(self.checkpoint_dir)

  def count_examples(self, num_examples):
    """Adds `num_examples` trained on to the saved `examples_seen`."""
    self.examples_seen.assign_add(num_examples)

  def _checkpoint(self, iterator=None):
    dropout_rng = checkpoints_lib.dropout_rng_checkpoint(self.model)
    items = dict(model=self.model, optimizer=self.optimizer,
                 step=self.global_step, dropout_rng=dropout_rng,
                 examples_seen=self.examples_seen,
                 data_stream=self.data_stream)
    if iterator is not None:
      items["iterator"] = iterator
    return tf.train.Checkpoint(**items)

  def stream_start(self, saveable):
    """Where the training stream starts: a `StreamStart`.

    The iterator's saved state is used when the latest checkpoint holds one
    written with today's `data_stream.KEYS` (and `saveable`: the iterator's
    state can be checkpointed). Otherwise (another batch size or seed, or a
    tf.distribute iterator, which cannot be checkpointed in TF 2.20) the
    stream starts after the examples already trained on: the pipeline's
    order depends on the seed only, so that is where an uninterrupted run
    would be.
    """
    latest = self.latest()
    if not latest:
      return StreamStart(saveable, True, 0)
    reader = checkpoints_lib.load_checkpoint(latest)
    names = reader.get_variable_to_shape_map()
    changed = []
    if data_stream.STREAM_KEY in names:
      changed = data_stream.changed_settings(
          reader.get_tensor(data_stream.STREAM_KEY).decode(),
          self._stream_settings)
    # Checkpoints without the stream settings predate the pipeline's skip
    # stage: their iterator state does not fit today's pipeline.
    has_iterator = (data_stream.STREAM_KEY in names and
                    any(n.startswith("iterator/") for n in names))
    if saveable and has_iterator and not changed:
      return StreamStart(saveable, True, 0)
    examples = (int(reader.get_tensor(data_stream.EXAMPLES_KEY))
                if data_stream.EXAMPLES_KEY in names
                else int(reader.get_tensor(data_stream.STEP_KEY)) *
                self._batch_size)
    self._log("Resuming the data stream at example %d (%s): the examples "
              "before it are skipped, so the run continues where it "
              "stopped." % (examples, "changed: " + ", ".join(changed)
                            if changed else "the checkpoint holds no "
                            "input-iterator state"))
    return StreamStart(saveable, False, examples)

  def restore(self, iterator=None, restore_iterator=True):
    """Restores the latest checkpoint, if any; returns the saving manager.

    Without a checkpoint, `init_checkpoint` (if set) warm-starts the model
    once. Every worker restores from `checkpoint_dir`; the manager saves to
    `save_dir`. `iterator` is saved with every checkpoint; it is also
    restored unless `restore_iterator` is false (the stream was restarted
    at an offset).
    """
    checkpoint = self._checkpoint(iterator)
    latest = self.latest()
    if latest:
      restoring = checkpoint if restore_iterator else self._checkpoint()
      try:
        restoring.restore(latest).expect_partial()
      except (ValueError, tf.errors.InvalidArgumentError,
              tf.errors.NotFoundError) as e:
        raise UserError("cannot restore %s into this model (another model "
                        "shape?): %s" % (latest, str(e).splitlines()[0]))
      self.data_stream.assign(self._stream_settings)
      self._log("Restored %s (step %d)" % (latest,
                                           int(self.global_step.numpy())))
    elif not self._warm_started:
      if self._init_checkpoint:
        self.warm_start(self._init_checkpoint)
      elif self._corpus_embeddings:
        self._corpus_embeddings(self.model)
      if self._generator_checkpoint:
        self.load_generator(self._generator_checkpoint)
      self._warm_started = True
    return tf.train.CheckpointManager(
        checkpoint, self.save_dir,
        max_to_keep=self._keep_max if self.is_chief else 1)

  def save(self, manager, step):
    """Saves the checkpoint of `step` (atomically); logs it on the chief."""
    path = checkpoints_lib.save_checkpoint(manager, step)
    if self.is_chief:
      self._log("Saved checkpoint %s" % path)
    return path

  def save_at_stop(self, manager, step):
    """The checkpoint of `step`: the latest if it is one, else a new one."""
    latest = manager.latest_checkpoint
    if not latest or not latest.endswith("-%d" % step):
      latest = checkpoints_lib.save_checkpoint(manager, step)
    return latest

  def warm_start(self, path):
    """Loads the model weights of another pre-training run's checkpoint.

    Only `model/...` is read: the optimizer, step and data position start
    anew. Weights the checkpoint lacks keep their initialisation and are
    named in the log; a checkpoint that shares no weight is an error.
    Returns the names of the variables that were restored.
    """
    if interop_loader.is_foreign(path):  # HF folders or Google TF1.
      report = interop_loader.load_into(self.model, path, log=self._log)
      self._warm_started = True
      return report["loaded"]
    prefix = checkpoints_lib.resolve_checkpoint(path)
    restored, fresh = self._restore_model_weights(prefix)
    if not restored:
      raise UserError("init_checkpoint %s shares no weight with this model "
                      "(not an electra-hp pre-training checkpoint?)." % prefix)
    self._warm_started = True
    self._log("Warm start from %s: %d of %d weight tensors restored%s" % (
        prefix, len(restored), len(restored) + len(fresh),
        "; fresh: " + ", ".join(fresh) if fresh else ""))
    return restored

  def load_generator(self, path):
    """Loads the generator of another pre-training run's checkpoint into
    G (its transformer, embeddings and MLM head, the weights a fixed
    generator keeps: `builders.fixed_generator_variables`); a learned
    sampling head keeps its initialisation. UserError when the checkpoint
    lacks any of them or has other shapes."""
    prefix = checkpoints_lib.resolve_checkpoint(path)
    generator = self.model.generator
    fixed = builders.fixed_generator_variables(self.model)
    # Only the fixed parts: a learned sampling head has no counterpart.
    parts = tf.train.Checkpoint(**builders.fixed_generator_parts(generator))
    try:
      status = tf.train.Checkpoint(model=tf.train.Checkpoint(
          generator=parts)).restore(prefix)
      status.assert_existing_objects_matched()
    except (ValueError, tf.errors.InvalidArgumentError) as e:
      raise UserError("cannot load the generator of %s (hparam "
                      "'generator_checkpoint'): other shapes than this "
                      "model's generator: %s" % (prefix,
                                                 str(e).splitlines()[0]))
    except AssertionError as e:
      raise UserError("generator_checkpoint %s lacks weights of this "
                      "model's generator (%s): give a checkpoint of a run "
                      "with the same generator sizes." % (
                          prefix, str(e).splitlines()[0][:300]))
    self._log("Fixed generator from %s: %d weight tensors loaded, not "
              "trained." % (prefix, len(fixed)))

  def _restore_model_weights(self, prefix):
    """Restores `model/...` of `prefix`; (names restored, names kept)."""
    variables = self.model.variables
    before = [v.numpy() for v in variables]
    try:
      tf.train.Checkpoint(model=self.model).restore(prefix).expect_partial()
    except (ValueError, tf.errors.InvalidArgumentError) as e:
      raise UserError("cannot warm-start from %s (hparam 'init_checkpoint'): "
                      "its weights have other shapes than this model's: %s"
                      % (prefix, str(e).splitlines()[0]))
    changed = [not np.array_equal(b, v.numpy())
               for b, v in zip(before, variables)]
    return ([v.name for v, c in zip(variables, changed) if c],
            [v.name for v, c in zip(variables, changed) if not c])
