"""The peak FLOP/s that MFU divides by: given, published, or measured.

In order of preference (`peak_flops_per_second`):
  1. `peak_tflops` when the user gives it (hparam);
  2. on an NVIDIA GPU listed in `PUBLISHED_TFLOPS`, NVIDIA's published dense
     (no sparsity) peak for the compute dtype: float32 matmuls count at the
     TF32 peak when TensorFlow runs them in TF32 (its default on Ampere and
     later);
  3. a matmul probe: chained square matmuls, best of a few repeats, a few
     seconds. Its result is cached per machine in
     `$XDG_CACHE_HOME/electra-hp/peak_flops.json` (default
     `~/.cache/electra-hp/`), keyed by device, TensorFlow version and dtype;
     delete the file to measure again.

A probe is a practical ceiling, not the hardware's: what TensorFlow's own
matmul reaches at these sizes. It measures lower when other jobs share the
machine; a run whose step then achieves more raises the cached figure to
its own rate (`raise_cached_probe_peak`), so MFU never reads above 100%.

`measure_read_bandwidth` is the memory counterpart, for benchmarks that
bound a step's time by the bytes it must move (not cached, not used by MFU).
"""

import json
import os
import platform
import re
import time

import tensorflow as tf

from util import io_utils

CACHE_FILE = "peak_flops.json"
PROBE = "matmul probe"  # in the source phrase of a probed peak

# NVIDIA's published dense peaks, TFLOP/s: (name pattern, {dtype: peak}).
# "tf32" is the tensor-core rate for float32 matmuls in TF32 mode. The first
# pattern that matches the device name wins, so variants come first.
PUBLISHED_TFLOPS = (
    (r"H200 NVL", dict(float32=60.0, tf32=417.5, bfloat16=835.5,
                       float16=835.5)),
    (r"H200", dict(float32=67.0, tf32=494.7, bfloat16=989.4, float16=989.4)),
    (r"H100 (PCIE|NVL)", dict(float32=51.0, tf32=378.0, bfloat16=756.0,
                              float16=756.0)),
    (r"H100", dict(float32=67.0, tf32=494.7, bfloat16=989.4, float16=989.4)),
    (r"A100", dict(float32=19.5, tf32=156.0, bfloat16=312.0, float16=312.0)),
    (r"\bL4\b", dict(float32=30.3, tf32=60.0, bfloat16=121.0, float16=121.0)),
    (r"\bT4\b", dict(float32=8.1, float16=65.0)),
    (r"V100", dict(float32=15.7, float16=125.0)),
)

# Probe shapes: (matrix size, chained matmuls per timing, repeats).
_CPU_PROBE = ((1024, 4, 5), (2048, 2, 3))
_GPU_PROBE = ((4096, 8, 5), (8192, 8, 3))


def gpu_name():
  """The first GPU's name as the driver reports it, or None without one."""
  gpus = tf.config.list_physical_devices("GPU")
  if not gpus:
    return None
  details = tf.config.experimental.get_device_details(gpus[0])
  return details.get("device_name") or "GPU"


def cpu_name():
  """CPU model and the cores this process may use, e.g. 'Xeon x2'."""
  model = platform.processor() or platform.machine()
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        if line.startswith("model name"):
          model = line.split(":", 1)[1].strip()
          break
  except OSError:
    pass
  cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
           else os.cpu_count() or 1)
  return "%s x%d" % (model, cores)


def published_peak(device_name, dtype, tf32=None):
  """NVIDIA's dense peak in FLOP/s for `device_name` at `dtype`, or None.

  Args:
    device_name: e.g. "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "Tesla T4".
    dtype: "float32", "bfloat16" or "float16".
    tf32: float32 matmuls run as TF32 (None: ask TensorFlow).
  """
  if not device_name:
    return None
  if tf32 is None:
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
  for pattern, peaks in PUBLISHED_TFLOPS:
    if re.search(pattern, device_name.upper()):
      key = "tf32" if dtype == "float32" and tf32 and "tf32" in peaks else dtype
      return peaks[key] * 1e12 if key in peaks else None
  return None


def measure_matmul_peak(dtype="float32", shapes=None):
  """Best FLOP/s of chained square matmuls at `dtype` on the default device.

  Args:
    dtype: the matmul dtype name.
    shapes: ((size, chain, repeats), ...); default a CPU or GPU set.
  Returns:
    FLOP/s (2 n^3 per n x n matmul), the best timing over all shapes.
  """
  if shapes is None:
    shapes = _GPU_PROBE if tf.config.list_physical_devices("GPU") else (
        _CPU_PROBE)
  best = 0.0
  for size, chain, repeats in shapes:
    rng = tf.random.Generator.from_seed(size)
    # Scaled so that repeated products neither overflow nor vanish.
    a = tf.cast(rng.normal([size, size]), dtype)
    b = tf.cast(rng.normal([size, size]) / size ** 0.5, dtype)

    @tf.function
    def product(x, b=b, chain=chain):
      for _ in range(chain):  # dependent, so none can be folded away
        x = tf.matmul(x, b)
      return tf.reduce_sum(x[:1, :1])

    product(a).numpy()  # traces and warms up
    for _ in range(repeats):
      start = time.perf_counter()
      product(a).numpy()
      seconds = time.perf_counter() - start
      best = max(best, 2.0 * size ** 3 * chain / seconds)
  return best


