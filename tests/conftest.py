"""Test set-up: quiet TensorFlow, make the project importable, few threads."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
# As every entry script sets it (util/cli.tensorflow_startup); the test
# processes and the scripts they start then skip importing Keras 3.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

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
