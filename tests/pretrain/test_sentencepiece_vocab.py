"""build_vocab.py trains SentencePiece models (unigram, BPE) that our
tokenizer and the dataset builder read; the vocabulary layout rule; bad
SentencePiece models are one `error:` line and exit 2."""

import json
import os
import subprocess
import sys

import pytest
import sentencepiece as spm

import build_pretraining_dataset
import build_vocab
from text import tokenization
from tests import paths
from tests import sentencepiece_fixtures as spf
from util.errors import UserError


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_trains_a_model_our_tokenizer_and_the_builder_read(tmp_path,
                                                           model_type):
  model = spf.train(tmp_path, model_type)
  tok = tokenization.SentencePieceTokenizer(model)
  assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (
      0, 1, 2, 3, 4)
  assert tok.vocab_size == 400
  sp = spm.SentencePieceProcessor(model_file=model)
  assert sp.pad_id() == 0 and sp.unk_id() == 1 and sp.bos_id() == -1
  for script, text in spf.SCRIPTS.items():
    ids = tok.encode(text)
    assert tok.unk_id not in ids, script
    # At least one piece of the script itself (not only bytes).
    assert any(not tok.inv_vocab[i].startswith("<0x") and
               tok.inv_vocab[i].strip("\u2581") for i in ids), script
  for text in spf.TEXTS:  # Unseen characters fall back to bytes.
    assert tok.unk_id not in tok.encode(text), text
  assert "<0xCE>" in tok.tokenize("\u03a9")  # Omega: 0xCE 0xA9.
  assert sp.decode(tok.encode(spf.TEXTS[4])) == spf.TEXTS[4]

  out = tmp_path / "shards"
  assert build_pretraining_dataset.main([
      "--corpus-dir", str(tmp_path / "corpus"), "--sentencepiece-model",
      model, "--output-dir", str(out), "--max-seq-length", "32",
      "--num-shards", "1"]) == 0
  manifest = json.loads((out / "manifest.json").read_text())
  assert manifest["coverage"] == 1.0 and manifest["format"]["cls_id"] == 2
  assert manifest["settings"]["sentencepiece_model"] == model


def test_normalization_choices(tmp_path):
  folded = tokenization.SentencePieceTokenizer(spf.train(
      tmp_path / "cf", "unigram", 400, "--lower-case"))
  assert folded.encode("CAFÉ ПРИВЕТ") == folded.encode("café привет")
  cased = tokenization.SentencePieceTokenizer(spf.train(
      tmp_path / "nfkc", "unigram", 400, "--normalization", "nfkc"))
  assert cased.encode("CAFÉ") != cased.encode("café")
  # NFKC: full-width letters are the ASCII ones; identity keeps them.
  assert cased.encode("\uff23af\u00e9") == cased.encode("Caf\u00e9")
  raw = tokenization.SentencePieceTokenizer(spf.train(
      tmp_path / "identity", "unigram", 400, "--normalization", "identity"))
  assert raw.encode("\uff23af\u00e9") != raw.encode("Caf\u00e9")


def test_build_vocab_option_errors(tmp_path, capsys):
  corpus = spf.write_corpus(tmp_path / "corpus")
  cases = [
      (("unigram", "sp.txt"), "name ends in .model"),
      (("wordpiece", "v.model"), "is a SentencePiece model's"),
      (("wordpiece", "vocab.txt", "--byte-fallback"),
       "--byte-fallback: SentencePiece option"),
      (("bpe", "x.model", "--normalization", "identity", "--lower-case"),
       "cannot lower-case"),
      (("bpe", "y.model", "--character-coverage", "0"),
       "--character-coverage must be in"),
      (("unigram", "z.model", "--vocab-size", "100000"),
       "sentencepiece cannot train a unigram model of --vocab-size 100000"),
  ]
  for (model_type, name, *extra), message in cases:
    argv = spf.build_vocab_args(corpus, tmp_path / name, model_type, 300)
    line = spf.one_error_line(capsys, build_vocab.main, argv + extra)
    assert message in line, line
    assert not (tmp_path / name).exists()


def test_one_vocabulary_per_directory(tmp_path, capsys):
  corpus = spf.write_corpus(tmp_path / "corpus")
  data = tmp_path / "data"
  data.mkdir()
  (data / "vocab.txt").write_text("\n".join(tokenization.SPECIAL_TOKENS))
  model = data / "sentencepiece.model"
  line = spf.one_error_line(capsys, build_vocab.main, spf.build_vocab_args(
      corpus, model, "unigram", 300, "--overwrite"))
  assert "vocab.txt is beside it" in line and "never both" in line
  assert not model.exists()
  model.write_bytes(b"")  # As if copied in by hand.
  for flag, path in (("--vocab-file", data / "vocab.txt"),
                     ("--sentencepiece-model", model)):
    line = spf.one_error_line(
        capsys, build_pretraining_dataset.main,
        ["--corpus-dir", corpus, flag, str(path), "--output-dir",
         str(tmp_path / "out")])
    assert "%s %s:" % (flag, path) in line and "never both" in line
  line = spf.one_error_line(
      capsys, build_pretraining_dataset.main,
      ["--corpus-dir", corpus, "--vocab-file", str(data / "vocab.txt"),
       "--sentencepiece-model", str(model), "--output-dir",
       str(tmp_path / "out")])
  assert "not both" in line
  assert not (tmp_path / "out").exists()


def test_model_without_special_pieces_is_one_error_line(tmp_path):
  corpus, model = spf.plain_model(tmp_path)
  with pytest.raises(UserError, match=r"lacks the special token\(s\) \[PAD\] "
                     r"\[UNK\] \[CLS\] \[SEP\] \[MASK\]"):
    tokenization.create_tokenizer(sentencepiece_model=model)
  proc = subprocess.run(
      [sys.executable, os.path.join(paths.REPO,
                                    "build_pretraining_dataset.py"),
       "--corpus-dir", corpus, "--sentencepiece-model", model,
       "--output-dir", str(tmp_path / "out")],
      cwd=paths.REPO, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert proc.returncode == 2, proc.stderr
  lines = proc.stderr.strip().split("\n")
  assert len(lines) == 1 and lines[0].startswith("error: %s lacks" % model)
  assert "build_vocab.py --model-type unigram or bpe" in lines[0]
  assert not (tmp_path / "out").exists()
