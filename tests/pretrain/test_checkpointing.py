"""pretrain/checkpointing.py alone, on a two-variable stand-in model.

Saving and restoring, the data stream's resume point (from a saved
iterator, or an example offset), warm start and a non-chief worker's save
directory, each in a few milliseconds.
"""

import json
import os

import pytest
import tensorflow as tf

from pretrain import checkpointing
from pretrain import data_stream
from util.errors import UserError

SETTINGS = json.dumps({k: 1 for k in data_stream.KEYS}, sort_keys=True)
BATCH = 8


class Model(tf.Module):
  """Two weights, as the pre-training model holds them."""

  def __init__(self, value=0.0):
    super().__init__()
    self.w = tf.Variable([value, value], name="w")
    self.b = tf.Variable(value, name="b")


def _checkpoints(directory, value=0.0, settings=SETTINGS, is_chief=True,
                 init_checkpoint=None, corpus_embeddings=None):
  """(PretrainingCheckpoints of a fresh stand-in, its log lines)."""
  lines = []
  optimizer = tf.Module()
  optimizer.slot = tf.Variable(value)
  ckpts = checkpointing.PretrainingCheckpoints(
      Model(value), optimizer, tf.Variable(0, dtype=tf.int64),
      str(directory), is_chief, keep_max=2, stream_settings=settings,
      batch_size=BATCH, init_checkpoint=init_checkpoint,
      corpus_embeddings=corpus_embeddings, log=lines.append)
  return ckpts, lines


def _train_and_save(ckpts, step, iterator=None):
  manager = ckpts.restore(iterator)
  ckpts.global_step.assign(step)
  ckpts.count_examples(step * BATCH)
  return ckpts.save(manager, step)


def test_a_new_run_starts_the_stream_at_its_beginning(tmp_path):
  ckpts, lines = _checkpoints(tmp_path / "ckpt")
  assert ckpts.stream_start(saveable=True) == (True, True, 0)
  assert ckpts.latest() is None and lines == []


def test_restore_gives_back_the_saved_state(tmp_path):
  directory = tmp_path / "ckpt"
  saved, lines = _checkpoints(directory, value=3.0)
  path = _train_and_save(saved, 6)
  assert path == os.path.join(str(directory), "ckpt-6")
  assert lines == ["Saved checkpoint %s" % path]
  ckpts, lines = _checkpoints(directory)
  ckpts.restore()
  assert lines == ["Restored %s (step 6)" % path]
  assert list(ckpts.model.w.numpy()) == [3.0, 3.0]
  assert float(ckpts.optimizer.slot.numpy()) == 3.0
  assert int(ckpts.examples_seen.numpy()) == 6 * BATCH


def test_without_iterator_state_the_stream_resumes_at_the_examples_seen(
    tmp_path):
  _train_and_save(_checkpoints(tmp_path)[0], 4)
  ckpts, lines = _checkpoints(tmp_path)
  assert ckpts.stream_start(saveable=False) == (False, False, 4 * BATCH)
  assert lines == ["Resuming the data stream at example 32 (the checkpoint "
                   "holds no input-iterator state): the examples before it "
                   "are skipped, so the run continues where it stopped."]


def test_a_saved_iterator_resumes_unless_the_stream_settings_changed(
    tmp_path):
  dataset = tf.data.Dataset.range(100)
  iterator = iter(dataset)
  for _ in range(5):
    next(iterator)
  _train_and_save(_checkpoints(tmp_path)[0], 2, iterator)
  same, _ = _checkpoints(tmp_path)
  assert same.stream_start(saveable=True) == (True, True, 0)
  resumed = iter(dataset)
  same.restore(resumed, restore_iterator=True)
  assert int(next(resumed)) == 5
  other = json.dumps(dict(json.loads(SETTINGS), train_batch_size=16),
                     sort_keys=True)
  changed, lines = _checkpoints(tmp_path, settings=other)
  assert changed.stream_start(saveable=True) == (True, False, 2 * BATCH)
  assert "(changed: train_batch_size 1 -> 16)" in lines[0]
  fresh = iter(dataset)
  changed.restore(fresh, restore_iterator=False)
  assert int(next(fresh)) == 0  # Left for the caller to start at 16.
  assert changed.data_stream.numpy().decode() == other


def test_a_stop_saves_only_when_the_step_has_no_checkpoint(tmp_path):
  ckpts, _ = _checkpoints(tmp_path)
  manager = ckpts.restore()
  first = ckpts.save(manager, 4)
  assert ckpts.save_at_stop(manager, 4) == first
  assert ckpts.save_at_stop(manager, 5).endswith("ckpt-5")
  assert ckpts.latest().endswith("ckpt-5")


def test_a_worker_saves_to_its_own_directory_from_the_start(tmp_path):
  worker, lines = _checkpoints(tmp_path / "ckpt", is_chief=False)
  save_dir = worker.save_dir
  assert save_dir != str(tmp_path / "ckpt") and os.path.isdir(save_dir)
  path = _train_and_save(worker, 2)
  assert path.startswith(save_dir) and lines == []  # Only the chief logs.
  assert worker.latest() is None
  worker.close()
  assert not os.path.exists(save_dir)


def test_warm_start_loads_the_model_weights_once(tmp_path):
  source = tmp_path / "source"
  _train_and_save(_checkpoints(source, value=2.0)[0], 4)
  ckpts, lines = _checkpoints(tmp_path / "run",
                              init_checkpoint=str(source))
  ckpts.restore()
  ckpts.restore()
  assert lines == ["Warm start from %s: 2 of 2 weight tensors restored" %
                   os.path.join(str(source), "ckpt-4")]
  assert float(ckpts.model.b.numpy()) == 2.0
  assert float(ckpts.optimizer.slot.numpy()) == 0.0  # Only model/...
  assert int(ckpts.global_step.numpy()) == 0


def test_warm_start_from_a_checkpoint_sharing_no_weight_is_an_error(
    tmp_path):
  source = tmp_path / "source"
  _train_and_save(_checkpoints(source, value=0.0)[0], 1)
  ckpts, _ = _checkpoints(tmp_path / "run", init_checkpoint=str(source))
  with pytest.raises(UserError, match="shares no weight"):
    ckpts.restore()


def test_only_a_new_run_without_init_checkpoint_counts_its_embeddings(
    tmp_path):
  started = []
  ckpts, _ = _checkpoints(tmp_path / "run", value=2.0,
                          corpus_embeddings=started.append)
  _train_and_save(ckpts, 4)
  ckpts.restore()
  assert started == [ckpts.model]  # Once, for the new run.
  resumed, _ = _checkpoints(tmp_path / "run",
                            corpus_embeddings=started.append)
  resumed.restore()
  warm, _ = _checkpoints(tmp_path / "warm", init_checkpoint=str(
      tmp_path / "run"), corpus_embeddings=started.append)
  warm.restore()
  assert started == [ckpts.model]
