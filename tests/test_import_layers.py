"""The layering of the code: no import cycle between top-level packages.

Every project module's imports are read with `ast` (nothing is imported),
each one mapped to the top-level package or module it names (`model`,
`interop`, `configure`, ...). Imports inside a package are left out; what
is left must form a graph without a cycle, so that the packages stack in
layers (util -> text -> model -> training -> configure -> interop -> pretrain,
finetune -> export -> the entry scripts): a package never reaches back up.
"""

import ast
import os

from tests import paths

# What .gitignore lists (run outputs, caches) and the virtual environment.
SKIPPED_DIRS = {"__pycache__", "runs", "work"}


def _python_files(root):
  for directory, dirs, files in os.walk(root):
    dirs[:] = sorted(d for d in dirs
                     if d not in SKIPPED_DIRS and not d.startswith("."))
    for name in sorted(files):
      if name.endswith(".py"):
        yield os.path.join(directory, name)


def _top_level_names(root):
  """The repository's top-level packages (folders with an __init__.py)
  and top-level modules, by import name."""
  names = set()
  for entry in os.listdir(root):
    path = os.path.join(root, entry)
    if entry.endswith(".py"):
      names.add(entry[:-3])
    elif os.path.isfile(os.path.join(path, "__init__.py")):
      names.add(entry)
  return names


def _imported_names(tree):
  """The absolute module names a module's imports name (any nesting:
  imports inside functions count too)."""
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for alias in node.names:
        yield alias.name
    elif isinstance(node, ast.ImportFrom) and node.level == 0:
      yield node.module


def import_graph(root):
  """{package: {imported package: [file that imports it, ...]}} between
  the top-level packages and modules of the repository at `root`."""
  tops = _top_level_names(root)
  graph = {}
  for path in _python_files(root):
    relative = os.path.relpath(path, root)
    package = relative.split(os.sep)[0]
    package = package[:-3] if package.endswith(".py") else package
    with open(path, encoding="utf-8") as f:
      tree = ast.parse(f.read(), path)
    for name in _imported_names(tree):
      target = name.split(".")[0]
      if target in tops and target != package:
        graph.setdefault(package, {}).setdefault(target, []).append(
            relative)
  return graph


def find_cycle(graph):
  """A cycle of `graph` ({node: iterable of nodes}) as a list of nodes,
  first == last, or None when it has none (depth-first search)."""
  on_path, done = [], set()

  def visit(node):
    if node in on_path:
      return on_path[on_path.index(node):] + [node]
    if node in done:
      return None
    on_path.append(node)
    for successor in sorted(graph.get(node, ())):
      cycle = visit(successor)
      if cycle:
        return cycle
    on_path.pop()
    done.add(node)
    return None

  for node in sorted(graph):
    cycle = visit(node)
    if cycle:
      return cycle
  return None


def test_the_check_finds_a_cycle_and_accepts_layers():
  assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None
  assert find_cycle({"a": ["b", "c"], "b": ["c"], "d": ["a"]}) is None
  assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == [
      "a", "b", "c", "a"]
  assert find_cycle({"x": ["y"], "y": ["y2"], "y2": ["y"]}) == [
      "y", "y2", "y"]


def test_the_graph_reads_imports_of_every_kind(tmp_path):
  for package, source in (
      ("low", "import os\n"),
      ("high", "from low import thing\n\ndef f():\n  import mid.sub\n"),
      ("mid", "import low.x as y\nfrom . import sibling\n")):
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "m.py").write_text(source)
  (tmp_path / "script.py").write_text("import high\n")
  graph = import_graph(str(tmp_path))
  assert {k: sorted(v) for k, v in graph.items()} == {
      "high": ["low", "mid"], "mid": ["low"], "script": ["high"]}
  assert find_cycle(graph) is None
  (tmp_path / "low" / "back.py").write_text("from script import main\n")
  assert find_cycle(import_graph(str(tmp_path))) == [
      "high", "low", "script", "high"]


def test_no_import_cycle_between_top_level_packages():
  graph = import_graph(paths.REPO)
  assert {"model", "training", "interop", "finetune", "export"} <= set(
      graph)
  cycle = find_cycle(graph)
  assert cycle is None, "import cycle %s:\n%s" % (
      " -> ".join(cycle), "\n".join(
          "  %s imports %s in %s" % (a, b, ", ".join(sorted(set(graph[a][b]))))
          for a, b in zip(cycle, cycle[1:])))
