"""Shared pieces of the step benchmarks: configs, compiled steps, timing, RAM.

A `StepRunner` is one model's full training step (forward, backward, AdamW
with global-norm clipping, through `training.train_step.ReplicaTrainStep`, the
step run_pretraining.py takes; `jit` compiles its forward/backward pass with
XLA). `time_interleaved` times several runners in rounds (A K steps, B K
steps, ..., repeated) so that load drifting over the run hits all alike.
"""

import resource
import time

import tensorflow as tf
import tf_keras

import configure
import configure_specs
from bench import batches as batches_lib
from bench import peer as peer_lib
from model import builders
from pretrain import flops as flops_lib
from training import optimization
from model import samplers
from training import train_step as train_step_lib
from util import distribution
from util import xla_fusion
from util.cli import require_at_least
from util.errors import UserError

# --size values: ELECTRA-Small and -Base (docs/method.md §14), and the tiny
# transformer of the tests (CI runs of the benchmarks).
SIZES = ("tiny", "small", "base")
TINY_MODEL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64)
# --dtype -> hparam mixed_precision.
DTYPES = {"float32": "float32", "mixed_bfloat16": "bfloat16",
          "mixed_float16": "float16"}


def parse_modes(text, allow_empty=False):
  """--modes "mlm,hp_loss" -> ["mlm", "hp_loss"]; a UserError for an unknown,
  repeated or (unless `allow_empty`) missing mode."""
  modes = [m.strip() for m in text.split(",") if m.strip()]
  for mode in modes:
    if mode not in samplers.NAMES:
      raise UserError("--modes: unknown mode %r; choose from %s." %
                      (mode, ", ".join(samplers.NAMES)))
  if (not modes and not allow_empty) or len(set(modes)) != len(modes):
    raise UserError("--modes must list distinct modes, got %r." % text)
  return modes


def add_step_flags(parser, dtype="float32"):
  """Adds the flags of one step configuration that the step benchmarks
  share: --size, --batch-size, --seq-len, --vocab-size, --dtype (default
  `dtype`) and --fuse-elementwise. `check_step_flags` checks them."""
  parser.add_argument("--size", default="small", choices=SIZES)
  parser.add_argument("--batch-size", type=int, default=16)
  parser.add_argument("--seq-len", type=int, default=128)
  parser.add_argument("--vocab-size", type=int, default=30522)
  parser.add_argument("--dtype", default=dtype, choices=sorted(DTYPES))
  parser.add_argument("--fuse-elementwise", default="auto",
                      choices=("auto", "on", "off"),
                      help="hparam fuse_elementwise for the whole process: "
                      "XLA fuses elementwise ops of every model built, the "
                      "peer too (auto: on for bfloat16 on CPU)")


def check_step_flags(args):
  """A UserError unless `add_step_flags`' sizes make a batch."""
  require_at_least(args, ("batch_size", "seq_len"))
  if args.vocab_size <= batches_lib.FIRST_TOKEN_ID:
    raise UserError("--vocab-size must be > %d." % batches_lib.FIRST_TOKEN_ID)


def set_threads(threads):
  """TF's intra- and inter-op threads (0 keeps TF's default)."""
  if threads:
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)


def set_fusion(setting, mixed_precision):
  """Applies hparam `fuse_elementwise` (util/xla_fusion.py) to this process,
  before anything is built: it holds for every model timed in it, the peer
  included. Returns "on" or "off" and the reason."""
  on, reason = xla_fusion.apply(setting, mixed_precision,
                                xla_fusion.device_of("default"))
  return "on" if on else "off", reason


def make_config(size, sampling, batch_size, seq_len, vocab_size, dtype,
                jit=False, hparams=None):
  """The PretrainingConfig of one benchmark configuration.

  Args:
    size: one of SIZES. sampling: "mlm", "hp_loss", "hp_dist" or "uniform".
    batch_size, seq_len, vocab_size: the step's shapes.
    dtype: a key of DTYPES. jit: XLA. hparams: extra hparams (dict).
  """
  values = dict(hparams or {})
  if size == "tiny":
    values.setdefault("model_hparam_overrides", dict(TINY_MODEL))
    values.setdefault("embedding_size", 16)
  values.update(model_size="base" if size == "base" else "small",
                sampling=sampling, vocab_size=vocab_size,
                max_seq_length=seq_len, train_batch_size=batch_size,
                mixed_precision=DTYPES[dtype], jit_compile=jit)
  return configure.PretrainingConfig("bench", "/nonexistent", **values)


def set_dtype(dtype):
  """Sets the Keras policy of `dtype` (a DTYPES key); call before building."""
  distribution.configure_mixed_precision(DTYPES[dtype])


def make_batches(config, count=2):
  """`count` random batches of `config`'s shapes (bench/batches.py)."""
  return [batches_lib.make_features(
      config.train_batch_size, config.max_seq_length,
      config.max_predictions_per_seq, config.vocab_size, seed=i)
          for i in range(count)]


def _optimizer(config):
  optimizer = optimization.create_optimizer(
      config.learning_rate, config.num_train_steps, config.num_warmup_steps,
      config.weight_decay_rate, config.adam_epsilon, config.lr_decay_power)
  if config.mixed_precision == "float16":
    optimizer = tf_keras.mixed_precision.LossScaleOptimizer(
        optimizer, initial_scale=config.initial_loss_scale)
  return optimizer


