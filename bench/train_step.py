"""Times one pre-training step per sampling mode at ELECTRA-Small shapes.

A full step: forward (generator, sampler, discriminator, losses), backward,
AdamW with global-norm clipping, in one `tf.function`: the training step of
run_pretraining.py (`training.train_step.ReplicaTrainStep`; `--jit` compiles
its forward/backward pass with XLA, as `jit_compile` does; bench/harness.py).
Random batches come from bench/batches.py. All modes are built and warmed up
first, then timed in interleaved rounds (mode A K steps, mode B K steps, ...,
repeated), and each mode keeps its fastest round, so load drifting over the
run hits all modes alike.

Usage:
  python bench/train_step.py --batch-size 8 --steps 5
  python bench/train_step.py --batch-size 128 --modes mlm,hp_loss --jit

Prints seconds/step, sequences/s and the overhead of each mode relative to
"mlm" (the issue's target: HP-Loss and HP-Dist at most +10%).
"""

import argparse
import time

from util.cli import tensorflow_startup  # pylint: disable=g-import-not-at-top

tensorflow_startup()

import tensorflow as tf  # pylint: disable=g-import-not-at-top

import configure
from bench import batches as batches_lib
from bench import harness
from model import transformer_hparams
from util import distribution
from util import hparams as hparams_lib
from util.cli import require_at_least
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
                      choices=sorted(transformer_hparams.MODEL_SIZES))
  parser.add_argument("--mixed-precision", default="float32",
                      choices=("float32", "bfloat16", "float16"))
  parser.add_argument("--fuse-elementwise", default="auto",
                      choices=("auto", "on", "off"),
                      help="hparam fuse_elementwise: XLA fuses elementwise "
                      "ops (auto: on for bfloat16 on CPU)")
  parser.add_argument("--threads", type=int, default=0,
                      help="TF intra- and inter-op threads (0: TF's "
                      "default); 1 steadies the CPU figures on a shared "
                      "machine")
  parser.add_argument("--hparams", default=None,
                      help="extra PretrainingConfig hparams (JSON)")
  args = parser.parse_args(argv)
  args.modes = harness.parse_modes(args.modes)
  if args.threads < 0 or args.warmup_steps < 0:
    raise UserError("--threads and --warmup-steps must be >= 0.")
  require_at_least(args, ("batch_size", "steps", "rounds", "seq_len",
                          "vocab_size"))
  if args.vocab_size <= batches_lib.FIRST_TOKEN_ID:
    raise UserError("--vocab-size must be > %d." %
                    batches_lib.FIRST_TOKEN_ID)
  return args


def _config(args, mode):
  hparams = hparams_lib.load_hparams(args.hparams)
  hparams.update(model_size=args.model_size, sampling=mode,
                 vocab_size=args.vocab_size, max_seq_length=args.seq_len,
                 train_batch_size=args.batch_size,
                 mixed_precision=args.mixed_precision, jit_compile=args.jit)
  return configure.PretrainingConfig("bench", "/nonexistent", **hparams)


def main(argv=None):
  args = parse_args(argv)
  harness.set_threads(args.threads)
  distribution.configure_mixed_precision(args.mixed_precision)
  fuse, reason = harness.set_fusion(args.fuse_elementwise,
                                    args.mixed_precision)
  probe = configure.PretrainingConfig(
      "bench", "/nonexistent", model_size=args.model_size,
      vocab_size=args.vocab_size, max_seq_length=args.seq_len)
  num_predictions = probe.max_predictions_per_seq
  batches = [batches_lib.make_features(
      args.batch_size, args.seq_len, num_predictions, args.vocab_size,
      seed=i) for i in range(2)]
  print("%s, batch %d, seq %d, %d predictions, vocab %d, %s, jit %s, "
        "fuse_elementwise %s (%s), %s" % (
      args.model_size, args.batch_size, args.seq_len, num_predictions,
      args.vocab_size, args.mixed_precision, args.jit, fuse, reason,
      ", ".join(d.name for d in tf.config.list_logical_devices())))

  runners = []
  for mode in args.modes:
    start = time.perf_counter()
    runner = harness.ours(_config(args, mode))
    runner.run(batches, 1 + args.warmup_steps)
    runners.append(runner)
    print("  %-8s built, compiled and warmed up in %.1f s" %
          (mode, time.perf_counter() - start))

  times = harness.time_interleaved(runners, batches, args.rounds, args.steps)
  best = {mode: min(times[mode]["wall"]) for mode in args.modes}
  best_cpu = {mode: min(times[mode]["cpu"]) for mode in args.modes}

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
