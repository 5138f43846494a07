"""bench/train_step.py at two git revisions, interleaved in one run.

Shows whether a change slowed the training step: each revision is checked
out into a temporary git worktree, and bench/train_step.py (the arguments
after `--`) runs from each in turn, one process at a time, alternating the
order (before, after; after, before; ...) so that load drifting over the
run hits both alike. Per mode it reports each revision's s/step (each
process's best round, as train_step.py prints it) over the runs, and the
difference after - before with Welch's p (studies/statistics.py).

Usage:
  python bench/compare_revisions.py --before a780970^ --runs 3 -- \\
      --batch-size 16 --modes mlm,hp_loss --steps 3 --rounds 2

Use only train_step.py arguments that both revisions know. Needs git and
a clean enough repository for `git worktree add`; the worktrees are removed
at the end.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time


from studies import statistics  # pylint: disable=g-import-not-at-top
from util.cli import run_main  # pylint: disable=g-import-not-at-top
from util.errors import UserError  # pylint: disable=g-import-not-at-top

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv):
  parser = argparse.ArgumentParser(
      description=__doc__.split("\n")[0],
      usage="%(prog)s --before REV [--after REV] [--runs N] -- "
            "TRAIN_STEP_ARGS...")
  parser.add_argument("--before", required=True,
                      help="git revision timed first (e.g. a commit^)")
  parser.add_argument("--after", default="HEAD",
                      help="git revision to compare with it (default HEAD)")
  parser.add_argument("--runs", type=int, default=3,
                      help="processes per revision (default 3)")
  argv = list(sys.argv[1:] if argv is None else argv)
  split = argv.index("--") if "--" in argv else len(argv)
  args = parser.parse_args(argv[:split])
  args.train_step_args = argv[split + 1:]
  if args.runs < 2:
    raise UserError("--runs must be at least 2 (the spread needs two), "
                    "got %d." % args.runs)
  if not args.train_step_args:
    raise UserError("give bench/train_step.py's arguments after `--`, "
                    "e.g. -- --batch-size 16 --modes mlm,hp_loss")
  return args


def resolve(revision):
  """The commit hash of `revision`; a UserError naming it if git does not
  know it."""
  proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet",
                         revision + "^{commit}"], cwd=REPO,
                        capture_output=True, text=True)
  if proc.returncode != 0:
    raise UserError("git does not know revision %r in %s." % (revision,
                                                             REPO))
  return proc.stdout.strip()


def parse_table(stdout):
  """{mode: (s/step, cpu s/step)} from bench/train_step.py's table."""
  rows, in_table = {}, False
  for line in stdout.splitlines():
    fields = line.split()
    if fields[:2] == ["mode", "s/step"]:
      in_table = True
    elif in_table and len(fields) == 6:
      rows[fields[0]] = (float(fields[1]), float(fields[4]))
  return rows


def time_once(worktree, train_step_args):
  """One bench/train_step.py process in `worktree`: its parsed table."""
  proc = subprocess.run(
      [sys.executable, os.path.join("bench", "train_step.py")] +
      list(train_step_args), cwd=worktree, capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  rows = parse_table(proc.stdout)
  if proc.returncode != 0 or not rows:
    raise UserError("bench/train_step.py failed in %s (exit %d): %s" % (
        worktree, proc.returncode, (proc.stderr or proc.stdout).strip()
        .splitlines()[-1:]))
  return rows


def run_interleaved(worktrees, train_step_args, runs, log=print):
  """{label: [table per run]}: `runs` processes per worktree, alternating
  which goes first."""
  labels = list(worktrees)
  tables = {label: [] for label in labels}
  start = time.perf_counter()
  for run in range(runs):
    for label in (labels if run % 2 == 0 else labels[::-1]):
      tables[label].append(time_once(worktrees[label], train_step_args))
      done = sum(len(t) for t in tables.values())
      left = (time.perf_counter() - start) / done * (2 * runs - done)
      log("run %d/%d %s done (ETA %.0f s)" % (run + 1, runs, label, left))
  return tables


def report(tables, commits):
  """The markdown table: per mode, each revision's s/step over the runs
  and after - before."""
  before, after = tables["before"], tables["after"]
  modes = [m for m in before[0] if all(m in t for t in before + after)]
  lines = ["| mode | before %s s/step | after %s s/step | after - before "
           "(Welch) | cpu s/step before / after |" % (
               commits["before"][:7], commits["after"][:7]),
           "|---|---|---|---|---|"]
  for mode in modes:
    wall = [[t[mode][0] for t in runs] for runs in (before, after)]
    cpu = [[t[mode][1] for t in runs] for runs in (before, after)]
    lines.append("| %s | %s | %s | %s | %.3f / %.3f |" % (
        mode, _spread(wall[0]), _spread(wall[1]),
        statistics.versus(wall[1], wall[0]),
        statistics.summary(cpu[0])[0], statistics.summary(cpu[1])[0]))
  return "\n".join(lines)


def _spread(values):
  mean, std, n = statistics.summary(values)
  return "%.4f ± %.4f (n=%d; %s)" % (mean, std, n, ", ".join(
      "%.3f" % v for v in values))


def main(argv=None):
  args = parse_args(argv)
  commits = {"before": resolve(args.before), "after": resolve(args.after)}
  with tempfile.TemporaryDirectory(prefix="compare-revisions-") as tmp:
    worktrees = {}
    try:
      for label, commit in commits.items():
        worktrees[label] = os.path.join(tmp, label)
        subprocess.run(["git", "worktree", "add", "--detach", "--quiet",
                        worktrees[label], commit], cwd=REPO, check=True)
      print("before %s, after %s; bench/train_step.py %s; %d runs each" % (
          commits["before"][:10], commits["after"][:10],
          " ".join(args.train_step_args), args.runs), flush=True)
      tables = run_interleaved(worktrees, args.train_step_args, args.runs,
                               log=lambda line: print(line, flush=True))
    finally:
      for path in worktrees.values():
        subprocess.run(["git", "worktree", "remove", "--force", path],
                       cwd=REPO, capture_output=True)
  print(report(tables, commits))
  return 0


if __name__ == "__main__":
  run_main(main)
