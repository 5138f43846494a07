"""Process-wide settings of a run, made once by each entry script.

TensorFlow and tf_keras keep a dtype policy, random seeds and the kind of
random generator dropout uses per process. Entry scripts (run_pretraining.py,
run_finetuning.py, bench/) set them here, before any model is built; the
classes that build models only check them.
"""

import tf_keras

from util import distribution


def set_up_process(mixed_precision, seed, checkpointed_dropout=False):
  """Sets the process-wide state a run depends on.

  Args:
    mixed_precision: "float32", "bfloat16" or "float16": the tf_keras dtype
      policy (float32, mixed_bfloat16, mixed_float16).
    seed: seeds Python's `random`, NumPy and TensorFlow, so that initial
      weights and dropout repeat.
    checkpointed_dropout: dropout draws from `tf.random.Generator` state,
      which a checkpoint can save, so that a resumed pre-training run
      continues the same dropout stream (`pretrain.checkpointing`).
  """
  distribution.configure_mixed_precision(mixed_precision)
  tf_keras.utils.set_random_seed(seed)
  if checkpointed_dropout:
    tf_keras.backend.experimental.enable_tf_random_generator()


def check_set_up(mixed_precision, checkpointed_dropout=False):
  """Raises RuntimeError unless `set_up_process` made these settings."""
  expected = distribution.dtype_policy_name(mixed_precision)
  actual = tf_keras.mixed_precision.global_policy().name
  enabled = tf_keras.backend.experimental.is_tf_random_generator_enabled()
  if actual != expected or (checkpointed_dropout and not enabled):
    raise RuntimeError(
        "process not set up for this config (dtype policy %s, expected %s; "
        "checkpointed dropout %s): call util.process_setup.set_up_process "
        "before building the trainer." % (actual, expected, enabled))