class StepRunner(object):
  """One model's compiled train step.

  Args:
    name: row label. config: its PretrainingConfig (shapes, clip, jit).
    build: optimizer -> (loss_fn, model): loss_fn maps a batch dict to a
      float32 scalar loss; the model's variables exist once `loss_fn` has
      run eagerly on one example.
    make_step: optional (model, optimizer) -> a `ReplicaTrainStep` whose
      outputs are the loss (ours: run_pretraining.py's own step); default:
      the shared step over `loss_fn`.
  """

  def __init__(self, name, config, build, make_step=None):
    self.name, self.config = name, config
    self.optimizer = _optimizer(config)
    loss_fn, self.model = build(self.optimizer)
    one = batches_lib.make_features(1, config.max_seq_length,
                                    config.max_predictions_per_seq,
                                    config.vocab_size)
    loss_fn(one)  # variables are made eagerly, not inside the traced step
    if make_step is None:
      replica_step = train_step_lib.ReplicaTrainStep(
          lambda features: (loss_fn(features),) * 2,
          lambda: self.model.trainable_variables, self.optimizer,
          config.clip_norm, jit_compile=config.jit_compile)
    else:
      replica_step = make_step(self.model, self.optimizer)
    # No autograph: as in the trainers (docs/performance.md, "Start-up").
    self.step = tf.function(lambda features: replica_step(features)[0],
                            autograph=False)

  def run(self, batches, steps):
    """Runs `steps` train steps; returns (wall, process CPU) seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    loss = None
    for i in range(steps):
      loss = self.step(batches[i % len(batches)])
    loss.numpy()  # waits for the device
    return time.perf_counter() - wall, time.process_time() - cpu


def step_flops(config):
  """pretrain/flops.py's FLOPs of one global batch of a
  `PretrainingConfig`, from its specs as the trainer counts them."""
  specs = configure_specs.pretraining_specs(config)
  return flops_lib.pretraining_step_flops(specs.network, specs.objective,
                                          specs.masking,
                                          specs.data.train_batch_size)


def ours(config):
  """Our ElectraPretrainer's runner, named by its sampling mode."""
  specs = configure_specs.pretraining_specs(config)

  def build(optimizer):
    model = builders.build_pretrainer(specs.network, specs.objective)

    def loss_fn(features):
      return model(features, training=True,
                   step=optimizer.iterations)["total_loss"]
    return loss_fn, model

  def make_step(model, optimizer):
    return train_step_lib.pretraining_train_step(
        model, optimizer, optimizer.iterations,
        lambda out, unused_features: out["total_loss"],
        clip_norm=config.clip_norm, jit_compile=config.jit_compile,
        accumulation_steps=config.gradient_accumulation_steps)
  return StepRunner(config.sampling, config, build, make_step)


def peer(config):
  """tf-models-official's ElectraPretrainer at `config`'s shapes."""
  def build(unused_optimizer):
    peer_model = peer_lib.PeerModel(config)
    return peer_model.loss, peer_model.model
  return StepRunner("peer", config, build)


def has_gpu():
  return bool(tf.config.list_physical_devices("GPU"))


def reset_device_peak():
  if has_gpu():
    tf.config.experimental.reset_memory_stats("GPU:0")


def device_peak_bytes():
  """Peak bytes allocated on GPU:0 since the last reset; None on CPU."""
  if not has_gpu():
    return None
  return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])


def peak_rss_bytes():
  """This process's peak resident memory (Linux reports kilobytes)."""
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def time_interleaved(runners, batches, rounds, steps):
  """Times `steps` steps of each runner per round, `rounds` rounds.

  Returns {runner.name: dict(wall=[s/step per round], cpu=[...],
  device_peak=bytes or None)}: device_peak is the most GPU memory in use
  during that runner's steps (the other runners' weights included).
  """
  times = {r.name: dict(wall=[], cpu=[], device_peak=None) for r in runners}
  for _ in range(rounds):
    for runner in runners:
      reset_device_peak()
      wall, cpu = runner.run(batches, steps)
      entry = times[runner.name]
      entry["wall"].append(wall / steps)
      entry["cpu"].append(cpu / steps)
      peak = device_peak_bytes()
      if peak is not None:
        entry["device_peak"] = max(entry["device_peak"] or 0, peak)
  return times


def find_max_batch(runner, start, limit, seconds):
  """The largest batch (doubling from `start`) whose step runs.

  Each candidate runs two steps on fresh random batches (a new shape:
  retraced and, under XLA, recompiled). Stops at an out-of-memory error,
  at `limit`, or when `seconds` have passed.

  Returns (largest batch that ran or None, why the search stopped: "oom",
  "limit" or "time cap").
  """
  deadline = time.perf_counter() + seconds
  best, batch = None, start
  while True:
    if batch > limit:
      return best, "limit"
    if time.perf_counter() > deadline:
      return best, "time cap"
    config = runner.config
    features = batches_lib.make_features(
        batch, config.max_seq_length, config.max_predictions_per_seq,
        config.vocab_size, seed=batch)
    try:
      runner.run([features], 2)
    except (tf.errors.ResourceExhaustedError, tf.errors.InternalError) as e:
      # XLA can report a failed allocation as an internal error.
      if not isinstance(e, tf.errors.ResourceExhaustedError) and not any(
          m in str(e) for m in ("RESOURCE_EXHAUSTED", "out of memory")):
        raise
      return best, "oom"
    best, batch = batch, batch * 2
