"""Writes pre-training examples (TFRecord shards) from a directory of raw text.

Each example is `[CLS] A [SEP] B [SEP]` padded to max_seq_length, with the
int64 features input_ids, input_mask and segment_ids, as in ELECTRA's
build_pretraining_dataset.py. What differs from the original:

  * No text is dropped. The original appends whole lines until an example is
    full and truncates the overflow, which loses most of a corpus whose lines
    are long (a speech or a chapter per line). Here long lines are split into
    sentences, and the sentence that overflows an example continues in the
    next one. The manifest reports the coverage (tokens written as
    themselves / corpus tokens: [UNK] does not count); a build where more
    than --max-unk-fraction of the tokens are [UNK] is refused.
  * Segments stay in text order: once a sentence went to segment B, the rest
    follow it (the original could move a short later sentence into A).
  * The output is the same for a seed whatever --num-processes is: files are
    cut into fixed chunks (at blank lines where possible), each chunk's random
    choices come from a generator seeded by (seed, file, chunk), and examples
    are dealt to the shards round-robin in corpus order.
  * Unreadable, binary, non-UTF-8 and empty files are skipped with a warning
    and listed in manifest.json; optionally a fraction of the documents goes
    to held-out shards.

The builder itself is the package pretrain/dataset_builder/.

Usage:
  python build_pretraining_dataset.py --corpus-dir data/corpus \
      --vocab-file vocab.txt --output-dir data/pretrain_tfrecords
"""

import argparse
import time

from util.cli import tensorflow_startup

tensorflow_startup()

# pylint: disable=g-import-not-at-top
from text import tokenization
from pretrain.dataset_builder.build import build_dataset
from pretrain.dataset_builder.build import cpu_seconds
from pretrain.dataset_builder.build import MAX_UNK_FRACTION
from pretrain.dataset_builder import used_shards
from util.cli import run_main
from util.errors import UserError
from text import vocab_fingerprint
from text import vocab_layout
# pylint: enable=g-import-not-at-top


def parse_args(argv=None):
  parser = argparse.ArgumentParser(
      description="Writes ELECTRA pre-training TFRecords from raw text.")
  parser.add_argument("--corpus-dir", required=True,
                      help="Directory of UTF-8 text files (read recursively).")
  parser.add_argument("--vocab-file",
                      help="WordPiece vocab.txt (see build_vocab.py).")
  parser.add_argument("--sentencepiece-model",
                      help="A SentencePiece model (see build_vocab.py "
                      "--model-type), instead of --vocab-file; its own "
                      "normalization applies.")
  parser.add_argument("--output-dir", required=True,
                      help="Where the shards and manifest.json go.")
  parser.add_argument("--max-seq-length", type=int, default=128,
                      help="Tokens per example (default 128).")
  parser.add_argument("--num-processes", type=int, default=1,
                      help="Worker processes (default 1); the output does "
                      "not depend on it.")
  parser.add_argument("--num-shards", type=int, default=8,
                      help="Training shards (and held-out shards) to write.")
  parser.add_argument("--blanks-separate-docs",
                      action=argparse.BooleanOptionalAction, default=True,
                      help="Whether a blank line ends a document (default "
                      "yes); with --no-blanks-separate-docs a file is one "
                      "document and examples run across paragraphs.")
  # --lower-case / --no-lower-case: build_vocab.py's spelling, also accepted.
  parser.add_argument("--do-lower-case", "--lower-case",
                      action=argparse.BooleanOptionalAction, default=True,
                      help="Lower-case the text (default yes).")
  parser.add_argument("--strip-accents", action=argparse.BooleanOptionalAction,
                      default=None, help="Strip accents (default: same as "
                      "--do-lower-case, like BERT).")
  parser.add_argument("--heldout-fraction", type=float, default=0.0,
                      help="Fraction of documents written to "
                      "heldout_data.tfrecord-* for evaluation (default 0).")
  parser.add_argument("--seed", type=int, default=1234,
                      help="Seed of the packing and held-out choices.")
  parser.add_argument("--max-unk-fraction", type=float,
                      default=MAX_UNK_FRACTION,
                      help="Refuse the build when a larger share of the "
                      "tokens written are [UNK] (default %(default)s): the "
                      "vocabulary does not cover the corpus.")
  parser.add_argument("--overwrite", action="store_true",
                      help="Replace the shards and manifest of a non-empty "
                      "--output-dir.")
  parser.add_argument("--overwrite-used", action="store_true",
                      help="--overwrite, even when a model under the data "
                      "directory (the --output-dir's parent) records those "
                      "shards as its training data (refused otherwise).")
  args = parser.parse_args(argv)
  args.overwrite = args.overwrite or args.overwrite_used
  return args


def main(argv=None):
  start, start_cpu = time.time(), cpu_seconds()
  args = parse_args(argv)
  if bool(args.vocab_file) == bool(args.sentencepiece_model):
    raise UserError("give --vocab-file (a WordPiece vocab.txt) or "
                    "--sentencepiece-model, %s." % (
                        "not both" if args.vocab_file else "one of them"))
  vocab_layout.check_one_vocabulary(
      args.vocab_file or args.sentencepiece_model,
      "--vocab-file" if args.vocab_file else "--sentencepiece-model")
  if args.overwrite:  # Before any work: shards a model trained on.
    used_shards.check_rebuild(args.output_dir, args.overwrite_used)
  tokenizer = tokenization.create_tokenizer(
      vocab_file=args.vocab_file, sentencepiece_model=args.sentencepiece_model,
      do_lower_case=args.do_lower_case, strip_accents=args.strip_accents,
      single_thread=True)
  settings = {"vocab_file": args.vocab_file,
              "sentencepiece_model": args.sentencepiece_model,
              "vocab_fingerprint": vocab_fingerprint.fingerprint(
                  args.sentencepiece_model or args.vocab_file),
              "do_lower_case": args.do_lower_case,
              "strip_accents": getattr(tokenizer, "strip_accents", None)}
  manifest = build_dataset(
      args.corpus_dir, args.output_dir, tokenizer,
      max_seq_length=args.max_seq_length, num_processes=args.num_processes,
      num_shards=args.num_shards,
      blanks_separate_docs=args.blanks_separate_docs,
      heldout_fraction=args.heldout_fraction, seed=args.seed,
      overwrite=args.overwrite, settings=settings, start_time=start,
      start_cpu=start_cpu, max_unk_fraction=args.max_unk_fraction)
  print("wrote %d training and %d held-out examples to %s: %d of %d corpus "
        "tokens (coverage %.2f%%, [UNK] not counted), %d files read, %d "
        "skipped, %.1f s, %.1f MB/s" % (
            manifest["examples"]["train"], manifest["examples"]["heldout"],
            args.output_dir, manifest["tokens_written"]["total"],
            manifest["corpus_tokens"], 100 * manifest["coverage"],
            manifest["files"]["read"], manifest["files"]["skipped"],
            manifest["elapsed_seconds"], manifest["mb_per_second"]))
  for note in manifest["notes"]:
    print("note: " + note)
  return 0


if __name__ == "__main__":
  run_main(main)
