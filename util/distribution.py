"""tf.distribute strategies and mixed precision, shared by every stage."""

import json
import os

import tensorflow as tf
import tf_keras

from util.errors import UserError


def dtype_policy_name(mixed_precision):
  """The tf_keras policy of hparam `mixed_precision`: "float32",
  "bfloat16" or "float16" -> float32, mixed_bfloat16, mixed_float16."""
  return {"float32": "float32", "bfloat16": "mixed_bfloat16",
          "float16": "mixed_float16"}[mixed_precision]


def configure_mixed_precision(mixed_precision):
  """Sets the global tf_keras dtype policy: "float32", "bfloat16", "float16"."""
  policy = dtype_policy_name(mixed_precision)
  tf_keras.mixed_precision.set_global_policy(policy)
  return policy


def _split_cpu(num_devices):
  cpus = tf.config.list_physical_devices("CPU")
  try:
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration()] * num_devices)
  except RuntimeError as e:
    if len(tf.config.list_logical_devices("CPU")) != num_devices:
      raise UserError("cannot split the CPU into %d logical devices after "
                      "TensorFlow started (%s); set num_cpu_devices before "
                      "any TensorFlow op runs." % (num_devices, e))


def split_cpu_if_asked(runtime):
  """Splits the CPU into `num_cpu_devices` logical devices when the
  strategy of `runtime` (a configure_specs.RuntimeSpec) asks for it
  (testing without GPUs); returns the device names or None. Call before any
  TensorFlow op runs (a repeated call is harmless)."""
  if runtime.num_cpu_devices <= 1 or runtime.strategy not in (
      "mirrored", "multi_worker_mirrored"):
    return None
  if runtime.strategy == "mirrored" and tf.config.list_physical_devices(
      "GPU"):
    return None
  _split_cpu(runtime.num_cpu_devices)
  return ["/cpu:%d" % i for i in range(runtime.num_cpu_devices)]


def get_strategy(runtime):
  """The strategy named by `runtime.strategy` (`runtime`: a
  configure_specs.RuntimeSpec).

  "default": one device. "mirrored": all local GPUs, or, without GPUs and
  with `num_cpu_devices` > 1, the CPU split into that many logical devices
  (for testing). "multi_worker_mirrored": cluster from the TF_CONFIG
  environment variable. "tpu": `tpu_name` / `tpu_zone` / `gcp_project`.
  Every caller uses the strategy the same way (`distribute_datasets_from_
  function`, `strategy.run` in a `tf.function`, `reduce`/`gather`); the TPU
  differs from the others only in its cluster resolver (`tpu_resolver`).
  """
  name = runtime.strategy
  tf_config = check_tf_config(os.environ.get("TF_CONFIG", ""),
                              name == "multi_worker_mirrored")
  if name == "default":
    return tf.distribute.get_strategy()
  if name == "mirrored":
    return tf.distribute.MirroredStrategy(split_cpu_if_asked(runtime))
  if name == "multi_worker_mirrored":
    if tf_config is None:
      raise UserError("strategy 'multi_worker_mirrored' needs the TF_CONFIG "
                      "environment variable (cluster and task).")
    split_cpu_if_asked(runtime)
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "tpu":
    return tf.distribute.TPUStrategy(tpu_resolver(runtime))
  raise UserError("unknown strategy %r." % name)


def check_tf_config(text, multi_worker):
  """The TF_CONFIG environment variable parsed (None when unset or empty);
  a UserError when it is not a JSON object, or, for `multi_worker`, when its
  task is not one of its cluster's (TensorFlow would fail deep inside, or
  run one replica without a word)."""
  if not text.strip():
    return None
  try:
    parsed = json.loads(text)
  except ValueError as e:
    raise UserError("TF_CONFIG is not valid JSON: %s" % e)
  if not isinstance(parsed, dict):
    raise UserError("TF_CONFIG must be a JSON object with \"cluster\" and "
                    "\"task\", got %s; unset it for a run on one machine." %
                    text.strip()[:80])
  if not multi_worker:
    return parsed
  cluster, task = parsed.get("cluster"), parsed.get("task")
  if not (isinstance(cluster, dict) and cluster and all(
      isinstance(hosts, list) and hosts for hosts in cluster.values())):
    raise UserError("TF_CONFIG's \"cluster\" must map each job (e.g. "
                    "\"worker\") to its non-empty list of host:port "
                    "addresses, got %s." % json.dumps(cluster))
  if not isinstance(task, dict) or task.get("type") not in cluster:
    raise UserError("TF_CONFIG's \"task\" must name a job of its cluster "
                    "(%s) as \"type\", got %s." % (
                        ", ".join(sorted(cluster)), json.dumps(task)))
  hosts, index = cluster[task["type"]], task.get("index", 0)
  if (not isinstance(index, int) or isinstance(index, bool) or
      not 0 <= index < len(hosts)):
    raise UserError("TF_CONFIG's task index %s is not one of the %d %s "
                    "tasks of its cluster (0 to %d)." % (
                        json.dumps(index), len(hosts), task["type"],
                        len(hosts) - 1))
  return parsed


def tpu_resolver(runtime):
  """Finds, connects to and initialises the Cloud TPU of `runtime` (a
  configure_specs.RuntimeSpec: its tpu_name, tpu_zone and gcp_project).

  Raises:
    UserError: the TPU named by hparams tpu_name / tpu_zone / gcp_project
      cannot be found or reached.
  """
  try:
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=runtime.tpu_name, zone=runtime.tpu_zone,
        project=runtime.gcp_project)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
  # OSError: the TPU's address is looked up over the network (URLError).
  except (ValueError, OSError, tf.errors.OpError) as e:
    raise UserError("cannot reach the Cloud TPU %r (hparams 'tpu_name', "
                    "'tpu_zone', 'gcp_project'): %s. Check the name with "
                    "`gcloud compute tpus list` and run on a VM that can "
                    "reach it." % (runtime.tpu_name, str(e).splitlines()[0]))
  return resolver