def measure_read_bandwidth(megabytes=256, repeats=5):
  """Best bytes/s at which TensorFlow reads memory on the default device.

  Sums a float32 tensor of `megabytes` MiB, `repeats` times, and keeps the
  fastest: a read-only pass, which runs faster than any pass that also
  writes. Bytes moved / this rate bounds from below how long any op that
  moves them takes (bench/matmul_floor.py's update floor).
  """
  if megabytes <= 0 or repeats < 1:
    raise ValueError("megabytes must be > 0 and repeats >= 1")
  values = tf.ones([int(megabytes * 2**20) // 4], tf.float32)
  total = tf.function(tf.reduce_sum)
  total(values).numpy()  # traces and warms up
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    total(values).numpy()
    best = min(best, time.perf_counter() - start)
  return values.shape.num_elements() * 4 / best


# Cache paths already reported unwritable in this process (warned once).
_UNWRITABLE = set()


def default_cache_path():
  root = os.environ.get("XDG_CACHE_HOME") or os.path.join(
      os.path.expanduser("~"), ".cache")
  return os.path.join(root, "electra-hp", CACHE_FILE)


def cache_key(device, dtype):
  return "%s | tf %s | %s" % (device, tf.__version__, dtype)


def _read_cache(path):
  try:
    with open(path) as f:
      cache = json.load(f)
    return cache if isinstance(cache, dict) else {}
  except (OSError, ValueError):
    return {}  # missing or damaged: measure again, rewrite it


def cached_probe_peak(dtype, device, cache_path=None, measure=None):
  """The probe's FLOP/s for (device, TF version, dtype), measured once.

  Args:
    dtype: matmul dtype name.
    device: the device's description, part of the cache key.
    cache_path: the JSON cache (default `default_cache_path()`).
    measure: dtype -> FLOP/s (default `measure_matmul_peak`; tests).
  Returns:
    (flops_per_second, was_cached).
  """
  path = cache_path or default_cache_path()
  key = cache_key(device, dtype)
  cache = _read_cache(path)
  entry = cache.get(key)
  if isinstance(entry, dict) and entry.get("flops_per_second", 0) > 0:
    return float(entry["flops_per_second"]), True
  flops = (measure or measure_matmul_peak)(dtype)
  _store(path, cache, key, flops)
  return flops, False


def _store(path, cache, key, flops, **details):
  """Writes `cache` with `key` set to `flops` (and `details`), now."""
  cache[key] = dict(flops_per_second=float(flops),
                    measured=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                           time.gmtime()), **details)
  try:
    io_utils.write_json_atomic(path, cache)
  except (OSError, tf.errors.OpError) as e:
    # A read-only or missing home: measured again next time; never fatal.
    if path not in _UNWRITABLE:
      _UNWRITABLE.add(path)
      print("warning: the peak FLOP/s cache %s cannot be written (%s); "
            "running without it." % (
                path, getattr(e, "message", None) or e), flush=True)


def raise_cached_probe_peak(dtype, device, flops, cache_path=None):
  """Raises the cached probe of (device, TF version, dtype) to `flops`.

  A run that achieves more than the probe proves the probe low (it was
  measured while other jobs shared the machine): its rate is a lower bound
  of the ceiling, so the cache keeps the larger of the two.

  Args:
    dtype, device, cache_path: as `cached_probe_peak`.
    flops: the FLOP/s one replica achieved.
  """
  path = cache_path or default_cache_path()
  key = cache_key(device, dtype)
  cache = _read_cache(path)
  entry = cache.get(key)
  if isinstance(entry, dict) and entry.get("flops_per_second", 0) >= flops:
    return
  _store(path, cache, key, flops,
         source="a run's achieved rate, above the probe")


def peak_flops_per_second(peak_tflops=0.0, mixed_precision="float32",
                          cache_path=None, measure=None):
  """Peak FLOP/s of one replica's device for MFU, and where it came from.

  Args:
    peak_tflops: the user's figure (hparam `peak_tflops`); > 0 wins.
    mixed_precision: hparam `mixed_precision` ("float32", "bfloat16",
      "float16"): the dtype whose peak counts.
    cache_path, measure: see `cached_probe_peak`.
  Returns:
    (flops_per_second, source): source is a short phrase for logs, e.g.
    "peak_tflops", "published NVIDIA H200 bfloat16", "matmul probe, cached".
  """
  if peak_tflops and peak_tflops > 0:
    return float(peak_tflops) * 1e12, "peak_tflops"
  dtype = mixed_precision  # the compute dtype: matmuls run in it
  gpu = gpu_name()
  published = published_peak(gpu, dtype)
  if published:
    return published, "published %s %s" % (gpu, dtype)
  flops, cached = cached_probe_peak(dtype, gpu or cpu_name(), cache_path,
                                    measure)
  return flops, "%s %s%s" % (dtype, PROBE, ", cached" if cached else "")


def probe_raiser(source, mixed_precision, num_replicas, cache_path=None):
  """For a peak that came from the probe (`source` as returned by
  `peak_flops_per_second`), a function of the FLOP/s all `num_replicas`
  achieved that raises the cached probe to one replica's share; None for a
  given or published peak, which a run does not revise."""
  if PROBE not in source:
    return None
  device = gpu_name() or cpu_name()
  return lambda flops: raise_cached_probe_peak(
      mixed_precision, device, flops / num_replicas, cache_path)
