"""hparam `fuse_elementwise`: XLA fuses the elementwise ops, matmuls stay.

TensorFlow's CPU kernels run each elementwise op (GELU's pieces, dropout's
compare and select, layer norm, casts, the losses' float32 arithmetic) as
its own pass over memory, and under bfloat16 those passes cost more than
the matmuls, which oneDNN runs on the CPU's bfloat16 units. XLA's
auto-clustering, restricted to fusible ops (`--tf_xla_ops_to_cluster=
FUSIBLE`), compiles runs of elementwise ops into single loops and leaves
matmuls and einsums to the oneDNN kernels. Compiling the whole step with
XLA (`jit_compile`) is slower on CPU: XLA's own CPU dot is not oneDNN's.

Measured on a 2-core Xeon with AMX, ELECTRA-Small, batch 16, seq 128
(bench/compare_peer.py, see the README): in mixed_bfloat16 the hp_loss step
goes from 1.21 to 0.95 s, mlm from 1.08 to 0.85 s; in float32 it gains
nothing. So "auto" turns it on for bfloat16 on a CPU only (GPUs fuse
elementwise work through their own XLA/cuDNN paths; TPUs compile with XLA
anyway).

Two process-wide TensorFlow settings make it: TF_XLA_FLAGS
(`ENV_FLAGS`: auto-clustering may run on CPU, and clusters only fusible
ops), read when TensorFlow starts, which `prepare_environment` sets in
every entry script's start-up (util/cli.py) and which does nothing alone;
and the auto-clustering switch `tf.config.optimizer.set_jit`, which
`resolve` turns on, before any model is built, when the run asks for it.
A user's TF_XLA_FLAGS that already names either flag is left as it is.
"""

import contextlib
import os

SETTINGS = ("auto", "on", "off")
ENV_FLAGS = ("--tf_xla_cpu_global_jit", "--tf_xla_ops_to_cluster=FUSIBLE")


def prepare_environment(environ=None):
  """Adds ENV_FLAGS to TF_XLA_FLAGS, unless the user's value names either
  flag; call before TensorFlow starts. Alone it changes nothing: CPU
  clustering starts only when `enable` turns auto-clustering on."""
  environ = os.environ if environ is None else environ
  current = environ.get("TF_XLA_FLAGS", "")
  if any(flag.split("=")[0] in current for flag in ENV_FLAGS):
    return
  environ["TF_XLA_FLAGS"] = " ".join([current] * bool(current) +
                                     list(ENV_FLAGS))


def available(environ=None):
  """Whether TF_XLA_FLAGS holds ENV_FLAGS (else `enable` would not fuse on
  CPU, or would cluster every op)."""
  current = (os.environ if environ is None else environ).get("TF_XLA_FLAGS",
                                                             "")
  return all(flag in current.split() for flag in ENV_FLAGS)


def choose(setting, mixed_precision, device):
  """(on, reason) for `setting` ("auto", "on", "off").

  Args:
    setting: the hparam's value.
    mixed_precision: the resolved compute dtype ("float32", "bfloat16",
      "float16").
    device: "cpu", "gpu" or "tpu": what the run computes on.
  """
  if setting not in SETTINGS:
    raise ValueError("fuse_elementwise %r: one of %s" % (setting, SETTINGS))
  if setting != "auto":
    return setting == "on", "set by hparams"
  if device != "cpu":
    return False, "computes on %s, not on CPU" % device.upper()
  if mixed_precision != "bfloat16":
    return False, "%s on CPU: no gain measured" % mixed_precision
  return True, "bfloat16 on CPU"


def device_of(strategy):
  """"tpu", "gpu" or "cpu" for a run with hparam `strategy` on this host."""
  if strategy == "tpu":
    return "tpu"
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return "gpu" if tf.config.list_physical_devices("GPU") else "cpu"


_AUTO_CLUSTERING = "autoclustering"


def is_on():
  """Whether this process runs with TensorFlow's auto-clustering on (as
  `enable` leaves it): ops written as plain elementwise ops are then fused
  by XLA with their neighbours (model/layers/dropout.py and
  `outside_clusters` read this)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.config.optimizer.get_jit() == _AUTO_CLUSTERING


def outside_clusters():
  """A context in which the ops built stay out of auto-clustering.

  For reductions that TensorFlow's CPU kernels run faster than XLA's:
  along a long row (a max over [16, 19, 30522] float32: 2.8 against 11.0
  ms) or over the leading axes (a bias gradient: 1.7 against 4.2 ms;
  bench/cpu_kernels.py). A no-op when executing eagerly (Keras builds a
  model by calling it once) and when auto-clustering is off.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if tf.executing_eagerly() or not is_on():
    return contextlib.nullcontext()
  return tf.xla.experimental.jit_scope(compile_ops=False)


def enable():
  """Turns TensorFlow's auto-clustering on for this process; returns False
  (and changes nothing) when TF_XLA_FLAGS lacks ENV_FLAGS."""
  if not available():
    return False
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.config.optimizer.set_jit(_AUTO_CLUSTERING)
  return True


def apply(setting, mixed_precision, device):
  """`choose`, then `enable` when on: (on, reason) of what this process now
  does. On but not applicable (TF_XLA_FLAGS lacks ENV_FLAGS) is off, with
  that reason."""
  on, reason = choose(setting, mixed_precision, device)
  if on and not enable():
    return False, ("not applied: TF_XLA_FLAGS (%r) lacks %s; start from an "
                   "entry script, or set them before TensorFlow starts" % (
                       os.environ.get("TF_XLA_FLAGS", ""),
                       " ".join(ENV_FLAGS)))
  return on, reason


def resolve(runtime, log=print, device=None):
  """Applies `runtime.fuse_elementwise` to this process; returns whether
  fusion is on. Logs one line when it is on, or off for a bfloat16 run or
  for want of TF_XLA_FLAGS.

  Args:
    runtime: a run's `fuse_elementwise`, resolved `mixed_precision` and
      `strategy` (configure_specs.RuntimeSpec).
    device: "cpu", "gpu" or "tpu" (default: `device_of(runtime.strategy)`),
      for tests.
  """
  setting, mixed_precision = runtime.fuse_elementwise, runtime.mixed_precision
  on, reason = apply(setting, mixed_precision,
                     device or device_of(runtime.strategy))
  if on:
    log("fuse_elementwise %s -> on (%s): XLA fuses elementwise ops, "
        "matmuls stay with oneDNN" % (setting, reason))
  elif mixed_precision == "bfloat16" or setting == "on":
    # Asked for, but not applicable.
    log("fuse_elementwise %s -> off (%s)" % (setting, reason))
  return on
