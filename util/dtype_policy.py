"""hparam `mixed_precision: "auto"`: the compute dtype the hardware runs best.

"auto" picks "bfloat16" (tf_keras' mixed_bfloat16 policy) where the
matmuls have native bfloat16: TPUs, NVIDIA GPUs of compute capability 8.0
or more (Ampere and later), and CPUs with AVX512_BF16 or AMX-BF16
(read from /proc/cpuinfo's flags on Linux; elsewhere the CPU counts as
having none). Everywhere else it picks "float32". `choose` decides from
the facts alone (testable without the hardware); `probe` gathers them;
`resolve` gives what "auto" resolved to, once, before the process is set
up (util/process_setup.py); the entry script builds its config with it
(configure.py `resolve_precision`).
"""

import collections
import platform

# CPU flags (Linux /proc/cpuinfo) of native bfloat16 matmuls.
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")
# The first NVIDIA compute capability with bfloat16 tensor cores (A100).
BF16_GPU_CAPABILITY = (8, 0)

Facts = collections.namedtuple("Facts", "cpu_flags gpu_capabilities tpu system")
Facts.__doc__ = """What `choose` decides from.

  cpu_flags: the CPU's feature flags (a set of str), or None when unknown
    (not Linux).
  gpu_capabilities: one (major, minor) compute capability per visible GPU;
    None for a GPU that reports none.
  tpu: whether the run uses TPUs (strategy "tpu").
  system: the OS name (platform.system()), named in the reason.
"""
Choice = collections.namedtuple("Choice", "mixed_precision reason")


def _capability(capability):
  return "%d.%d" % tuple(capability)


def choose(facts):
  """The `mixed_precision` "auto" stands for, and why.

  Args:
    facts: a `Facts`.
  Returns:
    `Choice("bfloat16" or "float32", reason)`: the reason is a short phrase
    for the start-up line, e.g. "CPU has no avx512_bf16/amx_bf16".
  """
  if facts.tpu:
    return Choice("bfloat16", "TPU: native bfloat16")
  gpus = list(facts.gpu_capabilities or ())
  if gpus:
    if any(c is None for c in gpus):
      return Choice("float32", "a GPU reports no compute capability")
    lowest = min(tuple(c) for c in gpus)
    if lowest >= BF16_GPU_CAPABILITY:
      return Choice("bfloat16", "GPU compute capability %s >= %s" % (
          _capability(lowest), _capability(BF16_GPU_CAPABILITY)))
    return Choice("float32", "GPU compute capability %s < %s: no native "
                  "bfloat16" % (_capability(lowest),
                                _capability(BF16_GPU_CAPABILITY)))
  if facts.cpu_flags is None:
    return Choice("float32", "CPU bfloat16 support is only detected on "
                  "Linux (/proc/cpuinfo), not on %s" % facts.system)
  found = [flag for flag in BF16_CPU_FLAGS if flag in facts.cpu_flags]
  if found:
    return Choice("bfloat16", "CPU has %s" % "+".join(found))
  return Choice("float32", "CPU has no %s" % "/".join(BF16_CPU_FLAGS))


def cpu_flags(cpuinfo="/proc/cpuinfo"):
  """The first processor's flags in `cpuinfo` (a set), or None if unread."""
  try:
    with open(cpuinfo) as f:
      for line in f:
        key, _, value = line.partition(":")
        if key.strip() == "flags":
          return set(value.split())
  except OSError:
    return None
  return set()


def probe(strategy):
  """The `Facts` of this machine for a run with hparam `strategy`.

  Lists the GPUs without initialising TensorFlow's devices, so it may run
  before the strategy is set up.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  system = platform.system()
  capabilities = []
  for gpu in tf.config.list_physical_devices("GPU"):
    details = tf.config.experimental.get_device_details(gpu)
    capabilities.append(details.get("compute_capability"))
  return Facts(cpu_flags() if system == "Linux" else None, capabilities,
               strategy == "tpu", system)


def resolve(mixed_precision, strategy, log=print, facts=None):
  """What `mixed_precision` "auto" stands for on this machine.

  Args:
    mixed_precision: the hparam's value; anything but "auto" is left alone.
    strategy: the hparam `strategy` (a TPU run picks bfloat16).
    log: gets "mixed_precision auto -> <dtype> (<reason>)" when resolved.
    facts: the `Facts` to decide from (default: `probe(strategy)`), for
      tests.
  Returns:
    None for a value other than "auto"; else {"resolved", "reason"}: the
    `mixed_precision_auto` a config is built with (configure.py), which
    then holds the resolved value and saves both in config.json.
  """
  if mixed_precision != "auto":
    return None
  choice = choose(facts or probe(strategy))
  log("mixed_precision auto -> %s (%s)" % choice)
  return dict(resolved=choice.mixed_precision, reason=choice.reason)
