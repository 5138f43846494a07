"""studies/feature_probe.py: the regression learns what it can and no more;
the command probes a tiny random encoder on the fixture task."""

import json
import subprocess
import sys

import numpy as np

from studies import feature_probe
from tests import finetune_fixtures
from tests import paths


def test_the_regression_learns_a_separable_task_and_not_noise():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(200, 8))
  y = (x[:, 2] - x[:, 5] > 0).astype(int)
  accuracy, _ = feature_probe.probe_accuracy(x[:150], y[:150], x[150:],
                                             y[150:])
  assert accuracy >= 90
  noise = rng.normal(size=(200, 8))
  accuracy, _ = feature_probe.probe_accuracy(noise[:150], y[:150],
                                             noise[150:], y[150:])
  assert 25 <= accuracy <= 75


def test_three_classes_are_told_apart():
  rng = np.random.default_rng(1)
  y = np.arange(300) % 3
  x = np.eye(3)[y] * 3 + rng.normal(size=(300, 3))
  w, b = feature_probe.fit_logistic_regression(x, y, 1e-3)
  assert w.shape == (3, 3) and b.shape == (3,)
  assert np.mean((x @ w + b).argmax(1) == y) > 0.9


def test_bag_of_words_keeps_the_tokens_of_the_first_split():
  ids = [np.array([[5, 6, 6, 0]]), np.array([[6, 7, 0, 0]])]
  masks = [(i > 0).astype(int) for i in ids]
  train, dev = feature_probe.bag_of_words(list(zip(ids, masks)), 10)
  np.testing.assert_array_equal(train, [[1, 2]])  # tokens 5 and 6
  np.testing.assert_array_equal(dev, [[0, 1]])


def _probe(tmp_path, *extra):
  hparams = dict(vocab_size=finetune_fixtures.VOCAB_SIZE, embedding_size=16,
                 model_hparam_overrides=dict(finetune_fixtures.TINY_MODEL))
  return subprocess.run(
      [sys.executable, "-m", "studies.feature_probe", "--data-dir",
       finetune_fixtures.FIXTURE_DIR, "--hparams", json.dumps(hparams),
       "--max-seq-length", "32", *extra], cwd=paths.REPO,
      capture_output=True, text=True, timeout=300)


def test_the_command_probes_a_random_encoder(tmp_path):
  out = tmp_path / "probe.json"
  proc = _probe(tmp_path, "--task", "sst", "--json", str(out))
  assert proc.returncode == 0, proc.stderr[-2000:]
  results = json.loads(out.read_text())["results"]
  assert sorted(results) == ["bag_of_words", "cls", "embeddings", "mean"]
  for name, result in results.items():
    assert 0 <= result["dev_accuracy"] <= 100
    assert result["l2"] in feature_probe.L2_GRID
    assert name + " " in proc.stdout


def test_a_missing_task_exits_2_naming_it(tmp_path):
  proc = _probe(tmp_path, "--task", "no_such_task")
  assert proc.returncode == 2
  assert "no_such_task" in proc.stderr + proc.stdout
