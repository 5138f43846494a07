"""What a TPU run requires, checked on CPU (issue 17, item 2).

TPUStrategy compiles the whole training loop with XLA: no host ops (py_function,
string ops) inside it, static shapes, a batch that divides by the replicas.
Here the trainer's own loop (`PretrainingTask.make_train_loop`, the
replica step, the loss and statistic sums) is compiled with
`jit_compile=True`, every dataset is checked for a static batch dimension
(`drop_remainder=True`), and `strategy: "tpu"` runs the same pre-training
path as the other strategies with a stand-in for the TPU.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

import run_pretraining
from finetune import preprocessing
from pretrain import step_statistics
from tests import pretrain_fixtures
from util import process_setup

LOOP_STEPS = 3
HPARAMS = dict(pretrain_fixtures.RUNNER_HPARAMS, sampling="hp_loss",
               focal_gamma=1.0, iterations_per_loop=LOOP_STEPS,
               num_train_steps=2 * LOOP_STEPS)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
  return pretrain_fixtures.make_data_dir(tmp_path_factory.mktemp("data"))


class StackedBatches(object):
  """An iterator over K batches held as [K, B, ...] tensors.

  `next()` is graph ops only (a gather at a variable counter), so unlike a
  tf.data iterator it can sit inside an XLA cluster; on a TPU the infeed
  plays this part.
  """

  def __init__(self, batches):
    self._stacked = {k: tf.stack([b[k] for b in batches]) for k in batches[0]}
    self._num = len(batches)
    self._count = tf.Variable(0, dtype=tf.int32, trainable=False)

  def __next__(self):
    index = self._count % self._num
    self._count.assign_add(1)
    return {k: tf.gather(v, index) for k, v in self._stacked.items()}


@pytest.fixture(scope="module")
def trainer_and_batches(data_dir):
  """The trainer of HPARAMS (HP-Loss, focal loss) and LOOP_STEPS batches of
  the real input function."""
  config = run_pretraining.build_config(str(data_dir), "xla",
                                        json.dumps(HPARAMS))
  process_setup.set_up_process(config.mixed_precision, config.seed,
                               checkpointed_dropout=True)
  process_setup.set_up_process(config.mixed_precision, config.seed,
                               checkpointed_dropout=True)
  trainer = pretrain_fixtures.trainer(config, log=lambda _: None)
  dataset = pretrain_fixtures.input_fn(config, is_training=True)()
  return trainer, list(dataset.take(LOOP_STEPS))


_real_step_statistics = step_statistics.step_statistics


def _with_host_op(out, features, learns_sampler):
  stats = _real_step_statistics(out, features, learns_sampler)
  stats["host"] = tf.py_function(lambda: np.float32(0), [], tf.float32)
  return stats


@pytest.mark.slow
@pytest.mark.parametrize("host_op", [False, True],
                         ids=["trainer_loop", "with_py_function_fails"])
def test_the_whole_train_loop_compiles_with_xla(trainer_and_batches,
                                                monkeypatch, host_op):
  """Lowers the loop to XLA's HLO, where an op XLA cannot compile fails.

  (Lowering is the step of `jit_compile` that rejects ops; the machine-code
  generation after it takes minutes on 2 CPU cores and adds no check.)
  """
  if host_op:  # Shows that a host op inside the loop is caught.
    monkeypatch.setattr(step_statistics, "step_statistics", _with_host_op)
  trainer, batches = trainer_and_batches
  loop = trainer.task.make_train_loop()
  # The loop's Python body, every op of it in one XLA cluster.
  compiled = tf.function(loop.python_function, jit_compile=True)
  lower = compiled.experimental_get_compiler_ir(StackedBatches(batches),
                                                tf.constant(LOOP_STEPS))
  if host_op:
    with pytest.raises((ValueError, tf.errors.OpError),
                       match="unsupported operations.*EagerPyFunc"):
      lower(stage="hlo")
    return
  hlo = lower(stage="hlo")
  # One module for the whole loop: the steps after the first in a while.
  assert hlo.startswith("HloModule") and " while(" in hlo
  assert "EagerPyFunc" not in hlo


def _batch_dims(dataset):
  return {k: spec.shape[0] for k, spec in dataset.element_spec.items()}


def test_every_training_and_evaluation_dataset_has_static_batches(data_dir):
  config = run_pretraining.build_config(str(data_dir), "static",
                                        json.dumps(HPARAMS))
  context = tf.distribute.InputContext(num_input_pipelines=2,
                                       input_pipeline_id=1,
                                       num_replicas_in_sync=4)
  for is_training in (True, False):
    fn = pretrain_fixtures.input_fn(config, is_training)
    batch = config.train_batch_size if is_training else config.eval_batch_size
    assert set(_batch_dims(fn()).values()) == {batch}
    assert set(_batch_dims(fn(context)).values()) == {batch // 4}
  # Fine-tuning: 10 rows in batches of 4 (a remainder of 2).
  features = preprocessing.stack_features(
      [dict(input_ids=[1, 2, 3], label_ids=i % 2) for i in range(10)])
  train = preprocessing.train_dataset(features, 4, seed=1)
  assert set(_batch_dims(train).values()) == {4}
  evaluation = preprocessing.eval_dataset(features, 4)
  assert set(_batch_dims(evaluation).values()) == {4}
  rows = np.concatenate([b["feature_index"].numpy() for b in evaluation])
  assert len(rows) == 12  # padded to full batches, no row dropped
  assert list(rows[:10]) == list(range(10))


@pytest.mark.slow
def test_tpu_strategy_runs_the_same_pretraining_path(data_dir, monkeypatch,
                                                      capsys):
  """Only the resolver is TPU-specific: with a stand-in strategy for the TPU,
  `strategy: "tpu"` trains, checkpoints and evaluates like the others."""
  calls = []

  class FakeResolver(object):

    def __init__(self, tpu, zone, project):
      calls.append(("resolver", tpu, zone, project))

  monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver",
                      FakeResolver)
  monkeypatch.setattr(tf.config, "experimental_connect_to_cluster",
                      lambda r: calls.append(("connect", type(r))))
  monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system",
                      lambda r: calls.append(("initialize", type(r))))
  monkeypatch.setattr(tf.distribute, "TPUStrategy",
                      lambda r: tf.distribute.OneDeviceStrategy("/cpu:0"))
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, strategy="tpu",
                 tpu_name="my-tpu", tpu_zone="us-central1-b", do_eval=True,
                 num_train_steps=2, num_eval_steps=1)
  assert run_pretraining.main(["--data-dir", str(data_dir), "--model-name",
                               "tpu", "--hparams", json.dumps(hparams)]) == 0
  assert calls == [("resolver", "my-tpu", "us-central1-b", None),
                   ("connect", FakeResolver), ("initialize", FakeResolver)]
  out = capsys.readouterr().out
  assert "Training steps 0 -> 2 on 1 replica(s)" in out
  assert "Saved checkpoint" in out and "Eval at step 2" in out
