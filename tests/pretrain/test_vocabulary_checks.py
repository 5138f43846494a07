"""The vocabulary a run reads against the one its shards were built with
(manifest.json's fingerprint), and build_vocab.py's output checks."""

import json
import os
import subprocess
import sys

import pytest

from pretrain import shards
from tests import paths
from text import vocab_fingerprint
from util.errors import UserError

FIXTURE_CORPUS = os.path.join(paths.FIXTURES, "pretraining_dataset")
FIXTURE_VOCAB = os.path.join(paths.FIXTURES, "tokenization", "vocab.txt")


def _run(script, *args):
  return subprocess.run(
      [sys.executable, os.path.join(paths.REPO, script)] + list(args),
      cwd=paths.REPO, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


def _lines(path):
  with open(path) as f:
    return f.read().split("\n")


def _write(path, lines):
  with open(path, "w") as f:
    f.write("\n".join(lines))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
  """Shards of the fixture corpus built with a copy of the fixture vocab."""
  root = tmp_path_factory.mktemp("data")
  vocab = str(root / "vocab.txt")
  _write(vocab, _lines(FIXTURE_VOCAB))
  out = str(root / "pretrain_tfrecords")
  proc = _run("build_pretraining_dataset.py", "--corpus-dir", FIXTURE_CORPUS,
              "--vocab-file", vocab, "--output-dir", out, "--max-seq-length",
              "64", "--num-shards", "2", "--heldout-fraction", "0.1")
  assert proc.returncode == 0, proc.stderr
  return root, vocab, out


def test_the_manifest_records_the_vocabularys_fingerprint(built):
  _, vocab, out = built
  with open(os.path.join(out, "manifest.json")) as f:
    settings = json.load(f)["settings"]
  assert settings["vocab_fingerprint"] == vocab_fingerprint.fingerprint(vocab)
  assert settings["vocab_fingerprint"].startswith("sha256:")


def test_line_endings_do_not_change_the_fingerprint(tmp_path):
  lines = _lines(FIXTURE_VOCAB)
  crlf = str(tmp_path / "crlf.txt")
  with open(crlf, "wb") as f:
    f.write("\r\n".join(lines).encode("utf-8"))
  assert vocab_fingerprint.fingerprint(crlf) == vocab_fingerprint.fingerprint(
      FIXTURE_VOCAB)


def test_shards_refuse_another_vocabulary_of_the_same_size(built, tmp_path):
  _, vocab, out = built
  files = shards.find_shards(os.path.join(out, "pretrain_data.tfrecord*"))
  shards.check_vocabulary(files, vocab)  # The one they were built with.
  lines = _lines(vocab)
  lines[10], lines[11] = lines[11], lines[10]
  swapped = str(tmp_path / "vocab.txt")
  _write(swapped, lines)
  with pytest.raises(UserError, match=r"shards of hparam 'pretrain_tfrecords'"
                     r" \(.*manifest.json\) were built with another "
                     r"vocabulary .* from %s" % vocab):
    shards.check_vocabulary(files, swapped)


def test_older_manifests_are_checked_by_size(built, tmp_path):
  _, vocab, out = built
  old = tmp_path / "old"
  old.mkdir()
  with open(os.path.join(out, "manifest.json")) as f:
    manifest = json.load(f)
  del manifest["settings"]["vocab_fingerprint"]
  (old / "manifest.json").write_text(json.dumps(manifest))
  files = [str(old / "pretrain_data.tfrecord-00000-of-00001")]
  shards.check_vocabulary(files, vocab)
  shorter = str(tmp_path / "short.txt")
  _write(shorter, _lines(vocab)[:50])
  with pytest.raises(UserError, match=r"a vocabulary of %d tokens \(%s has "
                     r"50\)" % (manifest["settings"]["vocab_size"], shorter)):
    shards.check_vocabulary(files, shorter)


def test_pretraining_on_shards_of_another_vocabulary_exits_2(built):
  root, vocab, _ = built
  lines = _lines(vocab)
  original = list(lines)
  lines[10], lines[11] = lines[11], lines[10]
  _write(vocab, lines)
  try:
    proc = _run("run_pretraining.py", "--data-dir", str(root),
                "--model-name", "m", "--hparams",
                json.dumps(dict(model_size="small", max_seq_length=64,
                                num_train_steps=1)))
  finally:
    _write(vocab, original)
  assert proc.returncode == 2, proc.stderr
  errors = [line for line in proc.stderr.splitlines()
            if line.startswith("error:")]
  assert len(errors) == 1 and "another vocabulary" in errors[0], proc.stderr
  assert "Traceback" not in proc.stderr


def test_build_vocab_refuses_to_overwrite(tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("keep\n")
  proc = _run("build_vocab.py", "--corpus-dir", FIXTURE_CORPUS, "--output",
              str(vocab), "--vocab-size", "200")
  assert proc.returncode == 2
  assert "--output %s exists; pass --overwrite" % vocab in proc.stderr
  assert vocab.read_text() == "keep\n"
  (tmp_path / "file").write_text("")
  proc = _run("build_vocab.py", "--corpus-dir", FIXTURE_CORPUS, "--output",
              str(tmp_path / "file" / "vocab.txt"))
  assert proc.returncode == 2 and "cannot write to %s" % (
      tmp_path / "file") in proc.stderr, proc.stderr
  assert "Traceback" not in proc.stderr
  proc = _run("build_vocab.py", "--corpus-dir", FIXTURE_CORPUS, "--output",
              str(vocab), "--vocab-size", "200", "--overwrite")
  assert proc.returncode == 0, proc.stderr
  assert len(vocab.read_text().split()) > 50
