"""bench/finetune_peer.py end to end at a tiny size: a random 2-layer BERT
folder (tests/hf_reference.py's "make", with the fixture vocabulary)
fine-tuned on 16 rows of the SST fixture by both sides, one seed; the
JSON lines, the table and --report."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from bench import finetune_peer
from tests.paths import FIXTURES
from tests.paths import REPO

FINETUNE = os.path.join(FIXTURES, "finetune")
TINY_BERT = dict(vocab_size=219, hidden_size=32, num_hidden_layers=2,
                 num_attention_heads=2, intermediate_size=37,
                 max_position_embeddings=64, type_vocab_size=2)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
  """A random BertModel folder saved by transformers (its own process)."""
  tmp = tmp_path_factory.mktemp("peer")
  folder = tmp / "tiny-bert"
  jobs = tmp / "jobs.json"
  jobs.write_text(json.dumps([{"op": "make", "class": "BertModel", "seed": 0,
                               "config": TINY_BERT, "folder": str(folder)}]))
  subprocess.run([sys.executable, os.path.join(REPO, "tests",
                                               "hf_reference.py"), str(jobs)],
                 check=True, timeout=300,
                 env=dict(os.environ, CUDA_VISIBLE_DEVICES="", USE_TF="0"))
  shutil.copy(os.path.join(FINETUNE, "vocab.txt"), folder / "vocab.txt")
  return str(folder)


def test_both_sides_report_accuracy_and_speed(tiny_bert, tmp_path):
  out = tmp_path / "runs.jsonl"
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO, "bench", "finetune_peer.py"),
       "--model", tiny_bert, "--task-dir",
       os.path.join(FINETUNE, "finetuning_data", "sst"), "--train-rows", "16",
       "--dev-rows", "4", "--seeds", "1", "--epochs", "1",
       "--max-seq-length", "32", "--batch-size", "8", "--log-every", "1",
       "--threads", "2", "--out", str(out)],
      cwd=REPO, stdout=subprocess.PIPE, text=True, timeout=300, check=True)
  rows = [json.loads(line) for line in out.read_text().splitlines()]
  assert [row["side"] for row in rows] == ["ours", "transformers"]
  for row in rows:
    assert row["seed"] == 1 and row["num_steps"] == 2
    assert row["train_examples"] == 16 and row["eval_examples"] == 4
    for key in ("dev_accuracy", "dev_accuracy_best"):
      assert 0.0 <= row[key] <= 1.0
    for key in ("train_examples_per_s", "steady_examples_per_s",
                "eval_examples_per_s", "eval2_examples_per_s"):
      assert row[key] > 0
    assert set(row["cpu"]) == {"avx512_bf16", "amx_bf16"}
  table = proc.stdout[proc.stdout.index("config: "):]
  assert "| ours | 1 |" in table and "| transformers | 1 |" in table
  report = subprocess.run(
      [sys.executable, os.path.join(REPO, "bench", "finetune_peer.py"),
       "--report", str(out)], cwd=REPO, stdout=subprocess.PIPE, text=True,
      check=True)
  assert report.stdout.strip() == table.strip()


def test_defaults_are_our_finetuning_defaults():
  import configure_fields  # pylint: disable=g-import-not-at-top
  fields = configure_fields.FINETUNE_FIELDS
  ours = dict(weight_decay="weight_decay_rate")
  for key, value in finetune_peer.DEFAULTS.items():
    assert fields[ours.get(key, key)].default == value, key
  args = finetune_peer.parse_args(["--model", "m", "--task-dir", "t"])
  assert (args.batch_size, args.max_seq_length) == (
      fields["train_batch_size"].default, fields["max_seq_length"].default)


def test_the_table_of_saved_rows():
  def row(side, seed, accuracy, speed):
    return dict(side=side, seed=seed, config={"model": "m"},
                cpu={"avx512_bf16": True, "amx_bf16": False},
                dev_accuracy=accuracy, dev_accuracy_best=accuracy,
                train_examples_per_s=speed, eval_examples_per_s=2 * speed)
  table = finetune_peer.format_table(
      [row("ours", 1, 0.8, 30.0), row("transformers", 1, 0.9, 20.0),
       row("ours", 2, 0.82, 34.0), row("transformers", 2, 0.88, 24.0)])
  assert "avx512_bf16 yes" in table and "amx_bf16 no" in table
  assert "| ours | 2 | 0.8100 ± 0.0141 | 0.8100 ± 0.0141 | 32.0 ± 2.8 |" in (
      table)
  last = table.splitlines()[-1]
  assert last.startswith("| ours / transformers | | Welch p ")
  assert "| 1.45x | - | 1.45x | - |" in last
