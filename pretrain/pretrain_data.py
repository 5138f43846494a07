"""Pre-training input pipeline: TFRecord shards to masked, batched examples.

Shards (build_pretraining_dataset.py) hold tf.train.Example records with int64
features input_ids, input_mask and segment_ids, each max_seq_length long.

One input pipeline (one per host under tf.distribute) does
  sorted glob -> [training: its share of the files, every n-th of them; an
  error when there are fewer files than pipelines] -> per epoch [training: a
  seeded file order] ->
  deterministic parallel interleave, each record tagged with its file key
  (from seed, epoch and file index) and its record index -> [training:
  seeded shuffle of the raw records] -> batch (drop_remainder) -> parse to
  fixed shapes and mask (pretrain/masking.py), vectorised over the batch but
  with one seed per example -> prefetch.

Every example's masking seed and sample seed are a function of (seed, epoch,
file index in the sorted glob, record index in the file) and nothing else: the
same seed gives the same stream run after run on CPU, each epoch masks anew,
and an example is masked the same whatever the number of replicas or input
pipelines. Epochs are counted by the pipeline itself (not `.repeat()`) so the
epoch number is known.

Training and evaluation both repeat (unless num_epochs is given): evaluation
reads the shards in a fixed order (sorted, interleaved) without shuffling,
so num_eval_steps batches always exist even for a small held-out set; a
second pass over it is masked
with the next epoch's seeds. With several input pipelines, evaluation reads
all held-out files on every pipeline and each takes every n-th example.

Workers (MultiWorkerMirroredStrategy): the global batch is split evenly over
the pipelines, so a run of S steps consumes S x train_batch_size examples
whatever the number of workers; a resume skips `skip_examples / n` examples
of each pipeline's own stream, which is where that pipeline stopped.
"""

import contextlib

import tensorflow as tf

from text import tokenization
from pretrain import shards
from pretrain.masking import mask_batch
from util.errors import UserError
from util import shard_identity

# Separate stateless streams derived from the one user seed.
_ORDER_STREAM = 1
_MASK_STREAM = 2
_RNG_ALG = "philox"


def read_special_ids(vocab_file):
  """Returns {token: id} for `tokenization.SPECIAL_TOKENS` of a vocab.txt or
  a SentencePiece model.

  Raises:
    UserError: the vocab is missing or lacks a special token (names it).
  """
  vocab = tokenization.load_vocabulary(vocab_file)
  return {token: vocab[token] for token in tokenization.SPECIAL_TOKENS}


