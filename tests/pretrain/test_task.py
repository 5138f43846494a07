"""pretrain/task.py alone: the tiny model's train loop, a few steps in
process on one hand-built batch, with no data directory or checkpoint."""

import types

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import configure_specs
from pretrain import task as task_lib
from tests import pretrain_fixtures as fx
from util import process_setup
from util.errors import UserError

BATCH, SEQ_LEN, PREDS, VOCAB = 4, 16, 3, 40


def _task(config, strategy):
  """The `PretrainingTask` of `config`'s specs, as the trainer makes it."""
  specs = configure_specs.pretraining_specs(config)
  return task_lib.PretrainingTask(specs.network, specs.objective,
                                  specs.masking, specs.optimization,
                                  specs.runtime, strategy)


@pytest.fixture
def make_task():
  """Makes the task of a tiny ELECTRA config (HP-Loss: a learned sampler;
  keyword arguments override its hparams), set up as the runner does."""
  experimental = tf_keras.backend.experimental
  was_enabled = experimental.is_tf_random_generator_enabled()

  def make(**hparams):
    values = dict(sampling="hp_loss", train_batch_size=BATCH,
                  learning_rate=1e-3, num_train_steps=10, num_warmup_steps=0)
    values.update(hparams)
    config = fx.tiny_config(VOCAB, SEQ_LEN, PREDS, **values)
    process_setup.set_up_process(config.mixed_precision, config.seed)
    return _task(config, tf.distribute.get_strategy())

  try:
    yield make
  finally:
    if not was_enabled:
      experimental.disable_tf_random_generator()


@pytest.fixture
def task(make_task):
  return make_task()


def _batches():
  features = fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=0)
  return iter(tf.data.Dataset.from_tensors(features).repeat())


def test_the_train_loop_trains_its_steps_and_sums_their_statistics(task):
  iterator = _batches()
  train_loop = task.make_train_loop()
  before = [v.numpy() for v in task.model.trainable_variables]
  first = {k: v.numpy() for k, v in train_loop(iterator,
                                               tf.constant(1)).items()}
  sums = {k: v.numpy() for k, v in train_loop(iterator,
                                              tf.constant(2)).items()}
  assert int(task.global_step.numpy()) == 3
  assert int(task.optimizer.iterations.numpy()) == 3
  assert task.model.learns_sampler
  assert {"total_loss", "mlm_loss", "disc_loss", "sampling_loss",
          "grad_norm", "skipped_steps", "sxy"} <= set(sums)
  assert all(np.isfinite(v) for v in sums.values())
  assert sums["skipped_steps"] == 0 and sums["grad_norm"] > 0
  # Two steps on the same batch: twice its masked positions.
  assert sums["num_masked"] == 2 * first["num_masked"]
  assert any(not np.array_equal(b, v.numpy()) for b, v in zip(
      before, task.model.trainable_variables))
  assert task.learning_rate() == pytest.approx(1e-3 * (1 - 3 / 10))


@pytest.mark.parametrize("own_generator_table", [False, True])
def test_embedding_lr_multiplier_0_keeps_every_word_table(
    make_task, own_generator_table):
  """A counted table stays as counted (no update, no weight decay) while
  the rest of the model trains."""
  task = make_task(embedding_lr_multiplier=0,
                   untied_generator_embeddings=own_generator_table)
  tables = [v for v in task.model.trainable_variables
            if "word_embeddings" in v.name]
  assert len(tables) == (2 if own_generator_table else 1)
  others = [v for v in task.model.trainable_variables
            if not any(v is t for t in tables)]
  before = [v.numpy() for v in tables + others]
  task.make_train_loop()(_batches(), tf.constant(2))
  for table, start in zip(tables, before):
    np.testing.assert_array_equal(table.numpy(), start)
  assert sum(not np.array_equal(v.numpy(), b)
             for v, b in zip(others, before[len(tables):])) > len(others) // 2


def test_a_batch_that_does_not_split_over_the_replicas_is_refused():
  config = fx.tiny_config(train_batch_size=8,
                          gradient_accumulation_steps=1)
  strategy = types.SimpleNamespace(num_replicas_in_sync=3)
  with pytest.raises(UserError, match="train_batch_size 8 is not divisible "
                     "by the 3 replicas x 1 gradient_accumulation_steps; "
                     "use a multiple of 3"):
    _task(config, strategy)
