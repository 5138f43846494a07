"""First-step losses and gradients of one device vs 2 logical CPU replicas.

For tests/pretrain/test_run_pretraining.py; run in a fresh process (the CPU
must be split before TensorFlow starts):

  python -m tests.mirrored_step_check DATA_DIR HPARAMS_JSON OUT.npz

Builds a `PretrainingTrainer` with strategy "mirrored" over 2 logical CPUs
and one with the default strategy, gives both the same weights and the first
global batch of their own input pipelines (evaluation order), and computes
each replica's loss share and gradients with `strategy.run`, summed over
replicas. Then both train one step (`train()`, with its checkpoint).
Writes OUT.npz with, per strategy S in (default, mirrored): S/ids (the
global batch's input ids), S/loss/<name>, S/grad/<index in
trainable_variables>, S/step1/<statistic of the progress line>.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

import run_pretraining  # pylint: disable=g-import-not-at-top
from pretrain import pretrain_data  # pylint: disable=g-import-not-at-top
from tests import pretrain_fixtures as pf  # pylint: disable=g-import-not-at-top
from util import process_setup  # pylint: disable=g-import-not-at-top

LOSSES = ("total_loss", "mlm_loss", "disc_loss", "sampling_loss")


def first_step(trainer):
  """{name: array} of the first eval batch's losses and summed gradients."""
  strategy, model = trainer.strategy, trainer.model
  dataset = strategy.distribute_datasets_from_function(
      pretrain_data.get_input_fn(trainer.specs.data, trainer.specs.masking,
                                 is_training=False))
  features = next(iter(dataset))

  def replica_fn(features):
    with tf.GradientTape() as tape:
      out = model(features, training=True, step=trainer.global_step)
    grads = tape.gradient(out["total_loss"], model.trainable_variables)
    grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
             for g, v in zip(grads, model.trainable_variables)]
    return {k: out[k] for k in LOSSES}, grads

  losses, grads = strategy.run(replica_fn, args=(features,))

  def total(v):
    return strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None)

  result = {"ids": np.concatenate([
      t.numpy() for t in strategy.experimental_local_results(
          features["input_ids"])])}
  result.update({"loss/" + k: total(v).numpy() for k, v in losses.items()})
  # Variables in `trainable_variables` order (the same in both models).
  result.update({"grad/%03d" % i: total(g).numpy()
                 for i, g in enumerate(grads)})
  return result


def main(data_dir, hparams, out_path):
  hparams = dict(json.loads(hparams), num_train_steps=1)
  trainers = {}
  # Mirrored first: it splits the CPU before any TensorFlow op runs.
  for name, extra in (("mirrored", dict(strategy="mirrored",
                                        num_cpu_devices=2)),
                      ("default", {})):
    config = run_pretraining.build_config(data_dir, name,
                                          dict(hparams, **extra))
    process_setup.set_up_process(config.mixed_precision, config.seed,
                                 checkpointed_dropout=True)
    trainers[name] = pf.trainer(config, log=print)
  assert trainers["mirrored"].num_replicas == 2
  trainers["default"].model.set_weights(
      trainers["mirrored"].model.get_weights())
  results = {}
  for name, trainer in trainers.items():
    values = first_step(trainer)
    values.update({"step1/" + k: np.float64(v)
                   for k, v in trainer.train().items()})
    results.update({"%s/%s" % (name, k): v for k, v in values.items()})
  np.savez(out_path, **results)


if __name__ == "__main__":
  main(*sys.argv[1:])
