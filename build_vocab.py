"""Learns a vocabulary from a directory of raw text: WordPiece or SentencePiece.

`--model-type wordpiece` (the default) writes a WordPiece vocab.txt with
tensorflow-text's learner, on text normalized like the tokenizer does;
`unigram` or `bpe` trains a SentencePiece model (a `.model` file) with the
sentencepiece library. Either way [PAD] [UNK] [CLS] [SEP] [MASK] come first
([PAD] has id 0). A directory holds one of vocab.txt and
sentencepiece.model, never both (text/vocab_layout.py).

Usage:
  python build_vocab.py --corpus-dir data/corpus --output vocab.txt \
      --vocab-size 8000
  python build_vocab.py --corpus-dir data/corpus --model-type unigram \
      --output data/sentencepiece.model --vocab-size 8000 --byte-fallback
"""

import argparse
import os
import time

from util.cli import tensorflow_startup

tensorflow_startup()

# pylint: disable=g-import-not-at-top
from text.tokenization import SPECIAL_TOKENS
from pretrain.dataset_builder import sentencepiece_vocab as spv
from pretrain.dataset_builder.vocabulary import build_vocab
from util import io_utils
from util import run_lock
from text import vocab_layout
from util.cli import run_main
from util.errors import UserError
# pylint: enable=g-import-not-at-top

_SENTENCEPIECE_ONLY = ("normalization", "byte_fallback", "character_coverage")


def parse_args(argv=None):
  parser = argparse.ArgumentParser(
      description="Learns a WordPiece vocab.txt or a SentencePiece model "
      "from raw text files.")
  parser.add_argument("--corpus-dir", required=True,
                      help="Directory of UTF-8 text files (read recursively).")
  parser.add_argument("--output", required=True,
                      help="File to write: a vocab.txt for wordpiece, a "
                      ".model for unigram and bpe.")
  parser.add_argument("--model-type", default="wordpiece",
                      choices=("wordpiece",) + spv.MODEL_TYPES,
                      help="wordpiece (default): a WordPiece vocab.txt; "
                      "unigram or bpe: a SentencePiece model.")
  parser.add_argument("--vocab-size", type=int, default=30522,
                      help="Target vocabulary size (default 30522, BERT's).")
  parser.add_argument("--lower-case", action=argparse.BooleanOptionalAction,
                      default=None,
                      help="Lower-case the text. WordPiece default: yes, "
                      "and strip accents, like BERT uncased (--no-lower-case "
                      "keeps both); SentencePiece default: no (yes "
                      "case-folds in the model's normalization).")
  parser.add_argument("--normalization", choices=spv.NORMALIZATIONS,
                      help="SentencePiece: the model's normalization: "
                      "nmt_nfkc (default; NFKC and SentencePiece's clean-up "
                      "of control characters and spaces), nfkc, identity.")
  parser.add_argument("--byte-fallback", action="store_true",
                      help="SentencePiece: spell characters outside the "
                      "model as UTF-8 bytes (256 pieces) instead of [UNK].")
  parser.add_argument("--character-coverage", type=float,
                      help="SentencePiece: share of the corpus' characters "
                      "kept as pieces (default %g; 1.0 keeps all)." %
                      spv.DEFAULT_CHARACTER_COVERAGE)
  parser.add_argument("--overwrite", action="store_true",
                      help="Replace an existing --output file.")
  parser.add_argument("--reserved-tokens", default="",
                      help="Comma-separated tokens to add after the special "
                      "tokens, e.g. '[unused0],[unused1]'.")
  return parser.parse_args(argv)


def check_output(path, overwrite):
  """Before any work: `path` must be a new file in a writable directory
  (or an existing file with --overwrite); UserError naming it otherwise."""
  if io_utils.is_dir(path):
    raise UserError("--output %s is a directory; give the vocabulary file to "
                    "write." % path)
  if io_utils.exists(path) and not overwrite:
    raise UserError("--output %s exists; pass --overwrite to replace it "
                    "(shards and models built with it would no longer match "
                    "it), or choose another path." % path)
  vocab_layout.check_one_vocabulary(path, "--output")
  io_utils.check_writable(os.path.dirname(os.path.abspath(path)),
                          "choose another --output, or fix its permissions")


def _check_options(args):
  """The flags fit --model-type, and --output's name fits the file kind."""
  if args.model_type == "wordpiece":
    if vocab_layout.is_sentencepiece(args.output):
      raise UserError("--output %s: a name ending in .model is a "
                      "SentencePiece model's; name a WordPiece vocabulary "
                      "e.g. vocab.txt, or pass --model-type unigram or bpe." %
                      args.output)
    given = ["--" + o.replace("_", "-") for o in _SENTENCEPIECE_ONLY
             if getattr(args, o) not in (None, False)]
    if given:
      raise UserError("%s: SentencePiece option(s); pass --model-type "
                      "unigram or bpe, or leave them out." %
                      " and ".join(given))
    return
  if not vocab_layout.is_sentencepiece(args.output):
    raise UserError("--output %s: a SentencePiece model's name ends in "
                    ".model, e.g. %s." % (args.output,
                                          vocab_layout.SENTENCEPIECE_FILE))
  if args.character_coverage is None:
    args.character_coverage = spv.DEFAULT_CHARACTER_COVERAGE
  if not 0 < args.character_coverage <= 1:
    raise UserError("--character-coverage must be in (0, 1], got %g." %
                    args.character_coverage)
  args.normalization = args.normalization or spv.DEFAULT_NORMALIZATION
  spv.normalization_rule(args.normalization, bool(args.lower_case))


def main(argv=None):
  args = parse_args(argv)
  _check_options(args)
  check_output(args.output, args.overwrite)
  # Two builders of one --output: the second stops at once, naming the first.
  directory = os.path.dirname(os.path.abspath(args.output))
  with run_lock.locked(directory, what="--output %s in" % args.output,
                       fix="choose another --output",
                       name=".%s.lock" % os.path.basename(args.output)):
    return _build(args)


def _build(args):
  """Learns the vocabulary of `args` and writes it (holding its lock)."""
  start = time.time()
  reserved = list(SPECIAL_TOKENS) + [
      t for t in args.reserved_tokens.split(",") if t]
  if args.model_type == "wordpiece":
    size = len(build_vocab(
        args.corpus_dir, args.output, vocab_size=args.vocab_size,
        reserved_tokens=reserved, lower_case=args.lower_case is not False))
    what = "tokens"
  else:
    size = spv.train_sentencepiece(
        args.corpus_dir, args.output, args.vocab_size, args.model_type,
        reserved_tokens=reserved, normalization=args.normalization,
        lower_case=bool(args.lower_case), byte_fallback=args.byte_fallback,
        character_coverage=args.character_coverage)
    what = "pieces (SentencePiece %s)" % args.model_type
  print("wrote %s: %d %s in %.1f s" % (args.output, size, what,
                                      time.time() - start))
  return 0


if __name__ == "__main__":
  run_main(main)
