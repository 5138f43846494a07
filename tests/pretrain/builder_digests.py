"""SHA-256 digests of the files build_vocab.py and the dataset builder write.

The digests in tests/fixtures/builder_digests.json were taken before the
builder moved into `pretrain/dataset_builder/` (issue 14); the test
`tests/pretrain/test_builder_digests.py` rebuilds some configurations and
compares every output file byte for byte (through its digest).

manifest.json holds timings and the paths given on the command line; it is
digested with those fields set to fixed placeholders (`VOLATILE_*` below),
serialized exactly as the builder writes it (`json.dumps(indent=2,
sort_keys=True)` + newline), so every other byte counts.

Re-record (only when the output is meant to change):
  .venv/bin/python -m tests.pretrain.builder_digests
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile

from util.io_utils import write_json_atomic
from tests import paths

ROOT = paths.REPO
DIGESTS_FILE = os.path.join(ROOT, "tests", "fixtures", "builder_digests.json")
FIXTURES = os.path.join("tests", "fixtures", "pretraining_dataset")
FIXTURE_VOCAB = os.path.join("tests", "fixtures", "tokenization", "vocab.txt")
# "learned": the vocabulary build_vocab.py learns from data/corpus (VOCAB_ARGS).
LEARNED_VOCAB = "learned"
VOCAB_ARGS = ["--corpus-dir", "data/corpus", "--vocab-size", "8000"]

VOLATILE_TOP = ("elapsed_seconds", "cpu_seconds", "setup_seconds",
                "mb_per_second")
VOLATILE_SETTINGS = ("corpus_dir", "output_dir", "vocab_file")
# Settings added after the digests were taken, tested on their own
# (tests/pretrain/test_vocabulary_checks.py): left out of the digest.
ADDED_SETTINGS = ("vocab_fingerprint",)
# Top-level entries added after (issue 49: the [UNK] count, the shards'
# sizes): left out too.
ADDED_TOP = ("unk_tokens", "shard_bytes")

_QUICKSTART = ["--max-seq-length", "128", "--num-shards", "4",
               "--no-blanks-separate-docs", "--heldout-fraction", "0.05"]
_FIXTURE_FLAGS = ["--max-seq-length", "64", "--num-shards", "3",
                  "--heldout-fraction", "0.1", "--seed", "7"]
# name -> (corpus dir, vocabulary, builder flags besides the paths).
CONFIGS = {
    # scripts/quickstart.sh's flags, with one and two processes.
    "corpus_quickstart_p1": ("data/corpus", LEARNED_VOCAB,
                             _QUICKSTART + ["--num-processes", "1"]),
    "corpus_quickstart_p2": ("data/corpus", LEARNED_VOCAB,
                             _QUICKSTART + ["--num-processes", "2"]),
    # docs/pretraining.md, "Building the pre-training data" (8 shards, blank
    # lines end documents).
    "corpus_readme_p2": ("data/corpus", LEARNED_VOCAB,
                         ["--max-seq-length", "128", "--num-processes", "2",
                          "--heldout-fraction", "0.05"]),
    "fixtures_blanks": (FIXTURES, FIXTURE_VOCAB, _FIXTURE_FLAGS),
    "fixtures_no_blanks": (FIXTURES, FIXTURE_VOCAB,
                           _FIXTURE_FLAGS + ["--no-blanks-separate-docs"]),
}


def sha256_file(path):
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


def manifest_digest(path):
  """Digest of manifest.json with its timings and paths replaced."""
  with open(path, encoding="utf-8") as f:
    manifest = json.load(f)
  for key in VOLATILE_TOP:
    manifest[key] = 0
  for key in VOLATILE_SETTINGS:
    manifest["settings"][key] = "<%s>" % key
  for key in ADDED_SETTINGS:
    manifest["settings"].pop(key, None)
  for key in ADDED_TOP:
    manifest.pop(key, None)
  text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
  return hashlib.sha256(text.encode("utf-8")).hexdigest()


def output_digests(output_dir):
  """{file name: sha256} of every file the builder left in output_dir."""
  out = {}
  for name in sorted(os.listdir(output_dir)):
    path = os.path.join(output_dir, name)
    out[name] = (manifest_digest(path) if name == "manifest.json"
                 else sha256_file(path))
  return out


def run_script(script, args):
  """Runs an entry script from the repository root; fails on a non-zero exit."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT)
  proc = subprocess.run([sys.executable, script] + args, cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=300)
  if proc.returncode:
    raise AssertionError("%s %s exited %d:\n%s" % (
        script, " ".join(args), proc.returncode, proc.stderr[-3000:]))
  return proc


def build_vocab(output_file):
  run_script("build_vocab.py", VOCAB_ARGS + ["--output", output_file])


def build(name, output_dir, learned_vocab):
  """Builds configuration `name` into output_dir; returns its digests."""
  corpus, vocab, flags = CONFIGS[name]
  vocab = learned_vocab if vocab == LEARNED_VOCAB else vocab
  run_script("build_pretraining_dataset.py",
             ["--corpus-dir", corpus, "--vocab-file", vocab, "--output-dir",
              output_dir] + flags)
  return output_digests(output_dir)


def load_digests():
  with open(DIGESTS_FILE, encoding="utf-8") as f:
    return json.load(f)


def record():
  """Builds every configuration and writes DIGESTS_FILE."""
  with tempfile.TemporaryDirectory(prefix="builder-digests-") as tmp:
    vocab = os.path.join(tmp, "vocab.txt")
    build_vocab(vocab)
    digests = {"vocab.txt": sha256_file(vocab), "configs": {}}
    for name in CONFIGS:
      digests["configs"][name] = build(name, os.path.join(tmp, name), vocab)
  write_json_atomic(DIGESTS_FILE, digests)
  return digests


if __name__ == "__main__":
  print(json.dumps(record(), indent=2, sort_keys=True))
