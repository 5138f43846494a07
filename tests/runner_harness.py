"""run_pretraining.py with test hooks, for test_run_pretraining.py.

  python -m tests.runner_harness [--kill-after-checkpoint]
      [--nan-from-step K] [--dump-weights OUT.npz] -- RUN_PRETRAINING_ARGS

--kill-after-checkpoint: SIGKILL this process right after the first
  checkpoint is written (an unclean interruption at a known point).
--nan-from-step K: the training loss becomes NaN from global step K on.
--dump-weights OUT.npz: after training, save every model weight (in
  `model.weights` order, keys "000", "001", ...) and the last progress
  statistics (key "last/<name>").
Exits as run_pretraining.py does (2 on bad input, 3 on divergence).
"""

import argparse
import os
import signal

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf  # pylint: disable=g-import-not-at-top

import run_pretraining  # pylint: disable=g-import-not-at-top
from model.models.pretrainer import ElectraPretrainer  # pylint: disable=g-import-not-at-top
from pretrain import trainer as trainer_lib  # pylint: disable=g-import-not-at-top


def kill_after_checkpoint():
  save = tf.train.CheckpointManager.save

  def save_then_die(self, *args, **kwargs):
    path = save(self, *args, **kwargs)
    print("Saved checkpoint %s; killing myself." % path, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

  tf.train.CheckpointManager.save = save_then_die


def nan_from_step(first_bad_step):
  forward = ElectraPretrainer.forward

  def poisoned_forward(self, features, training=None, step=0, sampler=None,
                       temperature=None):
    """The MLM loss per position, and so the training loss, is NaN from
    `first_bad_step` on (the train step and `call` both run `forward`)."""
    out = forward(self, features, training=training, step=step,
                  sampler=sampler, temperature=temperature)
    if training:
      bad = tf.cast(step, tf.int64) >= first_bad_step
      out = dict(out, mlm_focal_loss_per_pos=out["mlm_focal_loss_per_pos"] +
                 tf.where(bad, float("nan"), 0.0))
    return out

  ElectraPretrainer.forward = poisoned_forward


def dump_weights(path):
  train = trainer_lib.PretrainingTrainer.train

  def train_then_dump(self):
    last = train(self)
    values = {"%03d" % i: v.numpy() for i, v in enumerate(self.model.weights)}
    values.update({"last/" + k: np.float64(v) for k, v in (last or {}).items()})
    np.savez(path, **values)
    return last

  trainer_lib.PretrainingTrainer.train = train_then_dump


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--kill-after-checkpoint", action="store_true")
  parser.add_argument("--nan-from-step", type=int)
  parser.add_argument("--dump-weights")
  parser.add_argument("run_args", nargs=argparse.REMAINDER)
  args = parser.parse_args()
  if args.kill_after_checkpoint:
    kill_after_checkpoint()
  if args.nan_from_step is not None:
    nan_from_step(args.nan_from_step)
  if args.dump_weights:
    dump_weights(args.dump_weights)
  run_args = args.run_args[1:] if args.run_args[:1] == ["--"] else args.run_args
  run_pretraining.run_main(run_pretraining.main, run_args)


if __name__ == "__main__":
  main()
