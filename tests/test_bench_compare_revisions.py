"""bench/compare_revisions.py: its arguments, the table it reads from
bench/train_step.py, the alternating order and the report."""

import pytest

from bench import compare_revisions
from util.errors import UserError

# bench/train_step.py's output, as it prints it.
TRAIN_STEP_OUTPUT = """\
small, batch 2, seq 16, 2 predictions, vocab 64, float32, jit False, /dev/CPU:0
  mlm      built, compiled and warmed up in 16.0 s
  hp_loss  built, compiled and warmed up in 12.9 s
mode         s/step      seq/s    vs mlm   cpu s/step    vs mlm
mlm          0.1550       12.9     +0.0%       0.0111     +0.0%
hp_loss      0.1379       14.5    -11.1%       0.0123    +11.3%
"""


def test_the_train_step_table_is_read():
  assert compare_revisions.parse_table(TRAIN_STEP_OUTPUT) == {
      "mlm": (0.155, 0.0111), "hp_loss": (0.1379, 0.0123)}
  assert compare_revisions.parse_table("no table here\n") == {}


@pytest.mark.parametrize("argv,fragment", [
    (["--before", "HEAD", "--runs", "1", "--", "--batch-size", "2"],
     "--runs must be at least 2"),
    (["--before", "HEAD"], "after `--`"),
])
def test_bad_arguments_are_user_errors(argv, fragment):
  with pytest.raises(UserError, match=fragment):
    compare_revisions.parse_args(argv)


def test_train_step_arguments_are_those_after_the_separator():
  args = compare_revisions.parse_args(
      ["--before", "HEAD~1", "--", "--batch-size", "2", "--runs", "9"])
  assert args.before == "HEAD~1" and args.runs == 3
  assert args.train_step_args == ["--batch-size", "2", "--runs", "9"]


def test_an_unknown_revision_is_named():
  with pytest.raises(UserError, match="no-such-revision"):
    compare_revisions.resolve("no-such-revision")


def test_runs_alternate_and_the_report_compares_them(monkeypatch):
  order = []
  seconds = {"before": [1.0, 1.1, 1.2], "after": [2.0, 2.1, 2.2]}

  def fake_time_once(worktree, train_step_args):
    order.append(worktree)
    value = seconds[worktree][order.count(worktree) - 1]
    return {"mlm": (value, value / 2)}
  monkeypatch.setattr(compare_revisions, "time_once", fake_time_once)
  tables = compare_revisions.run_interleaved(
      {"before": "before", "after": "after"}, ["--batch-size", "2"], 3,
      log=lambda line: None)
  assert order == ["before", "after", "after", "before", "before", "after"]
  table = compare_revisions.report(
      tables, {"before": "a" * 40, "after": "b" * 40})
  row = table.splitlines()[2]
  assert row.startswith("| mlm | 1.1000 ± 0.1000 (n=3; 1.000, 1.100, 1.200)")
  assert "+1.0000 ± 0.0816" in row and "separated" in row
