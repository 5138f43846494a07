"""The code locations that the guide and docs/method.md give exist, and the
guide's pages are where the README says.

A user follows docs/method.md from the math to the code, and the guide
(README.md and its docs/ pages, tests/paths.GUIDE_PAGES; the layout table of
docs/layout.md) from a concern to its module; after a refactoring they must
still name what is there. Checked without importing anything:
- every `path/to/module.py` exists, and every bare `module.py` is some
  module's file name;
- in docs/method.md, every name listed in parentheses right after a path,
  as in "`model/losses.py` (`focal_loss`, `log_prob_at`)", is defined in
  that file (a def, a class or a module-level assignment);
- every `Class.member` is a class defined in the project with that member,
  and every `module.function` whose module is a project module's name is
  defined in it.
The guide's shape: the README is a short user's guide (at most
README_MAX_LINES lines) that walks the workflow in order, a command and one
measured line a step, and links every docs/ page; every relative link of
the README and docs/ resolves; dates and machine names are only in the
dated log (docs/performance.md); study outputs are in results/, not docs/.
"""

import ast
import glob
import os
import re
import subprocess

import pytest

from tests import paths

DOCS = paths.GUIDE_PAGES + (paths.METHOD_PAGE,)
README_MAX_LINES = 300
# The README's workflow: its step headings, in order.
WORKFLOW = ("Data", "Vocabulary", "Shards", "Pre-training",
            "Continue from a released model", "Fine-tuning", "Export and serve")
# What only the dated log may hold: a date, the machines' names.
_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
_MACHINE = re.compile(r"\b(Xeon|EPYC)\b")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
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
  text = re.sub(r"\s+", " ", _text(paths.METHOD_PAGE))
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
  if doc in (paths.METHOD_PAGE, paths.DATED_LOG):
    # The pattern still matches how these two are written.
    assert checked, "no dotted name of the project found in %s" % doc
  assert not missing, "%s names what is not defined: %s" % (doc, missing)


def _lines(doc):
  return _text(doc).splitlines()


def test_the_readme_is_a_short_guide_to_the_workflow():
  lines = _lines("README.md")
  assert len(lines) <= README_MAX_LINES, len(lines)
  headings = [line[4:] for line in lines if line.startswith("### ")]
  assert headings == list(WORKFLOW), headings
  text = _text("README.md")
  for step, following in zip(WORKFLOW, WORKFLOW[1:] + ("\n## ",)):
    start = text.index("### %s\n" % step)
    section = text[start:text.index(following, start + 1)]
    commands = re.findall(r"^    python ", section, re.M)
    if step == "Data":
      assert not commands, "the Data step shows the corpus, not a command"
      continue
    assert commands, "README step %r shows no command" % step
    assert section.count("\nMeasured: ") == 1, (
        "README step %r: one measured line" % step)


def test_the_readme_links_every_docs_page():
  links = {target for target, _ in _link_targets("README.md")}
  for page in paths.GUIDE_PAGES[1:] + (paths.METHOD_PAGE,):
    assert page in links, "the README does not link %s" % page


def _link_targets(doc):
  """(target, absolute path) of each Markdown link of `doc` outside code."""
  text = re.sub(r"```.*?```", "", _text(doc), flags=re.S)
  text = re.sub(r"`[^`]*`", "", text)
  for target in _LINK.findall(text):
    if re.match(r"^[a-z]+:", target) or target.startswith("#"):
      continue  # A URL or an anchor.
    yield target, os.path.normpath(os.path.join(
        paths.REPO, os.path.dirname(doc), target.split("#")[0]))


def test_every_relative_link_of_the_readme_and_docs_resolves():
  docs = ["README.md"] + sorted(os.path.relpath(f, paths.REPO) for f in
                                glob.glob(os.path.join(paths.REPO, "docs",
                                                       "*.md")))
  missing, checked = [], 0
  for doc in docs:
    for target, path in _link_targets(doc):
      checked += 1
      if not os.path.exists(path):
        missing.append("%s: %s" % (doc, target))
  assert checked >= 20  # The pattern still finds the links.
  assert not missing, "links to nothing: %s" % missing


def test_dates_and_machine_names_are_only_in_the_dated_log():
  for doc in paths.GUIDE_PAGES:
    text = _text(doc)
    if doc == paths.DATED_LOG:
      assert _DATE.search(text) and _MACHINE.search(text)
      continue
    assert not _DATE.findall(text), (doc, _DATE.findall(text))
    assert not _MACHINE.findall(text), (doc, _MACHINE.findall(text))


def test_study_outputs_are_in_results_and_tracked():
  """Figures, summaries and run archives of the studies are under results/
  (tracked: the archives are how a study outlives its work_dir), none under
  docs/; the reports in docs/ link their figures there."""
  assert not glob.glob(os.path.join(paths.REPO, "docs", "results*"))
  tracked = subprocess.run(["git", "ls-files", "results"], cwd=paths.REPO,
                           capture_output=True, text=True,
                           check=True).stdout.split()
  assert any(f.endswith("run.json") for f in tracked)
  assert any(f.endswith(".png") for f in tracked)
  ignored = subprocess.run(["git", "check-ignore", "-q", "results/x.png"],
                           cwd=paths.REPO)
  assert ignored.returncode == 1, "results/ is ignored by git"
  for report in glob.glob(os.path.join(paths.REPO, paths.REPORT_PATTERN)):
    doc = os.path.relpath(report, paths.REPO)
    figures = [path for target, path in _link_targets(doc)
               if target.endswith(".png")]
    assert figures, "%s links no figure" % doc
    for path in figures:
      assert os.path.relpath(path, paths.REPO).startswith("results" + os.sep)
