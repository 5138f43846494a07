"""A full disk is exit 2 with one line, everywhere, and leaves nothing
half-written (util/cli.py `full_disk_message`). The disk fills through
RLIMIT_FSIZE: a write past the limit fails with EFBIG, as one onto a full
disk fails with ENOSPC."""

import os
import subprocess
import sys

from tests import finetune_fixtures as ff
from tests import paths
from tests.test_faults import _file_size_limit
from tests.test_faults import assert_refused

_CORPUS = os.path.join(paths.FIXTURES, "pretraining_dataset")


def _run_full(limit, *argv):
  proc = subprocess.run(
      [sys.executable] + list(argv), cwd=paths.REPO, capture_output=True,
      text=True, timeout=300, preexec_fn=_file_size_limit(limit),
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES=""))
  return proc.returncode, proc.stderr


def test_the_dataset_builder_on_a_full_disk(tmp_path):
  out = tmp_path / "out"
  code, err = _run_full(
      4096, "build_pretraining_dataset.py", "--corpus-dir", _CORPUS,
      "--vocab-file", ff.VOCAB_FILE, "--output-dir", str(out),
      "--max-seq-length", "32", "--max-unk-fraction", "1")
  assert_refused(code, err, "the disk is full", "re-run the same command")
  assert not out.exists() or not [
      f for f in os.listdir(out) if f.startswith(".tmp-")], os.listdir(out)


def test_the_vocabulary_builder_on_a_full_disk(tmp_path):
  vocab = tmp_path / "vocab.txt"
  code, err = _run_full(64, "build_vocab.py", "--corpus-dir", _CORPUS,
                        "--output", str(vocab), "--vocab-size", "200")
  assert_refused(code, err, "the disk is full")
  assert not vocab.exists()
  assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]
