"""The code locations that README.md and docs/method.md give exist.

A user follows docs/method.md from the math to the code, and the README's
layout table from a concern to its module; after a refactoring both must
still name what is there. Checked without importing anything:
- every `path/to/module.py` exists, and every bare `module.py` is some
  module's file name;
- in docs/method.md, every name listed in parentheses right after a path,
  as in "`model/losses.py` (`focal_loss`, `log_prob_at`)", is defined in
  that file (a def, a class or a module-level assignment);
- every `Class.member` is a class defined in the project with that member,
  and every `module.function` whose module is a project module's name is
  defined in it.
"""

import ast
import os
import re
import subprocess

import pytest

from tests import paths

DOCS = ("README.md", os.path.join("docs", "method.md"))
# Files of google-research/electra that docs/method.md cites as the original.
ORIGINAL_FILES = {"configure_pretraining.py"}
_FILE_SUFFIXES = {"py", "json", "txt", "tsv", "md", "png", "safetensors",
                  "model", "csv", "lock", "claim"}
_PATH = re.compile(r"`([A-Za-z_][\w/]*\.py)`")
_LISTED = re.compile(r"`([\w/]+\.py)`\s*\(((?:`\w+`(?:,\s*|\s+and\s+)?)+)\)")
_DOTTED = re.compile(r"`([A-Za-z_]\w*)\.([A-Za-z_]\w*)`")


def _project_files():
  out = subprocess.run(["git", "ls-files", "*.py"], cwd=paths.REPO,
                       capture_output=True, text=True, check=True).stdout
  return [f for f in out.split() if os.path.exists(os.path.join(paths.REPO,
                                                                f))]


FILES = _project_files()


def _text(doc):
  with open(os.path.join(paths.REPO, doc), encoding="utf-8") as f:
    return f.read()


def _defined(path):
  """{name: set of member names} of the classes in `path`, and the set of
  its top-level names (defs, classes, assignments)."""
  with open(os.path.join(paths.REPO, path), encoding="utf-8") as f:
    tree = ast.parse(f.read())
  classes, names = {}, set()
  for node in tree.body:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
      names.add(node.name)
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
      targets = node.targets if isinstance(node, ast.Assign) else [
          node.target]
      names.update(t.id for t in targets if isinstance(t, ast.Name))
    if isinstance(node, ast.ClassDef):
      members = set()
      for item in ast.walk(node):
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
          members.add(item.name)
        elif isinstance(item, ast.Attribute) and isinstance(
            item.ctx, ast.Store):
          members.add(item.attr)
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
          targets = (item.targets if isinstance(item, ast.Assign)
                     else [item.target])
          members.update(t.id for t in targets if isinstance(t, ast.Name))
      classes[node.name] = members
  return classes, names


DEFINED = {path: _defined(path) for path in FILES}


@pytest.mark.parametrize("doc", DOCS)
def test_every_module_path_exists(doc):
  basenames = {os.path.basename(f) for f in FILES}
  missing = []
  for path in sorted(set(_PATH.findall(_text(doc))) - ORIGINAL_FILES):
    found = path in FILES if "/" in path else path in basenames
    if not found:
      missing.append(path)
  assert not missing, "%s names modules that do not exist: %s" % (doc,
                                                                  missing)


def test_names_listed_after_a_path_are_defined_there():
  text = re.sub(r"\s+", " ", _text(DOCS[1]))
  listed = _LISTED.findall(text)
  assert len(listed) >= 5  # The pattern still matches how the doc is written.
  missing = []
  for path, names in listed:
    if path not in DEFINED:
      continue  # Reported by test_every_module_path_exists.
    classes, top = DEFINED[path]
    for name in re.findall(r"`(\w+)`", names):
      if name not in top and not any(name in m for m in classes.values()):
        missing.append("%s: %s" % (path, name))
  assert not missing, "docs/method.md lists names not in their module: %s" % (
      missing)


@pytest.mark.parametrize("doc", DOCS)
def test_dotted_names_are_defined(doc):
  classes = {}
  modules = {}
  for path, (file_classes, top) in DEFINED.items():
    for name, members in file_classes.items():
      classes.setdefault(name, set()).update(members)
    modules.setdefault(os.path.basename(path)[:-3], set()).update(top)
  missing, checked = [], 0
  for owner, member in sorted(set(_DOTTED.findall(_text(doc)))):
    if member in _FILE_SUFFIXES:
      continue  # A file name (`task.json`), not a name in a module.
    if owner in classes:
      known = classes[owner]
    elif owner in modules and owner[0].islower():
      known = modules[owner]
    else:
      continue  # Not ours (tf.where, vocab.txt, a file name, ...).
    checked += 1
    if member not in known:
      missing.append("%s.%s" % (owner, member))
  assert checked, "no dotted name of the project found in %s" % doc
  assert not missing, "%s names what is not defined: %s" % (doc, missing)
