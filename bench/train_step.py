"""Times one pre-training step per sampling mode at ELECTRA-Small shapes.

A full step: forward (generator, sampler, discriminator, losses), backward,
AdamW with global-norm clipping, in one `tf.function`: the training step of
run_pretraining.py (`model.train_step.ReplicaTrainStep`; `--jit` compiles
its forward/backward pass with XLA, as `jit_compile` does). Random batches come from the tests' fixture
helper. All modes are built and warmed up first, then timed in interleaved
rounds (mode A K steps, mode B K steps, ..., repeated), and each mode keeps
its fastest round, so load drifting over the run hits all modes alike.

Usage:
  python bench/train_step.py --batch-size 8 --steps 5
  python bench/train_step.py --batch-size 128 --modes mlm,hp_loss --jit

Prints seconds/step, sequences/s and the overhead of each mode relative to
"mlm" (the issue's target: HP-Loss and HP-Dist at most +10%).
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)

from util.cli import quiet_tensorflow_startup  # pylint: disable=g-import-not-at-top

quiet_tensorflow_startup()

import tensorflow as tf  # pylint: disable=g-import-not-at-top
import tf_keras

import configure
from model import electra_pretraining
from model import optimization
from model import train_step as train_step_lib
from model import sampling
from tests import pretrain_fixtures
from util.cli import run_main
from util.errors import UserError


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch-size", type=int, required=True)
  parser.add_argument("--modes", default="mlm,hp_loss,hp_dist,uniform",
                      help="comma-separated sampling modes; mlm is the "
                      "baseline of the overhead column")
  parser.add_argument("--steps", type=int, default=10,
                      help="timed steps per mode and round")
  parser.add_argument("--rounds", type=int, default=3,
                      help="interleaved timing rounds; the fastest counts")
  parser.add_argument("--warmup-steps", type=int, default=2,
                      help="untimed steps per mode after compiling")
  parser.add_argument("--jit", action="store_true",
                      help="compile the train step with XLA")
  parser.add_argument("--seq-len", type=int, default=128)
  parser.add_argument("--vocab-size", type=int, default=30522)
  parser.add_argument("--model-size", default="small",
                      choices=sorted(configure.MODEL_SIZES))
  parser.add_argument("--mixed-precision", default="float32",
                      choices=("float32", "bfloat16", "float16"))
  parser.add_argument("--threads", type=int, default=0,
                      help="TF intra- and inter-op threads (0: TF's "
                      "default); 1 steadies the CPU figures on a shared "
                      "machine")
  parser.add_argument("--hparams", default=None,
                      help="extra PretrainingConfig hparams (JSON)")
  args = parser.parse_args(argv)
  args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
  for mode in args.modes:
    if mode not in sampling.SAMPLERS:
      raise UserError("--modes: unknown mode %r; choose from %s." %
                      (mode, ", ".join(sampling.SAMPLERS)))
  if not args.modes or len(set(args.modes)) != len(args.modes):
    raise UserError("--modes must list distinct modes, got %r." %
                    ",".join(args.modes))
  if args.threads < 0 or args.warmup_steps < 0:
    raise UserError("--threads and --warmup-steps must be >= 0.")
  for name in ("batch_size", "steps", "rounds", "seq_len", "vocab_size"):
    if getattr(args, name) < 1:
      raise UserError("--%s must be >= 1." % name.replace("_", "-"))
  if args.vocab_size <= pretrain_fixtures.FIRST_TOKEN_ID:
    raise UserError("--vocab-size must be > %d." %
                    pretrain_fixtures.FIRST_TOKEN_ID)
  return args


class Runner(object):
  """One mode's model, optimizer and compiled train step."""

  def __init__(self, mode, args):
    hparams = configure.load_hparams(args.hparams)
    hparams.update(model_size=args.model_size, sampling=mode,
                   vocab_size=args.vocab_size, max_seq_length=args.seq_len,
                   train_batch_size=args.batch_size)
    self.config = configure.PretrainingConfig("bench", "/nonexistent",
                                              **hparams)
    self.mode = mode
    self.model = electra_pretraining.ElectraPretrainingModel(self.config)
    self.optimizer = optimization.create_optimizer(
        self.config.learning_rate, self.config.num_train_steps,
        self.config.num_warmup_steps, self.config.weight_decay_rate,
        self.config.adam_epsilon, self.config.lr_decay_power)
    # Variables are made eagerly, not inside the traced step.
    self.model(pretrain_fixtures.make_features(
        1, args.seq_len, self.config.max_predictions_per_seq, args.vocab_size),
               training=False)
    replica_step = train_step_lib.ReplicaTrainStep(
        self._loss, lambda: self.model.trainable_variables, self.optimizer,
        self.config.clip_norm, jit_compile=args.jit)
    self.step = tf.function(lambda features: replica_step(features)[0])

  def _loss(self, features):
    out = self.model(features, training=True, step=self.optimizer.iterations)
    return out["total_loss"], out["total_loss"]

  def run(self, batches, steps):
    """Runs `steps` train steps; returns (wall, process CPU) seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    loss = None
    for i in range(steps):
      loss = self.step(batches[i % len(batches)])
    loss.numpy()  # waits for the device
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None):
  args = parse_args(argv)
  if args.threads:
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
  if args.mixed_precision != "float32":
    tf_keras.mixed_precision.set_global_policy(
        "mixed_" + args.mixed_precision)
  probe = configure.PretrainingConfig(
      "bench", "/nonexistent", model_size=args.model_size,
      vocab_size=args.vocab_size, max_seq_length=args.seq_len)
  num_predictions = probe.max_predictions_per_seq
  batches = [pretrain_fixtures.make_features(
      args.batch_size, args.seq_len, num_predictions, args.vocab_size,
      seed=i) for i in range(2)]
  print("%s, batch %d, seq %d, %d predictions, vocab %d, %s, jit %s, %s" % (
      args.model_size, args.batch_size, args.seq_len, num_predictions,
      args.vocab_size, args.mixed_precision, args.jit,
      ", ".join(d.name for d in tf.config.list_logical_devices())))

  runners = []
  for mode in args.modes:
    start = time.perf_counter()
    runner = Runner(mode, args)
    runner.run(batches, 1 + args.warmup_steps)
    runners.append(runner)
    print("  %-8s built, compiled and warmed up in %.1f s" %
          (mode, time.perf_counter() - start))

  best = {mode: float("inf") for mode in args.modes}
  best_cpu = dict(best)
  for _ in range(args.rounds):
    for runner in runners:
      wall, cpu = runner.run(batches, args.steps)
      best[runner.mode] = min(best[runner.mode], wall / args.steps)
      best_cpu[runner.mode] = min(best_cpu[runner.mode], cpu / args.steps)

  # CPU seconds (all threads of this process) are the steadier figure when
  # other jobs share the machine; on an accelerator read the wall column.
  print("%-8s %10s %10s %9s %12s %9s" % ("mode", "s/step", "seq/s",
                                         "vs mlm", "cpu s/step", "vs mlm"))
  for mode in args.modes:
    print("%-8s %10.4f %10.1f %9s %12.4f %9s" % (
        mode, best[mode], args.batch_size / best[mode],
        _overhead(best, mode), best_cpu[mode], _overhead(best_cpu, mode)))
  return 0


def _overhead(seconds, mode):
  """Percent more time than mode "mlm", or "-" when mlm was not run."""
  if "mlm" not in seconds:
    return "-"
  return "%+.1f%%" % (100.0 * (seconds[mode] / seconds["mlm"] - 1.0))


if __name__ == "__main__":
  run_main(main)
