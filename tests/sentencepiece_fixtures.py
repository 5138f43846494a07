"""A small multilingual corpus and SentencePiece models trained on it.

Accented Latin, Cyrillic, CJK and emoji, written by the tests themselves;
models come from build_vocab.py's own entry point, as a user makes them.
"""

import pytest

from util.cli import run_main

CORPUS_LINES = (
    "Café crème brûlée à la française, où l'été est déjà là.",
    "Ein schöner Tag in München: Größe, Übermut und Äpfel.",
    "Привет, мир! Москва — столица России, а Санкт-Петербург красив.",
    "Добрый вечер, друзья. Как дела у вас сегодня?",
    "東京は日本の首都です。北京是中国的首都。",
    "서울은 한국의 수도입니다.",
    "I love pizza 🍕 and coffee ☕ every morning 😀 with friends 👍.",
    "",
    "La niña comió piñata y jalapeños en São Paulo.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
)
# Text for the comparisons: every script of the corpus, plus characters it
# lacks ("Ω", "ß" alone, "ƒ") that byte fallback spells as bytes.
TEXTS = (
    "Café crème à la française",
    "Привет, мир! Как дела?",
    "東京は日本の首都です。",
    "pizza 🍕 coffee ☕ 😀",
    "Ωμέγα ƒ — München Größe",
    "  extra   spaces\tand a tab  ",
)
# The scripts CORPUS_LINES holds, each as text that must map to pieces
# without [UNK].
SCRIPTS = {"latin": "crème brûlée", "cyrillic": "столица", "cjk": "首都",
           "emoji": "🍕😀"}


def write_corpus(directory):
  """CORPUS_LINES as two files of `directory` (created); returns its path."""
  directory.mkdir(parents=True, exist_ok=True)
  half = len(CORPUS_LINES) // 2
  for name, lines in (("a.txt", CORPUS_LINES[:half]),
                      ("b.txt", CORPUS_LINES[half:])):
    (directory / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
  return str(directory)


def build_vocab_args(corpus_dir, output, model_type, vocab_size, *extra):
  return ["--corpus-dir", str(corpus_dir), "--output", str(output),
          "--model-type", model_type, "--vocab-size", str(vocab_size)] + list(
              extra)


def train(tmp_path, model_type, vocab_size=400, *extra):
  """A model of build_vocab.py (byte fallback, every character a piece) on
  the corpus, as tmp_path/<model_type>/sentencepiece.model."""
  import build_vocab  # pylint: disable=g-import-not-at-top
  corpus = write_corpus(tmp_path / "corpus")
  output = tmp_path / model_type / "sentencepiece.model"
  assert run_main(build_vocab.main, build_vocab_args(
      corpus, output, model_type, vocab_size, "--byte-fallback",
      "--character-coverage", "1.0", *extra)) == 0
  return str(output)


def plain_model(tmp_path):
  """A SentencePiece model of the corpus trained without ELECTRA's special
  pieces (as tmp_path/plain.model); returns (corpus dir, model path)."""
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  corpus = write_corpus(tmp_path / "corpus")
  prefix = str(tmp_path / "plain")
  spm.SentencePieceTrainer.train(
      input=str(tmp_path / "corpus" / "a.txt"), model_prefix=prefix,
      vocab_size=100, character_coverage=1.0, minloglevel=2)
  return corpus, prefix + ".model"


def one_error_line(capsys, main, argv):
  """Runs `main(argv)` as a command does; asserts exit 2 and one stderr
  line, "error: ...", and returns that line."""
  with pytest.raises(SystemExit) as e:
    run_main(main, argv)
  assert e.value.code == 2
  err = capsys.readouterr().err
  lines = err.strip().split("\n")
  assert len(lines) == 1 and lines[0].startswith("error: "), err
  return lines[0]
