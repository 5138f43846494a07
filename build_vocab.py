"""Learns a WordPiece vocabulary (vocab.txt) from a directory of raw text.

Uses tensorflow-text's WordPiece learner on text normalized like the
tokenizer does; [PAD] [UNK] [CLS] [SEP] [MASK] come first ([PAD] has id 0).

Usage:
  python build_vocab.py --corpus-dir data/corpus --output vocab.txt \
      --vocab-size 8000
"""

import argparse
import os
import time

from util.cli import quiet_tensorflow_startup

quiet_tensorflow_startup()

# pylint: disable=g-import-not-at-top
from model.tokenization import SPECIAL_TOKENS
from pretrain.dataset_builder.vocabulary import build_vocab
from util import io_utils
from util.cli import run_main
from util.errors import UserError
# pylint: enable=g-import-not-at-top


def parse_args(argv=None):
  parser = argparse.ArgumentParser(
      description="Learns a WordPiece vocab.txt from raw text files.")
  parser.add_argument("--corpus-dir", required=True,
                      help="Directory of UTF-8 text files (read recursively).")
  parser.add_argument("--output", required=True, help="vocab.txt to write.")
  parser.add_argument("--vocab-size", type=int, default=30522,
                      help="Target vocabulary size (default 30522, BERT's).")
  parser.add_argument("--no-lower-case", dest="lower_case",
                      action="store_false",
                      help="Keep case and accents (default: lower-case and "
                      "strip accents, like BERT uncased).")
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
    raise UserError("--output %s is a directory; give the vocab.txt file to "
                    "write." % path)
  if io_utils.exists(path) and not overwrite:
    raise UserError("--output %s exists; pass --overwrite to replace it "
                    "(shards and models built with it would no longer match "
                    "it), or choose another path." % path)
  io_utils.check_writable(os.path.dirname(os.path.abspath(path)),
                          "choose another --output, or fix its permissions")


def main(argv=None):
  args = parse_args(argv)
  check_output(args.output, args.overwrite)
  start = time.time()
  extra = [t for t in args.reserved_tokens.split(",") if t]
  vocab = build_vocab(
      args.corpus_dir, args.output, vocab_size=args.vocab_size,
      reserved_tokens=list(SPECIAL_TOKENS) + extra,
      lower_case=args.lower_case)
  print("wrote %s: %d tokens in %.1f s" % (args.output, len(vocab),
                                          time.time() - start))
  return 0


if __name__ == "__main__":
  run_main(main)
