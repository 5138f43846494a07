"""The fault table: bad inputs and faults of every entry script, each run as
a user runs it (a subprocess), each promised to end with exit code 2, one
`error:` line naming the cause, no traceback, and nothing lost.

Other modules test faults that need their own set-up (a killed save, a full
disk, Ctrl-C, the vocabulary checks); this one is the list a user reads.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests import finetune_fixtures as ff
from tests import paths


def run(*argv, cwd=paths.REPO):
  """(exit code, stderr) of `python argv...` from the repository."""
  proc = subprocess.run(
      [sys.executable] + list(argv), cwd=cwd, capture_output=True,
      text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                                       CUDA_VISIBLE_DEVICES=""))
  return proc.returncode, proc.stderr


def assert_refused(code, stderr, *fragments):
  """Exit 2, exactly one `error:` line holding every fragment, and no
  traceback."""
  errors = [l for l in stderr.splitlines() if l.startswith("error:")]
  assert code == 2, stderr[-3000:]
  assert len(errors) == 1, stderr[-3000:]
  for fragment in fragments:
    assert fragment in errors[0], (fragment, errors[0])
  assert "Traceback" not in stderr, stderr[-3000:]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
  """A data directory with the fine-tuning fixtures' vocabulary and SST."""
  root = tmp_path_factory.mktemp("faults")
  data = root / "data"
  shutil.copytree(os.path.join(ff.FIXTURE_DIR, "finetuning_data", "sst"),
                  data / "finetuning_data" / "sst")
  shutil.copy(ff.VOCAB_FILE, data / "vocab.txt")
  return data


@pytest.fixture(scope="module")
def garbage_checkpoint(tmp_path_factory):
  """A directory whose `checkpoint` file names a prefix of random bytes."""
  folder = tmp_path_factory.mktemp("garbage")
  (folder / "checkpoint").write_text(
      'model_checkpoint_path: "ckpt-1"\n'
      'all_model_checkpoint_paths: "ckpt-1"\n')
  rng = __import__("random").Random(0)
  for name in ("ckpt-1.index", "ckpt-1.data-00000-of-00001"):
    (folder / name).write_bytes(bytes(rng.randrange(256) for _ in range(300)))
  return folder


@pytest.mark.parametrize("script,hparams,fragment", [
    ("run_pretraining.py", {"learning_rate": float("nan")},
     "hparam 'learning_rate' must be a finite number, got nan"),
    ("run_pretraining.py", {"mask_prob": float("nan")},
     "hparam 'mask_prob' must be a finite number, got nan"),
    ("run_pretraining.py", {"adam_epsilon": float("inf")},
     "hparam 'adam_epsilon' must be a finite number, got inf"),
    ("run_finetuning.py", {"task_names": ["sst"],
                           "learning_rate": -float("inf")},
     "hparam 'learning_rate' must be a finite number, got -inf"),
], ids=["pretrain-lr-nan", "pretrain-mask-nan", "pretrain-eps-inf",
        "finetune-lr-inf"])
def test_non_finite_hparams(data_dir, script, hparams, fragment):
  code, err = run(script, "--data-dir", str(data_dir), "--model-name",
                  "nan", "--hparams", json.dumps(hparams))
  assert_refused(code, err, fragment)
  assert not (data_dir / "models" / "nan").exists()


@pytest.mark.parametrize("script", ["run_pretraining.py", "run_finetuning.py",
                                    "export_model.py"])
def test_a_garbage_checkpoint(data_dir, garbage_checkpoint, script):
  if script == "export_model.py":
    argv = ["--checkpoint", str(garbage_checkpoint), "--format", "hf",
            "--output", str(data_dir / "export_garbage")]
  else:
    hparams = {"init_checkpoint": str(garbage_checkpoint)}
    if script == "run_finetuning.py":
      hparams["task_names"] = ["sst"]
    argv = ["--data-dir", str(data_dir), "--model-name", "g", "--hparams",
            json.dumps(hparams)]
  code, err = run(script, *argv)
  assert_refused(code, err, "checkpoint %s cannot be read" % (
      garbage_checkpoint / "ckpt-1"), "not a TensorFlow checkpoint")
