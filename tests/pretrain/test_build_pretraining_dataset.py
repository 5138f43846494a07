"""build_pretraining_dataset.py on small fixtures of each corpus layout."""

import glob
import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest

import build_pretraining_dataset as cli
from text import tokenization
from pretrain.dataset_builder import text as text_lib
from pretrain.dataset_builder.build import build_dataset
from pretrain.dataset_builder.output import HELDOUT_PREFIX
from pretrain.dataset_builder.output import TRAIN_PREFIX
from pretrain.dataset_builder.packing import pack_document
from pretrain.dataset_builder.tfrecord_encoding import FEATURES
from pretrain.dataset_builder.tfrecord_encoding import serialize_examples
from util.cli import run_main
from util.errors import UserError
from tests import paths

ROOT = paths.REPO
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
VOCAB = os.path.join(FIXTURES, "tokenization", "vocab.txt")
CORPUS = os.path.join(FIXTURES, "pretraining_dataset")
LAYOUTS = ("wrapped", "oneline", "chapters")


@pytest.fixture(scope="module")
def tokenizer():
  return tokenization.WordPieceTokenizer(VOCAB, single_thread=True)


def _build(tokenizer, corpus_dir, output_dir, **kwargs):
  kwargs.setdefault("max_seq_length", 64)
  kwargs.setdefault("num_shards", 3)
  return build_dataset(str(corpus_dir), str(output_dir), tokenizer, **kwargs)


def _read_examples(output_dir, prefix=TRAIN_PREFIX):
  """All examples in corpus order (shard i % n holds example i)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  paths = sorted(glob.glob(os.path.join(str(output_dir), prefix + "-*")))
  shards = []
  for path in paths:
    shards.append([tf.train.Example.FromString(r.numpy())
                   for r in tf.data.TFRecordDataset(path)])
  examples = []
  for i in range(sum(len(s) for s in shards)):
    feature = shards[i % len(shards)][i // len(shards)].features.feature
    examples.append({k: np.array(feature[k].int64_list.value)
                     for k in FEATURES})
  return examples


def _text_tokens(example, tokenizer):
  """The example's tokens without [CLS], [SEP] and padding."""
  ids, mask = example["input_ids"], example["input_mask"]
  real = ids[:int(mask.sum())]
  return [int(t) for i, t in enumerate(real)
          if i and t != tokenizer.sep_id]


def _corpus_tokens(corpus_dir, tokenizer):
  """Reference: every line of every file tokenized whole, in file order."""
  tokens = []
  for path in sorted(glob.glob(os.path.join(str(corpus_dir), "**", "*"),
                               recursive=True)):
    if os.path.isfile(path):
      with open(path, encoding="utf-8") as f:
        for ids in tokenizer.encode_batch(f.read().splitlines()):
          tokens.extend(ids)
  return tokens


@pytest.mark.parametrize("layout,blanks", [
    ("wrapped", True), ("wrapped", False), ("oneline", True),
    ("chapters", True)])
def test_no_text_dropped(tokenizer, tmp_path, layout, blanks):
  corpus = os.path.join(CORPUS, layout)
  manifest = _build(tokenizer, corpus, tmp_path / "out",
                    blanks_separate_docs=blanks)
  want = _corpus_tokens(corpus, tokenizer)
  got = [t for ex in _read_examples(tmp_path / "out")
         for t in _text_tokens(ex, tokenizer)]
  # Every token of the corpus, in order: no truncation, no loss.
  assert got == want
  assert manifest["corpus_tokens"] == len(want)
  assert manifest["tokens_written"]["total"] == len(want)
  assert manifest["coverage"] >= 0.99
  assert manifest["examples"]["train"] >= len(want) // 61


