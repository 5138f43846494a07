"""bench/dtype_numerics.py: the float32 vs bfloat16 numerics check (its
statistics and inputs; a real tiny run, its report and its resume are
tests/test_readme_commands.py's, which runs the command docs/performance.md
shows)."""

import pytest

from bench import dtype_numerics
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
