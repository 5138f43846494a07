"""The shape of the code: no function outside tests/ and bench/ over 60 lines.

Lines are counted from the `def` line to the function's last line,
docstring included (decorators not). A longer function is split into
well-named helpers.
"""

import ast
import os

from tests import paths

MAX_FUNCTION_LINES = 60
# Tests and benchmarks, and what .gitignore lists (run outputs, caches).
SKIPPED_DIRS = {"tests", "bench", "__pycache__", "runs", "work"}


def _python_files():
  for root, dirs, files in os.walk(paths.REPO):
    dirs[:] = sorted(d for d in dirs
                     if d not in SKIPPED_DIRS and not d.startswith("."))
    for name in sorted(files):
      if name.endswith(".py"):
        yield os.path.join(root, name)


def _long_functions(path):
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read(), path)
  for node in ast.walk(tree):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
      length = node.end_lineno - node.lineno + 1
      if length > MAX_FUNCTION_LINES:
        yield "%s:%d %s (%d lines)" % (os.path.relpath(path, paths.REPO),
                                       node.lineno, node.name, length)


def test_no_function_over_60_lines_outside_tests_and_bench():
  files = list(_python_files())
  assert any(f.endswith("run_pretraining.py") for f in files)
  long_ones = [entry for path in files for entry in _long_functions(path)]
  assert not long_ones, "split these into helpers:\n" + "\n".join(long_ones)
