"""util/cli.tensorflow_startup: what every entry script sets before
TensorFlow is imported, checked in fresh processes."""

import json
import os
import subprocess
import sys

from tests.paths import REPO

PROBE = """
from util.cli import tensorflow_startup
tensorflow_startup()
import json, os, sys
import tensorflow as tf
import tf_keras
print(json.dumps(dict(keras3_loaded="keras" in sys.modules,
                      tf_keras_is_tf_keras=(
                          tf.keras.layers.Dense is tf_keras.layers.Dense),
                      legacy=os.environ["TF_USE_LEGACY_KERAS"])))
"""


def _probe(**env):
  environment = {k: v for k, v in os.environ.items()
                 if k != "TF_USE_LEGACY_KERAS"}
  environment.update(env)
  out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=environment,
                       capture_output=True, text=True, timeout=300, check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])


def test_tf_keras_is_tf_keras_and_keras_3_is_not_loaded():
  assert _probe() == dict(keras3_loaded=False, tf_keras_is_tf_keras=True,
                          legacy="1")


def test_a_users_own_setting_is_kept():
  got = _probe(TF_USE_LEGACY_KERAS="0")
  assert got["legacy"] == "0" and got["keras3_loaded"]
  assert not got["tf_keras_is_tf_keras"]
