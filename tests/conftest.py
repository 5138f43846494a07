"""Test set-up: quiet TensorFlow, few threads (the project is importable
through pytest.ini's pythonpath and the venv's electra_hp.pth)."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
# As every entry script sets it (util/cli.tensorflow_startup); the test
# processes and the scripts they start then skip importing Keras 3.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import types  # pylint: disable=g-import-not-at-top,g-bad-import-order

import pytest  # pylint: disable=g-import-not-at-top,g-bad-import-order


@pytest.fixture
def clip_spy(monkeypatch):
  """Spies on `model.losses.self_normalise_and_clip`: `.calls` collects the
  `clip` of every call, `.original` is the function itself."""
  from model import losses  # pylint: disable=g-import-not-at-top
  spy = types.SimpleNamespace(calls=[],
                              original=losses.self_normalise_and_clip)

  def spied(raw, weights, clip):
    spy.calls.append(clip)
    return spy.original(raw, weights, clip)

  monkeypatch.setattr(losses, "self_normalise_and_clip", spied)
  return spy


@pytest.fixture(autouse=True)
def _restore_process_wide_precision():
  """Puts back, after each test, the Keras dtype policy and TensorFlow's
  auto-clustering switch: a bench or entry point run in-process in
  mixed_bfloat16 (with fusion, util/xla_fusion.py) sets both for the whole
  process, and every later test in that worker would build bfloat16 models
  or compute with XLA's rounding."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top
  policy = tf_keras.mixed_precision.global_policy()
  jit = tf.config.optimizer.get_jit()
  yield
  tf_keras.mixed_precision.set_global_policy(policy)
  if tf.config.optimizer.get_jit() != jit:
    tf.config.optimizer.set_jit(jit or False)


# The test files that take longest, longest first (from the CI logs' slowest
# durations). scripts/test.sh hands whole files to its workers in collection
# order (--dist loadfile --no-loadscope-reorder), so starting these first
# keeps one worker from running a long file alone at the end.
SLOW_FILES_FIRST = (
    "tests/test_readme_commands.py",
    "tests/pretrain/test_run_pretraining.py",
    "tests/test_study.py",
    "tests/test_faults.py",
    "tests/test_bench_serving.py",
    "tests/test_study_released.py",
    "tests/test_bench.py",
    "tests/export/test_saved_model_serving.py",
    "tests/export/test_tflite_export.py",
    "tests/test_ram_filesystem.py",
    "tests/interop/test_adoption.py",
    "tests/test_sentencepiece_end_to_end.py",
)


def pytest_collection_modifyitems(items):
  """Moves the files of SLOW_FILES_FIRST to the front, in that order; the
  other files and every file's own tests keep their order."""
  rank = {path: i for i, path in enumerate(SLOW_FILES_FIRST)}
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

  def file_rank(item):
    path = os.path.relpath(str(item.path), root).replace(os.sep, "/")
    return rank.get(path, len(SLOW_FILES_FIRST))

  items.sort(key=file_rank)
