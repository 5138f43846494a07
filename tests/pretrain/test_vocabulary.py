"""The WordPiece vocabulary learner (pretrain/dataset_builder/vocabulary.py)."""

import glob
import os

import pytest

from text import tokenization
from pretrain.dataset_builder.vocabulary import build_vocab
from util.cli import run_main
from util.errors import UserError
from tests import paths

CORPUS = os.path.join(paths.FIXTURES,
                      "pretraining_dataset")


def _corpus_lines():
  lines = []
  for path in sorted(glob.glob(os.path.join(CORPUS, "*", "*.txt"))):
    with open(path, encoding="utf-8") as f:
      lines += f.read().split("\n")
  return lines


def test_build_vocab(tmp_path):
  out = tmp_path / "vocab.txt"
  vocab = build_vocab(CORPUS, str(out), vocab_size=300)
  assert vocab[:5] == list(tokenization.SPECIAL_TOKENS)
  assert len(vocab) <= 300
  lines = out.read_text(encoding="utf-8").split("\n")
  assert lines[:-1] == vocab and lines[-1] == ""
  tok = tokenization.WordPieceTokenizer(str(out))
  assert tok.pad_id == 0
  ids = [i for line in tok.encode_batch(_corpus_lines()) for i in line]
  assert len(ids) > 1000 and tok.unk_id not in ids  # every character is in
  assert max(len(tok.inv_vocab[i]) for i in ids) > 3  # real word pieces


def test_build_vocab_cli_errors(tmp_path, capsys):
  import build_vocab as cli  # pylint: disable=g-import-not-at-top
  with pytest.raises(SystemExit) as e:
    run_main(cli.main, ["--corpus-dir", str(tmp_path / "missing"),
                        "--output", str(tmp_path / "v.txt")])
  assert e.value.code == 2
  assert "missing does not exist" in capsys.readouterr().err
  (tmp_path / "bin").mkdir()
  (tmp_path / "bin" / "x.dat").write_bytes(b"\x00\x01\x02")
  with pytest.raises(UserError, match="no usable text"):
    build_vocab(str(tmp_path / "bin"), str(tmp_path / "v.txt"))
  assert not (tmp_path / "v.txt").exists()
