"""Every command the README shows runs, on the embedded corpus, at small sizes.

The README's shell commands (indented code lines and inline `python ...`
spans) are extracted from README.md itself, so a README example that no
longer runs fails here. Each is run as a user would type it, with three
kinds of change only: placeholder paths (`D`, `M`, `runs/data`, ...) point
into a temporary directory, small model sizes are merged into `--hparams`,
and small-size flags are appended (argparse takes the last value). The two
`bash scripts/...` commands are what `.ci/run` runs; the test checks that it
does.
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

REPO = paths.REPO
FINETUNE_FIXTURES = os.path.join(REPO, "tests", "fixtures", "finetune",
                                 "finetuning_data")
TIMEOUT = 600

TINY_MODEL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64)
# Merged under the README's own hparams (the README's keys win).
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
    "bench/profile_step.py": [
        "--size", "tiny", "--batch-size", "2", "--seq-len", "32",
        "--vocab-size", "64", "--steps", "1", "--top", "3",
        "--hparams", json.dumps(dict(max_predictions_per_seq=4))],
}
# The order in which the commands' outputs feed each other.
ORDER = ("build_vocab.py", "build_pretraining_dataset.py",
         "run_pretraining.py", "compare_pretraining_runs.py",
         "export_model.py",
         "run_finetuning.py", "bench/build_dataset.py", "bench/train_step.py",
         "bench/compare_peer.py", "bench/input_pipeline.py",
         "bench/profile_step.py", "study.py")


def readme_commands():
  """The shell commands in README.md, continuation lines joined."""
  with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
    text = f.read()
  commands = []
  lines = text.splitlines()
  i = 0
  while i < len(lines):
    line = lines[i]
    if re.match(r"^    (python|bash) ", line):
      command = line.strip()
      while command.endswith("\\"):
        i += 1
        command = command[:-1].rstrip() + " " + lines[i].strip()
      commands.append(command)
    i += 1
  commands += re.findall(r"`(python [^`]+)`", text)
  return commands


def _script(command):
  return shlex.split(command)[1]


def _substitute(word, tmp):
  """Placeholder paths of the README -> paths under `tmp`."""
  data = os.path.join(tmp, "D")
  replacements = [
      (r"^runs/data", data), (r"^D(?=/|$)", data), (r"^M$", "M"),
      (r"^VOCAB$", os.path.join(data, "vocab.txt")),
      (r'(?<=")D(?=/)', data),  # A path inside --hparams JSON.
      (r"^CORPUS_DIR$", "data/corpus")]
  for pattern, value in replacements:
    word = re.sub(pattern, value, word)
  return word


def _tiny_hparams(words, tiny):
  """Merges `tiny` under the JSON value of --hparams."""
  if "--hparams" not in words:
    return words
  i = words.index("--hparams") + 1
  words[i] = json.dumps(dict(tiny, **json.loads(words[i])))
  return words


def runnable(command, tmp):
  """The README command as argv, at small sizes, with its paths under tmp."""
  words = [_substitute(w, tmp) for w in shlex.split(command)]
  script = words[1]
  if script == "run_pretraining.py":
    words = _tiny_hparams(words, TINY_PRETRAINING)
  elif script == "run_finetuning.py":
    words = _tiny_hparams(words, TINY_FINETUNING)
  return [sys.executable, script] + words[2:] + SMALL_FLAGS.get(script, [])


def _rank(command):
  """Sort key: ORDER, except that commands reading export_model.py's output
  (D/export/...) run after it, in README order, and exports of a
  fine-tuned model (--task) after them."""
  if _script(command) == "export_model.py" and "--task" in command:
    return len(ORDER) + 1
  if _script(command) != "export_model.py" and "D/export/" in command:
    return len(ORDER)
  return ORDER.index(_script(command))


def _run(argv):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True,
                        text=True, timeout=TIMEOUT)
  return proc


@pytest.fixture(scope="module")
def readme_runs(tmp_path_factory):
  """{command: CompletedProcess}, every python command of the README run in
  ORDER (a failure stops the chain: later commands need its output)."""
  tmp = str(tmp_path_factory.mktemp("readme"))
  data = os.path.join(tmp, "D")
  commands = [c for c in readme_commands() if c.startswith("python ")]
  commands.sort(key=_rank)
  runs = {}
  for command in commands:
    script = _script(command)
    if script == "run_finetuning.py":
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
      break
  runs["data_dir"] = data
  return runs


def test_readme_shows_every_entry_script():
  scripts = {_script(c) for c in readme_commands()}
  assert scripts == set(ORDER) | {"scripts/quickstart.sh",
                                  "scripts/test.sh"}, scripts


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


@pytest.mark.parametrize("script", ORDER)
def test_readme_command_runs(readme_runs, script):
  commands = [c for c in readme_runs if not c.startswith("(")
              and c != "data_dir" and _script(c) == script]
  assert commands, "the README shows no %s command" % script
  for command in commands:
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
