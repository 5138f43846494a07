"""One worker of a MultiWorkerMirroredStrategy cluster reading training data.

  TF_CONFIG=... python -m tests.multi_worker_count_check DATA_DIR HPARAMS_JSON \
      NUM_STEPS OUT.npz

Builds the strategy from TF_CONFIG and the real training input function
(pretrain/pretrain_data.py) under `distribute_datasets_from_function`, reads
NUM_STEPS global batches and saves what this worker read to OUT.npz:
  input_ids: [examples read here, max_seq_length], the rows of the local
    per-replica batches;
  global_examples: [NUM_STEPS], the examples of each step summed over every
    replica of the cluster (an all-reduce, so the workers really talk);
  num_input_pipelines, input_pipeline_id: what the InputContext said.
Used by tests/pretrain/test_multi_worker_data.py.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

import configure  # pylint: disable=g-import-not-at-top
import configure_specs  # pylint: disable=g-import-not-at-top
from pretrain import pretrain_data  # pylint: disable=g-import-not-at-top
from util import distribution  # pylint: disable=g-import-not-at-top


def main(data_dir, hparams_json, num_steps, out_path):
  hparams = dict(json.loads(hparams_json), strategy="multi_worker_mirrored")
  config = configure.PretrainingConfig("count", data_dir, **hparams)
  specs = configure_specs.pretraining_specs(config)
  strategy = distribution.get_strategy(specs.runtime)
  input_fn = pretrain_data.get_input_fn(specs.data, specs.masking,
                                        is_training=True)
  contexts = []

  def recording_input_fn(context):
    contexts.append(context)
    return input_fn(context)

  iterator = iter(strategy.distribute_datasets_from_function(
      recording_input_fn))

  @tf.function
  def count(batch):
    per_replica = strategy.run(
        lambda b: tf.shape(b["input_ids"], out_type=tf.int64)[0], (batch,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

  rows, totals = [], []
  for _ in range(num_steps):
    batch = next(iterator)
    totals.append(int(count(batch)))
    for local in strategy.experimental_local_results(batch["input_ids"]):
      rows.append(local.numpy())
  np.savez(out_path, input_ids=np.concatenate(rows),
           global_examples=np.array(totals),
           num_input_pipelines=contexts[0].num_input_pipelines,
           input_pipeline_id=contexts[0].input_pipeline_id)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