def make_dataset(files, *, batch_size, max_seq_length, max_predictions_per_seq,
                 mask_prob, mask_id, special_ids, seed, is_training,
                 shuffle_buffer=10000, num_epochs=None, num_input_pipelines=1,
                 input_pipeline_id=0, file_ids=None, cycle_length=4,
                 skip_examples=0):
  """The dataset of one input pipeline (see the module docstring).

  Args:
    files: shard paths in sorted order.
    batch_size: examples per batch (the per-replica batch).
    max_seq_length: L.
    max_predictions_per_seq: P.
    mask_prob: fraction of the real tokens to predict.
    mask_id: id of [MASK].
    special_ids: ids never masked ([CLS], [SEP], [PAD]).
    seed: Python int; data order, masking and sample seeds derive from it.
    is_training: shuffle the file order and the records.
    shuffle_buffer: records in the shuffle buffer (training).
    num_epochs: passes over the data; None repeats forever.
    num_input_pipelines, input_pipeline_id: this pipeline's share.
    file_ids: each file's index used in the seeds (default 0, 1, ...).
    cycle_length: files read at once.
    skip_examples: examples of this pipeline's (shuffled) stream to skip
      before the first batch; the rest is what an uninterrupted stream would
      give after them, whatever the batch size.

  Returns:
    A tf.data.Dataset of dicts with static shapes:
      input_ids, input_mask, segment_ids, masked_input_ids: [B, L] int32;
      masked_lm_positions, masked_lm_ids: [B, P] int32;
      masked_lm_weights: [B, P] float32;
      sample_seed: [B, 2] int32, the model's seed for sampling replacements.
  """
  files = list(files)
  file_ids = list(range(len(files))) if file_ids is None else list(file_ids)
  # Training: each pipeline reads its own files (see _files_of_pipeline).
  shard_files = is_training and num_input_pipelines > 1
  mine = _files_of_pipeline(files, shard_files, num_input_pipelines,
                            input_pipeline_id)
  dataset = _keyed_records(files, file_ids, mine, seed=seed,
                           is_training=is_training, num_epochs=num_epochs,
                           cycle_length=cycle_length)
  if not shard_files and num_input_pipelines > 1:
    # Sharding the endless stream (not each epoch) keeps every pipeline fed
    # even when there are fewer held-out examples than pipelines.
    dataset = dataset.shard(num_input_pipelines, input_pipeline_id)
  if is_training:
    dataset = dataset.shuffle(shuffle_buffer, seed=seed)
  # Always present (also for 0), so that a saved iterator's structure does
  # not depend on where the run started.
  dataset = dataset.skip(skip_examples)
  # Batching the raw records first lets parsing and masking run vectorised;
  # each example's mask still depends on its own seed only.
  dataset = dataset.batch(batch_size, drop_remainder=True)
  dataset = dataset.map(
      _parse_and_mask_fn(max_seq_length, max_predictions_per_seq, mask_prob,
                         mask_id, special_ids),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return dataset.with_options(_pipeline_options()).prefetch(tf.data.AUTOTUNE)


def _files_of_pipeline(files, shard_files, num_input_pipelines,
                       input_pipeline_id):
  """Indices into `files` of the files this pipeline reads.

  Training with several pipelines (`shard_files`): each pipeline reads its
  own files, every n-th from `input_pipeline_id`. Else all of them:
  evaluation reads all (small) held-out files on every pipeline, which takes
  every n-th example, so the examples of the first k global batches do not
  depend on the workers.

  Raises:
    UserError: `shard_files` with fewer files than pipelines.
  """
  if shard_files and len(files) < num_input_pipelines:
    raise UserError(
        "%d input pipelines (one per worker) but only %d non-empty training "
        "shard file(s) (%s ...): each worker reads its own files. Rebuild "
        "the data with build_pretraining_dataset.py --num-shards %d (or a "
        "multiple of %d, for equal shares)." % (
            num_input_pipelines, len(files), files[0], num_input_pipelines,
            num_input_pipelines))
  mine = list(range(len(files)))
  if shard_files:
    mine = mine[input_pipeline_id::num_input_pipelines]
  return mine


def _keyed_records(files, file_ids, mine, *, seed, is_training, num_epochs,
                   cycle_length):
  """The (file key, record index, record) stream of files `mine`, by epoch.

  Each epoch interleaves the files (in a per-epoch shuffled order when
  training); `num_epochs` None repeats forever. The file key, one int32 per
  (seed, epoch, file), seeds the masking and sampling of its records.
  """
  names = tf.constant(files)
  ids = tf.constant(file_ids, tf.int64)
  order_key = tf.constant([seed, _ORDER_STREAM], tf.int64)
  mask_key = tf.constant([seed, _MASK_STREAM], tf.int64)

  def read_file(position, epoch):
    # One int32 per (seed, epoch, file); the record index makes the rest of
    # each example's seeds (StatelessRandomGetKeyCounter scrambles seeds, so
    # neighbouring ones give unrelated streams).
    file_key = tf.random.stateless_uniform(
        [], tf.random.fold_in(tf.random.fold_in(mask_key, epoch, _RNG_ALG),
                              tf.gather(ids, position), _RNG_ALG),
        minval=None, maxval=None, dtype=tf.int32, alg=_RNG_ALG)
    records = tf.data.TFRecordDataset(tf.gather(names, position)).enumerate()
    return records.map(lambda index, record: (file_key, index, record))

  def read_epoch(epoch):
    positions = tf.constant(mine, tf.int64)
    if is_training:
      positions = tf.random.experimental.stateless_shuffle(
          positions, tf.random.fold_in(order_key, epoch, _RNG_ALG), _RNG_ALG)
    return tf.data.Dataset.from_tensor_slices(positions).interleave(
        lambda position: read_file(position, epoch),
        cycle_length=min(cycle_length, len(mine)), block_length=1,
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

  epochs = (tf.data.Dataset.counter() if num_epochs is None else
            tf.data.Dataset.range(num_epochs))
  return epochs.flat_map(read_epoch)


def _parse_and_mask_fn(max_seq_length, max_predictions_per_seq, mask_prob,
                       mask_id, special_ids):
  """The map function of batched keyed records to the batch dict."""
  spec = shards.feature_spec(max_seq_length)

  def parse_and_mask(file_key, index, record):
    """[B] file keys, record indices and records -> the batch dict."""
    batch = {name: tf.cast(value, tf.int32) for name, value in
             tf.io.parse_example(record, spec).items()}
    # Masking seed [key, 2r], sample seed [key, 2r + 1] (r < 2**30 records
    # per file).
    twice = 2 * tf.cast(index, tf.int32)
    mask_seed = tf.stack([file_key, twice], axis=1)
    batch.update(mask_batch(
        batch["input_ids"], batch["input_mask"], mask_seed,
        max_predictions_per_seq=max_predictions_per_seq, mask_prob=mask_prob,
        mask_id=mask_id, special_ids=special_ids))
    batch["sample_seed"] = tf.stack([file_key, twice + 1], axis=1)
    return batch

  return parse_and_mask


def _pipeline_options():
  """Deterministic, no auto-sharding, and skip(0) kept in the graph."""
  options = tf.data.Options()
  options.deterministic = True
  # Keeps skip(0) in the graph (see `make_dataset`).
  options.experimental_optimization.noop_elimination = False
  # Sharding is done here, per input pipeline.
  options.experimental_distribute.auto_shard_policy = (
      tf.data.experimental.AutoShardPolicy.OFF)
  return options


class InputFn(object):
  """input_fn(input_context) for `distribute_datasets_from_function`.

  Attributes:
    files: the shards read, sorted.
    batch_size: the global batch.
    skip_examples: examples of the (global) stream to skip, to resume a run
      at an example offset; each of the pipelines skips its share.
    shard_set: the identity of the training shards (util/shard_identity.py),
      None for others: a run records it (`check_inputs`).
  """

  def __init__(self, files, file_ids, batch_size, batch_size_name, kwargs,
               skip_examples=0, shard_set=None):
    self.files = files
    self.file_ids = file_ids
    self.batch_size = batch_size
    self.skip_examples = skip_examples
    self.shard_set = shard_set
    self._batch_size_name = batch_size_name
    self._kwargs = kwargs

  def at_offset(self, skip_examples):
    """This input function with the stream started `skip_examples` in."""
    return InputFn(self.files, self.file_ids, self.batch_size,
                   self._batch_size_name, self._kwargs,
                   skip_examples=skip_examples, shard_set=self.shard_set)

  def __call__(self, input_context=None):
    """Returns this pipeline's dataset of per-replica batches.

    Args:
      input_context: a tf.distribute.InputContext, or None for one pipeline
        and one replica.
    """
    pipelines, pipeline_id, batch = 1, 0, self.batch_size
    if input_context is not None:
      pipelines = input_context.num_input_pipelines
      pipeline_id = input_context.input_pipeline_id
      replicas = input_context.num_replicas_in_sync
      if self.batch_size % replicas:
        raise UserError("hparam %r %d is the global batch and must be "
                        "divisible by the %d replicas." % (
                            self._batch_size_name, self.batch_size, replicas))
      batch = input_context.get_per_replica_batch_size(self.batch_size)
    return make_dataset(self.files, file_ids=self.file_ids, batch_size=batch,
                        skip_examples=self.skip_examples // pipelines,
                        num_input_pipelines=pipelines,
                        input_pipeline_id=pipeline_id, **self._kwargs)

  @contextlib.contextmanager
  def data_errors(self):
    """Re-raises a corrupt or malformed record met in the loop as a UserError.

    TF's DataLossError does not say which file failed, so on such an error
    each shard is read once more to find the culprit. Wrap the loop that
    consumes the dataset: `with input_fn.data_errors(): ...`.
    """
    try:
      yield
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
      if (isinstance(e, tf.errors.InvalidArgumentError) and
          not shards.is_parse_error(e)):
        raise  # not a data error
      culprit = shards.find_bad_shard(self.files,
                                      self._kwargs["max_seq_length"])
      if culprit is None:
        raise
      raise culprit from e


def get_input_fn(data, masking, is_training, file_pattern=None,
                 num_epochs=None):
  """Checks the data and returns an `InputFn` for pre-training or evaluation.

  Args:
    data: a configure_specs.DataSpec (the vocabulary, shard globs, batches,
      shuffle buffer and seed).
    masking: a configure_specs.MaskingSpec (the examples' length and
      masked positions).
    is_training: read data.pretrain_tfrecords, shuffled, with
      train_batch_size; else data.eval_tfrecords in order with
      eval_batch_size.
    file_pattern: a glob overriding the spec's.
    num_epochs: passes over the data; None (the default) repeats forever.

  Raises:
    UserError: the vocab lacks a special token, the glob matches nothing,
      the shards differ from their manifest.json, or a shard is corrupt or
      has the wrong sequence length.
  """
  special = read_special_ids(data.vocab_file)
  hparam = "pretrain_tfrecords" if is_training else "eval_tfrecords"
  pattern = file_pattern or getattr(data, hparam)
  files = shards.find_shards(pattern, hparam)
  shards.check_manifest(files, pattern, hparam)
  shards.check_vocabulary(files, data.vocab_file, hparam)
  # Recorded in config.json; a resume compares (interop/saved_config.py).
  shard_set = (shard_identity.shard_set(files)
               if is_training and file_pattern is None else None)
  files, file_ids = shards.check_shards(files, masking.max_seq_length,
                                        hparam)
  batch_name = "train_batch_size" if is_training else "eval_batch_size"
  kwargs = dict(
      max_seq_length=masking.max_seq_length,
      max_predictions_per_seq=masking.max_predictions_per_seq,
      mask_prob=masking.mask_prob, mask_id=special["[MASK]"],
      special_ids=[special[t] for t in ("[PAD]", "[CLS]", "[SEP]")],
      seed=data.seed, is_training=is_training,
      shuffle_buffer=data.shuffle_buffer, num_epochs=num_epochs)
  return InputFn(files, file_ids, getattr(data, batch_name), batch_name,
                 kwargs, shard_set=shard_set)


def check_inputs(data, masking, do_train, do_eval):
  """Checks the vocabulary and the shards a run will read, before any step.

  Reads the vocabulary's special tokens and the first record of every
  training shard (with do_train) and evaluation shard (with do_eval), so a
  missing, empty or mis-sized data set stops the run within seconds instead
  of after training.

  Args:
    data, masking: the DataSpec and MaskingSpec of `get_input_fn`.
    do_train, do_eval: whether the run trains and evaluates (hparams
      do_train, do_eval).
  Returns:
    the identity of the training shards (util/shard_identity.py), None
    without do_train: the run's config is built with it (config.json
    records it).
  Raises:
    UserError: naming the file (or glob and hparam) and the fix.
  """
  shard_set = None
  if do_train:
    shard_set = get_input_fn(data, masking, is_training=True).shard_set
  if do_eval:
    get_input_fn(data, masking, is_training=False)
  return shard_set
