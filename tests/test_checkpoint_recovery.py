"""A model directory with checkpoints never restarts from scratch: the
checkpoint files are the truth, not the `checkpoint` state file
(interop/checkpoints.py `latest_intact`). Each case damages a copy of one
real pre-training run's directory and resumes it as a user would."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests import paths
from tests.test_faults import _TinyPretraining
from tests.test_faults import assert_refused
from tests.test_faults import run


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  """A run to step 8 that saved ckpt-4 and ckpt-8."""
  pretraining = _TinyPretraining(tmp_path_factory.mktemp("recovery"))
  done = pretraining.run(8)
  assert done.returncode == 0, done.stderr[-3000:]
  return pretraining


def _copy(trained, tmp_path):
  """The run's data directory copied under `tmp_path`, as a
  `_TinyPretraining` of the copy."""
  data = str(tmp_path / "D")
  shutil.copytree(trained.data, data)
  copy = _TinyPretraining.__new__(_TinyPretraining)
  copy.__dict__.update(trained.__dict__)
  copy.data = data
  copy.model_dir = os.path.join(data, "models", "m")
  copy.checkpoints = os.path.join(copy.model_dir, "checkpoints")
  return copy


def _digests(checkpoints, prefix):
  out = {}
  for name in sorted(os.listdir(checkpoints)):
    if name.startswith(prefix + "."):
      with open(os.path.join(checkpoints, name), "rb") as f:
        out[name] = hashlib.sha256(f.read()).hexdigest()
  return out


def _zero_data(checkpoints, prefix):
  for name in os.listdir(checkpoints):
    if name.startswith(prefix + ".data"):
      path = os.path.join(checkpoints, name)
      with open(path, "r+b") as f:
        f.write(b"\0" * os.path.getsize(path))


def test_a_lost_state_file_resumes_from_the_newest_checkpoint(trained,
                                                              tmp_path):
  run_ = _copy(trained, tmp_path)
  before = {p: _digests(run_.checkpoints, p) for p in ("ckpt-4", "ckpt-8")}
  os.remove(os.path.join(run_.checkpoints, "checkpoint"))
  os.makedirs(os.path.join(run_.checkpoints, "ckpt-6_temp"))  # A kill -9.
  resumed = run_.run(10)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "Training steps 8 -> 10" in resumed.stdout
  assert "named nothing; it now names" in resumed.stdout
  assert "ckpt-6_temp, left by a save that did not finish" in resumed.stdout
  assert not os.path.exists(os.path.join(run_.checkpoints, "ckpt-6_temp"))
  for prefix, digests in before.items():
    assert _digests(run_.checkpoints, prefix) == digests


def test_a_state_file_naming_a_lost_checkpoint(trained, tmp_path):
  run_ = _copy(trained, tmp_path)
  before = _digests(run_.checkpoints, "ckpt-4")
  for name in _digests(run_.checkpoints, "ckpt-8"):
    os.remove(os.path.join(run_.checkpoints, name))
  resumed = run_.run(8)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "Training steps 4 -> 8" in resumed.stdout
  assert "it now names %s" % os.path.join(run_.checkpoints,
                                          "ckpt-4") in resumed.stdout
  assert _digests(run_.checkpoints, "ckpt-4") == before


def test_a_damaged_newest_checkpoint_is_skipped_and_named(trained, tmp_path):
  run_ = _copy(trained, tmp_path)
  _zero_data(run_.checkpoints, "ckpt-8")
  resumed = run_.run(8)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "skipped checkpoint %s" % os.path.join(
      run_.checkpoints, "ckpt-8") in resumed.stdout
  assert "Training steps 4 -> 8" in resumed.stdout


def test_no_intact_checkpoint_is_exit_2_everywhere(trained, tmp_path):
  run_ = _copy(trained, tmp_path)
  for prefix in ("ckpt-4", "ckpt-8"):
    _zero_data(run_.checkpoints, prefix)
  before = {p: _digests(run_.checkpoints, p) for p in ("ckpt-4", "ckpt-8")}
  resumed = run_.run(12)
  assert_refused(resumed.returncode, resumed.stderr, "no checkpoint in %s "
                 "can be read" % run_.checkpoints, "move them away")
  for prefix, digests in before.items():
    assert _digests(run_.checkpoints, prefix) == digests
  damaged = os.path.join(run_.checkpoints, "ckpt-8")
  code, err = run("export_model.py", "--checkpoint", damaged, "--format",
                  "hf", "--output", str(tmp_path / "hf"))
  assert_refused(code, err, "checkpoint %s is damaged" % damaged)
  task = os.path.join(run_.data, "finetuning_data", "sst")
  shutil.copytree(os.path.join(paths.FIXTURES, "finetune",
                               "finetuning_data", "sst"), task)
  code, err = run("run_finetuning.py", "--data-dir", run_.data,
                  "--model-name", "m", "--hparams", json.dumps(
                      {"init_checkpoint": damaged}))
  assert_refused(code, err, "checkpoint %s is damaged" % damaged)


def test_the_state_file_is_not_needed_to_fine_tune(trained, tmp_path):
  """Fine-tuning's default source, the pre-trained model directory, is
  found from its files."""
  run_ = _copy(trained, tmp_path)
  os.remove(os.path.join(run_.checkpoints, "checkpoint"))
  shutil.copytree(os.path.join(paths.FIXTURES, "finetune",
                               "finetuning_data", "sst"),
                  os.path.join(run_.data, "finetuning_data", "sst"))
  proc = subprocess.run(
      [sys.executable, "run_finetuning.py", "--data-dir", run_.data,
       "--model-name", "m", "--hparams", json.dumps(
           {"num_train_epochs": 1, "max_unk_fraction": 1})],
      cwd=paths.REPO, capture_output=True, text=True, timeout=300,
      env=run_.env)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "ckpt-8" in proc.stdout


def test_a_closed_standard_output_saves_the_step_reached(tmp_path):
  """`run_pretraining.py ... | head`: the reader goes away mid-run; the
  run saves the step reached as a stop signal would and exits 141 (128 +
  SIGPIPE) without a traceback; the same command resumes there."""
  pretraining = _TinyPretraining(tmp_path, save_checkpoints_steps=100000)
  proc = subprocess.Popen(pretraining.argv(100000), cwd=paths.REPO,
                          env=pretraining.env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  try:
    for line in proc.stdout:
      if line.startswith("step 6/"):
        break
    proc.stdout.close()  # As `head` does once it has its lines.
    err = proc.stderr.read()
    proc.wait(timeout=300)
  finally:
    proc.kill()
  assert proc.returncode == 141, err[-3000:]
  assert "Traceback" not in err, err[-3000:]
  stopped = [line for line in err.splitlines() if line.startswith("stopped:")]
  assert len(stopped) == 1, err[-3000:]
  step = int(stopped[0].split("interrupted at step ")[1].split()[0])
  assert step >= 6
  assert os.path.exists(os.path.join(pretraining.checkpoints,
                                     "ckpt-%d.index" % step))