def test_example_layout(tokenizer, tmp_path):
  length = 64
  _build(tokenizer, CORPUS, tmp_path / "out", max_seq_length=length)
  examples = _read_examples(tmp_path / "out")
  with_b = 0
  lengths = set()
  for ex in examples:
    ids, mask, seg = ex["input_ids"], ex["input_mask"], ex["segment_ids"]
    assert len(ids) == len(mask) == len(seg) == length
    n = int(mask.sum())
    lengths.add(n)
    assert mask.tolist() == [1] * n + [0] * (length - n)
    assert ids[0] == tokenizer.cls_id and ids[n - 1] == tokenizer.sep_id
    assert (ids[n:] == tokenizer.pad_id).all() and (seg[n:] == 0).all()
    seps = [i for i in range(n) if ids[i] == tokenizer.sep_id]
    assert len(seps) in (1, 2) and tokenizer.cls_id not in ids[1:].tolist()
    assert seps[0] > 1  # segment A is never empty
    assert (seg[:seps[0] + 1] == 0).all()
    if len(seps) == 2:
      with_b += 1
      assert seps[1] > seps[0] + 1
      assert (seg[seps[0] + 1:n] == 1).all()
  assert len(examples) > with_b > len(examples) // 4
  assert max(lengths) == length and min(lengths) < length // 2


def test_pack_document_keeps_every_token():
  full = 0
  for trial in range(300):
    rng = random.Random(trial)
    lengths = [rng.choice([0, 1, 3, 20, 61, 200]) for _ in range(rng.randint(
        0, 15))]
    spans = pack_document(lengths, 5, random.Random(trial), 64)
    pos = 5
    for s, a, e in spans:
      assert s == pos < e and s < a <= e and e - s <= 61
      full += e - s == 61
      pos = e
    assert pos == 5 + sum(lengths)
  assert full > 500  # examples are filled, not cut at sentence ends


def test_serialized_examples_parse_back():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  ids = rng.integers(0, 2**31 - 1, size=(6, 40))
  ids[:3] = rng.integers(0, 300, size=(3, 40))  # 1- and 2-byte varints
  mask = rng.integers(0, 2, size=(6, 40))
  seg = rng.integers(0, 2, size=(6, 40))
  spec = {k: tf.io.FixedLenFeature([40], tf.int64)
          for k in FEATURES}
  for i, record in enumerate(serialize_examples(ids, mask, seg)):
    parsed = tf.io.parse_single_example(record, spec)
    assert parsed["input_ids"].numpy().tolist() == ids[i].tolist()
    assert parsed["input_mask"].numpy().tolist() == mask[i].tolist()
    assert parsed["segment_ids"].numpy().tolist() == seg[i].tolist()


def _shard_bytes(output_dir):
  out = {}
  for path in sorted(glob.glob(os.path.join(str(output_dir), "*.tfrecord-*"))):
    with open(path, "rb") as f:
      out[os.path.basename(path)] = f.read()
  return out


