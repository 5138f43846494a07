"""bench/dtype_numerics.py: the float32 vs bfloat16 numerics check."""

import json
import subprocess
import sys

import pytest

from bench import dtype_numerics
from tests import paths
from tests import pretrain_fixtures
from util.errors import UserError


def _history(auc, mlm_loss):
  entry = dict((m, 0.5) for m in dtype_numerics.FINAL_METRICS)
  return [dict(entry, step=1, masked_lm_loss=mlm_loss + 1.0, disc_loss=0.5),
          dict(entry, step=2, disc_auc=auc, masked_lm_loss=mlm_loss)]


def _row(rows, metric, step):
  return next(r for r in rows if r["metric"] == metric and r["step"] == step)


def test_compare_separates_a_real_difference_and_not_noise():
  histories = {
      "float32": [_history(0.80, 6.0), _history(0.81, 6.1),
                  _history(0.79, 5.9)],
      "bfloat16": [_history(0.60, 6.05), _history(0.61, 5.95),
                   _history(0.59, 6.0)]}
  rows = dtype_numerics.compare(histories, ("float32", "bfloat16"))
  assert _row(rows, "disc_auc", "final")["verdict"] == "separated"
  assert _row(rows, "masked_lm_loss", "final")["verdict"] == "not separated"
  # The curve has the step before the final one.
  assert _row(rows, "masked_lm_loss", 1)["values"]["bfloat16"] == [
      7.05, 6.95, 7.0]
  report = dtype_numerics.format_report(
      rows, ("float32", "bfloat16"), [1, 2, 3],
      {"float32": [10.0, 11.0, 12.0], "bfloat16": [5.0, 6.0, 7.0]},
      dict(num_train_steps=2))
  assert "1 of %d separated: disc_auc@final" % len(rows) in report


def test_bad_inputs_are_user_errors(tmp_path):
  with pytest.raises(UserError, match="vocab.txt not found"):
    dtype_numerics.check_data_dir(str(tmp_path))
  with pytest.raises(UserError, match="distinct"):
    dtype_numerics.parse_list("1,1", "seeds", int)
  with pytest.raises(UserError, match="comma-separated int"):
    dtype_numerics.parse_list("1,x", "seeds", int)
  with pytest.raises(UserError, match="neither a file"):
    dtype_numerics.load_hparams(str(tmp_path / "missing.json"))


def test_tiny_check_runs_both_dtypes_and_resumes(tmp_path):
  data = pretrain_fixtures.make_data_dir(tmp_path, num_examples=40)
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=2,
                 num_eval_steps=1)
  argv = [sys.executable, "bench/dtype_numerics.py", "--data-dir", data,
          "--hparams", json.dumps(hparams), "--seeds", "1,2",
          "--eval-every", "1", "--output", str(tmp_path / "report")]
  first = subprocess.run(argv, cwd=paths.REPO, capture_output=True,
                         text=True, timeout=600)
  assert first.returncode == 0, first.stderr[-3000:]
  result = json.loads((tmp_path / "report" / "numerics.json").read_text())
  auc = next(r for r in result["rows"]
             if r["metric"] == "disc_auc" and r["step"] == "final")
  assert len(auc["values"]["float32"]) == len(auc["values"]["bfloat16"]) == 2
  assert all(0.0 <= v <= 1.0 for vs in auc["values"].values() for v in vs)
  report = (tmp_path / "report" / "numerics.md").read_text()
  assert "Verdict (Holm-adjusted p < 0.05):" in report
  # A second call finds the four runs finished and runs none of them.
  second = subprocess.run(argv, cwd=paths.REPO, capture_output=True,
                          text=True, timeout=600)
  assert second.returncode == 0, second.stderr[-3000:]
  assert "== numerics-" not in second.stdout
