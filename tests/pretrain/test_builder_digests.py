"""The builder writes the very bytes it wrote before it became a package.

Digests: tests/fixtures/builder_digests.json (see builder_digests.py for what
they cover and how manifest.json's timings and paths are neutralized).
"""

import os

import pytest

from tests.pretrain import builder_digests as digests_lib
from util.cli import run_main


@pytest.fixture(scope="module")
def recorded():
  return digests_lib.load_digests()


@pytest.fixture(scope="module")
def learned_vocab(tmp_path_factory):
  """build_vocab.py's vocabulary of data/corpus (a command-line run)."""
  path = str(tmp_path_factory.mktemp("vocab") / "vocab.txt")
  digests_lib.build_vocab(path)
  return path


def test_vocabulary_bytes(recorded, learned_vocab):
  assert digests_lib.sha256_file(learned_vocab) == recorded["vocab.txt"]


@pytest.mark.parametrize("name", ["fixtures_blanks", "fixtures_no_blanks"])
def test_fixture_shards_and_manifest_bytes(recorded, tmp_path, name):
  # In this process (one worker): no second TensorFlow start-up.
  import build_pretraining_dataset  # pylint: disable=g-import-not-at-top
  corpus, vocab, flags = digests_lib.CONFIGS[name]
  out = str(tmp_path / "out")
  run_main(build_pretraining_dataset.main, [
      "--corpus-dir", os.path.join(digests_lib.ROOT, corpus), "--vocab-file",
      os.path.join(digests_lib.ROOT, vocab), "--output-dir", out] + flags)
  assert digests_lib.output_digests(out) == recorded["configs"][name]


def test_corpus_two_processes_bytes(recorded, learned_vocab, tmp_path):
  # The quick start's build: forked workers, a file cut into several chunks,
  # and the example-level hold-out (7 documents, none drawn).
  name = "corpus_quickstart_p2"
  got = digests_lib.build(name, str(tmp_path / "out"), learned_vocab)
  assert got == recorded["configs"][name]
  # One process writes the same shards (its manifest differs in
  # settings.num_processes only).
  one = recorded["configs"]["corpus_quickstart_p1"]
  assert {k: v for k, v in got.items() if k != "manifest.json"} == {
      k: v for k, v in one.items() if k != "manifest.json"}