def test_same_bytes_whatever_the_number_of_processes(tokenizer, tmp_path,
                                                     monkeypatch):
  # A corpus of every layout, cut into several chunks per file.
  corpus = tmp_path / "corpus"
  shutil.copytree(CORPUS, corpus)
  common = ["--corpus-dir", str(corpus), "--vocab-file", VOCAB,
            "--max-seq-length", "48", "--num-shards", "4", "--seed", "7",
            "--heldout-fraction", "0.2"]
  with monkeypatch.context() as patch:
    patch.setattr(text_lib, "CHUNK_CHARS", 2000)
    cli.main(common + ["--output-dir", str(tmp_path / "p1")])
  # Two processes through the command line (forked workers), same chunks.
  code = ("import sys, build_pretraining_dataset as b; "
          "from pretrain.dataset_builder import text; text.CHUNK_CHARS = 2000; "
          "from util.cli import run_main; run_main(b.main, sys.argv[1:])")
  env = dict(os.environ, PYTHONPATH=ROOT)
  proc = subprocess.run(
      [sys.executable, "-c", code] + common +
      ["--num-processes", "2", "--output-dir", str(tmp_path / "p2")],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
  one, two = _shard_bytes(tmp_path / "p1"), _shard_bytes(tmp_path / "p2")
  assert len(one) == 8 and sorted(one) == sorted(two)
  assert one == two
  manifest = json.loads((tmp_path / "p2" / "manifest.json").read_text())
  assert manifest["settings"]["num_processes"] == 2
  assert manifest["examples"]["heldout"] > 0
  assert manifest["coverage"] == 1.0
  assert max(f["chunks"] for f in manifest["files"]["read_files"]) > 1
  # Another seed packs differently.
  _build(tokenizer, corpus, tmp_path / "s8", max_seq_length=48, num_shards=4,
         seed=8, heldout_fraction=0.2)
  assert _shard_bytes(tmp_path / "s8") != one


def test_heldout_documents(tokenizer, tmp_path):
  manifest = _build(tokenizer, os.path.join(CORPUS, "wrapped"),
                    tmp_path / "out", heldout_fraction=0.3)
  heldout = _read_examples(tmp_path / "out", HELDOUT_PREFIX)
  train = _read_examples(tmp_path / "out")
  assert len(heldout) == manifest["examples"]["heldout"] > 0
  assert len(train) == manifest["examples"]["train"] > len(heldout)
  tokens = sum(len(_text_tokens(ex, tokenizer)) for ex in heldout + train)
  assert tokens == manifest["corpus_tokens"]
  assert len(manifest["shards"]["heldout"]) == 3


def test_bad_files_are_skipped_and_counted(tokenizer, tmp_path, capsys):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  shutil.copy(os.path.join(CORPUS, "oneline", "sotu_1819_james_monroe_dr.txt"),
              corpus / "good.txt")
  (corpus / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
  (corpus / "latin1.txt").write_bytes("caf\u00e9 cr\u00e8me".encode("latin-1"))
  (corpus / "empty.txt").write_bytes(b"")
  (corpus / ".hidden").write_text("secret")
  manifest = _build(tokenizer, corpus, tmp_path / "out")
  err = capsys.readouterr().err
  reasons = {s["path"]: s["reason"]
             for s in manifest["files"]["skipped_files"]}
  assert sorted(reasons) == [".hidden", "empty.txt", "image.png",
                             "latin1.txt"]
  assert reasons["image.png"].startswith("binary")
  assert reasons["latin1.txt"].startswith("not UTF-8")
  assert reasons["empty.txt"] == "empty"
  assert manifest["files"]["skipped"] == 4 and manifest["files"]["read"] == 1
  assert manifest["files"]["total"] == 5
  for name in reasons:
    assert "skipping %s" % name in err
  assert "[build] files 4/4" in err and "MB/s" in err and "ETA" in err
  assert manifest["examples"]["train"] > 0


def test_corpus_without_text(tokenizer, tmp_path):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  with pytest.raises(UserError, match="holds no files"):
    _build(tokenizer, corpus, tmp_path / "out")
  (corpus / "blob.bin").write_bytes(b"\x00\xff\x00")
  (corpus / "blank.txt").write_text(" \n\n \t\n")
  with pytest.raises(UserError, match="no usable text") as e:
    _build(tokenizer, corpus, tmp_path / "out")
  assert "blob.bin: binary" in str(e.value)
  assert not (tmp_path / "out").exists()


def test_existing_output_dir(tokenizer, tmp_path):
  corpus = os.path.join(CORPUS, "oneline")
  out = tmp_path / "out"
  out.mkdir()
  (out / "notes.txt").write_text("mine")
  (out / (TRAIN_PREFIX + "-00000-of-00009")).write_bytes(b"old")
  with pytest.raises(UserError, match="not empty.*--overwrite"):
    _build(tokenizer, corpus, out)
  _build(tokenizer, corpus, out, overwrite=True)
  names = sorted(os.listdir(out))
  assert names == ["manifest.json", "notes.txt"] + [
      TRAIN_PREFIX + "-%05d-of-00003" % i for i in range(3)]


def test_command_line_errors_exit_2(tmp_path, capsys):
  with pytest.raises(SystemExit) as e:
    run_main(cli.main, [
        "--corpus-dir", str(tmp_path / "none"), "--vocab-file", VOCAB,
        "--output-dir", str(tmp_path / "out")])
  assert e.value.code == 2
  assert "none does not exist" in capsys.readouterr().err
  with pytest.raises(SystemExit) as e:
    run_main(cli.main, [
        "--corpus-dir", CORPUS, "--vocab-file", str(tmp_path / "v.txt"),
        "--output-dir", str(tmp_path / "out")])
  assert e.value.code == 2
  assert "v.txt does not exist" in capsys.readouterr().err
  with pytest.raises(SystemExit) as e:
    run_main(cli.main, [
        "--corpus-dir", CORPUS, "--vocab-file", VOCAB, "--output-dir",
        str(tmp_path / "out"), "--heldout-fraction", "1.5"])
  assert e.value.code == 2
  assert "--heldout-fraction" in capsys.readouterr().err


def test_long_line_without_sentence_ends(tokenizer, tmp_path):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  words = ["want", "un", "the", "walter", "hall"]
  (corpus / "run_on.txt").write_text(
      " ".join(words[i % 5] for i in range(3000)))
  manifest = _build(tokenizer, corpus, tmp_path / "out", max_seq_length=32)
  assert manifest["coverage"] == 1.0 and manifest["corpus_tokens"] == 3000
  assert manifest["examples"]["train"] >= 3000 // 29


def test_sentencepiece_model(tmp_path):
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  text = tmp_path / "text.txt"
  shutil.copy(os.path.join(CORPUS, "wrapped", "persuasion_opening.txt"), text)
  spm.SentencePieceTrainer.train(
      input=str(text), model_prefix=str(tmp_path / "sp"), vocab_size=200,
      bos_id=-1, eos_id=-1, pad_id=0, pad_piece="[PAD]", unk_id=1,
      unk_piece="[UNK]", user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"],
      minloglevel=2)
  out = tmp_path / "out"
  run_main(cli.main, [
      "--corpus-dir", os.path.join(CORPUS, "wrapped"), "--sentencepiece-model",
      str(tmp_path / "sp.model"), "--output-dir", str(out),
      "--max-seq-length", "32", "--num-shards", "1"])
  manifest = json.loads((out / "manifest.json").read_text())
  assert manifest["coverage"] >= 0.99 and manifest["format"]["cls_id"] == 2
  ex = _read_examples(out)[0]
  assert ex["input_ids"][0] == 2 and 3 in ex["input_ids"].tolist()


def _documents_corpus(tmp_path, num_docs, words_per_doc=400):
  """`num_docs` files of real text (one document each with --no-blanks-...)."""
  with open(os.path.join(CORPUS, "wrapped", "persuasion_opening.txt"),
            encoding="utf-8") as f:
    words = f.read().split()
  corpus = tmp_path / ("corpus_%d" % num_docs)
  corpus.mkdir()
  for d in range(num_docs):
    start = (d * words_per_doc) % max(1, len(words) - words_per_doc)
    (corpus / ("doc%d.txt" % d)).write_text(
        " ".join(words[start:start + words_per_doc]) + "\n", encoding="utf-8")
  return corpus


def _shard_counts(output_dir, prefix):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return [sum(1 for _ in tf.data.TFRecordDataset(p)) for p in
          sorted(glob.glob(os.path.join(str(output_dir), prefix + "-*")))]


@pytest.mark.parametrize("num_docs", [1, 3, 7])
def test_heldout_fraction_always_yields_heldout_examples(tokenizer, tmp_path,
                                                         num_docs):
  corpus = _documents_corpus(tmp_path, num_docs)
  out = tmp_path / "out"
  manifest = _build(tokenizer, corpus, out, heldout_fraction=0.05,
                    blanks_separate_docs=False, num_shards=4)
  train = _shard_counts(out, TRAIN_PREFIX)
  heldout = _shard_counts(out, HELDOUT_PREFIX)
  assert heldout and min(heldout) > 0 and min(train) > 0
  assert sum(heldout) == manifest["examples"]["heldout"] >= 1
  assert sum(train) == manifest["examples"]["train"]
  total = sum(train) + sum(heldout)
  assert manifest["heldout_unit"] in ("document", "example")
  if manifest["heldout_unit"] == "example":
    assert sum(heldout) == max(1, round(0.05 * total))
  # Every token still written once, and the names say how many shards exist.
  examples = (_read_examples(out) +
              _read_examples(out, HELDOUT_PREFIX))
  tokens = sum(len(_text_tokens(ex, tokenizer)) for ex in examples)
  assert tokens == manifest["corpus_tokens"] == (
      manifest["tokens_written"]["train"] +
      manifest["tokens_written"]["heldout"])
  for split in ("train", "heldout"):
    names = [s["file"] for s in manifest["shards"][split]]
    assert all(n.endswith("-of-%05d" % len(names)) for n in names)
    assert all(s["examples"] > 0 for s in manifest["shards"][split])


def test_heldout_fallback_holds_out_the_last_examples(tokenizer, tmp_path):
  corpus = _documents_corpus(tmp_path, 1, words_per_doc=2000)
  without = _build(tokenizer, corpus, tmp_path / "a",
                   blanks_separate_docs=False)
  with_heldout = _build(tokenizer, corpus, tmp_path / "b",
                        heldout_fraction=0.1, blanks_separate_docs=False)
  assert with_heldout["heldout_unit"] == "example"
  everything = _read_examples(tmp_path / "a")
  train = _read_examples(tmp_path / "b")
  heldout = _read_examples(tmp_path / "b", HELDOUT_PREFIX)
  k = len(heldout)
  assert k == max(1, round(0.1 * len(everything))) == (
      with_heldout["examples"]["heldout"])
  assert [e["input_ids"].tolist() for e in train + heldout] == [
      e["input_ids"].tolist() for e in everything]
  assert without["examples"]["train"] == len(everything)


def test_heldout_fraction_zero_writes_no_heldout_shards(tokenizer, tmp_path):
  corpus = _documents_corpus(tmp_path, 3)
  manifest = _build(tokenizer, corpus, tmp_path / "out",
                    blanks_separate_docs=False)
  assert not glob.glob(str(tmp_path / "out" / HELDOUT_PREFIX) +
                       "*")
  assert manifest["heldout_unit"] is None
  assert manifest["examples"]["heldout"] == 0


def test_fewer_examples_than_shards_writes_fewer_shards(tokenizer, tmp_path):
  corpus = _documents_corpus(tmp_path, 1, words_per_doc=60)
  manifest = _build(tokenizer, corpus, tmp_path / "out", num_shards=8,
                    blanks_separate_docs=False)
  counts = _shard_counts(tmp_path / "out", TRAIN_PREFIX)
  assert len(counts) == manifest["examples"]["train"] < 8
  assert min(counts) == 1
  assert manifest["notes"] and "of the 8 requested" in manifest["notes"][0]
  assert not [n for n in os.listdir(tmp_path / "out") if n.startswith(".tmp")]


def test_corpus_too_small_to_hold_out_is_exit_2(tmp_path, capsys):
  corpus = _documents_corpus(tmp_path, 1, words_per_doc=10)
  out = tmp_path / "out"
  with pytest.raises(SystemExit) as exit_info:
    run_main(cli.main, [
        "--corpus-dir", str(corpus), "--vocab-file", VOCAB,
        "--output-dir", str(out), "--max-seq-length", "64",
        "--heldout-fraction", "0.05", "--no-blanks-separate-docs"])
  assert exit_info.value.code == 2
  err = capsys.readouterr().err
  assert "too few to hold out" in err and "--heldout-fraction 0" in err
  assert not os.path.exists(out) or not os.listdir(out)


def test_output_dir_on_another_filesystem_gets_the_same_bytes(tmp_path):
  """--output-dir may be any tf.io.gfile path (gs://...): on TensorFlow's
  in-memory ram:// filesystem, with 2 forked worker processes, the shards
  and manifest hold the bytes of a local build."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  common = ["--corpus-dir", CORPUS, "--vocab-file", VOCAB,
            "--max-seq-length", "48", "--num-shards", "3", "--seed", "7",
            "--heldout-fraction", "0.2", "--num-processes", "2"]
  ram = "ram://builder-%d/out" % os.getpid()
  assert cli.main(common + ["--output-dir", str(tmp_path / "local")]) == 0
  assert cli.main(common + ["--output-dir", ram]) == 0
  local = _shard_bytes(tmp_path / "local")
  remote = {name: tf.io.gfile.GFile(ram + "/" + name, "rb").read()
            for name in tf.io.gfile.listdir(ram) if name in local}
  assert len(local) == 6 and remote == local
  assert not [n for n in tf.io.gfile.listdir(ram) if n.startswith(".tmp")]
  manifest = json.loads(tf.io.gfile.GFile(ram + "/manifest.json").read())
  assert manifest["examples"]["heldout"] > 0
