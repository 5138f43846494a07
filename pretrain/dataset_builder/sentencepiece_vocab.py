"""Trains a SentencePiece model (unigram or BPE) from a corpus directory.

The model holds ELECTRA's special tokens as pieces, with the ids a
WordPiece vocab.txt of build_vocab.py gives them: [PAD] 0 (the model's
padding piece), [UNK] 1 (its unknown piece), [CLS] 2, [SEP] 3, [MASK] 4
(user-defined pieces), then any other reserved tokens, then the learned
pieces. text.tokenization.SentencePieceTokenizer reads it; its own
normalization applies at every stage. build_vocab.py is the command line.
"""

import io
import os

from text.tokenization import SPECIAL_TOKENS
from util import corpus as corpus_lib
from util.errors import UserError
from util.io_utils import write_bytes_atomic

MODEL_TYPES = ("unigram", "bpe")
# SentencePiece's normalization rules: "nmt_nfkc" is NFKC plus its
# clean-up of control characters and unusual spaces (its default), "nfkc"
# plain NFKC, "identity" none. Case folding appends "_cf".
NORMALIZATIONS = ("nmt_nfkc", "nfkc", "identity")
DEFAULT_NORMALIZATION = "nmt_nfkc"
DEFAULT_CHARACTER_COVERAGE = 0.9995
# Longer lines are cut at spaces: SentencePiece skips sentences above its
# max_sentence_length (in bytes).
_MAX_SENTENCE_CHARS = 4096
_MAX_SENTENCE_BYTES = 4 * _MAX_SENTENCE_CHARS


def normalization_rule(normalization=DEFAULT_NORMALIZATION, lower_case=False):
  """SentencePiece's normalization_rule_name for a rule and case choice."""
  if normalization not in NORMALIZATIONS:
    raise UserError("--normalization must be one of %s, got %r." % (
        ", ".join(NORMALIZATIONS), normalization))
  if not lower_case:
    return normalization
  if normalization == "identity":
    raise UserError("--normalization identity leaves the text as it is and "
                    "cannot lower-case it; pass --no-lower-case, or choose "
                    "nfkc or nmt_nfkc.")
  return normalization + "_cf"


def _sentences(texts):
  """Non-blank lines of `texts`, lines above _MAX_SENTENCE_CHARS cut at
  spaces into parts below it (a part without spaces is cut anywhere)."""
  for text in texts:
    for line in text.splitlines():
      while len(line) > _MAX_SENTENCE_CHARS:
        cut = line.rfind(" ", 0, _MAX_SENTENCE_CHARS)
        cut = cut if cut > 0 else _MAX_SENTENCE_CHARS
        if line[:cut].strip():
          yield line[:cut]
        line = line[cut:]
      if line.strip():
        yield line


def train_sentencepiece(corpus_dir, output_file, vocab_size, model_type,
                        reserved_tokens=SPECIAL_TOKENS,
                        normalization=DEFAULT_NORMALIZATION, lower_case=False,
                        byte_fallback=False,
                        character_coverage=DEFAULT_CHARACTER_COVERAGE):
  """Trains a SentencePiece model on a corpus directory and writes it.

  Args:
    corpus_dir: directory of UTF-8 text files (read recursively; files that
      are binary, not UTF-8 or empty are skipped with a warning).
    output_file: the `.model` to write (atomically).
    vocab_size: pieces in the model, the special ones included (too many
      for the corpus is an error that names the most it can fill).
    model_type: "unigram" or "bpe".
    reserved_tokens: pieces after the special ones (missing special tokens
      are added).
    normalization: one of NORMALIZATIONS.
    lower_case: case-fold the text (in the model's normalization).
    byte_fallback: spell characters the model lacks as UTF-8 byte pieces
      (<0x00>...<0xFF>, 256 of the pieces) instead of [UNK].
    character_coverage: the share of the corpus' characters the model
      must hold as pieces (1.0: all; the rarest others become [UNK], or
      bytes with byte_fallback).
  Returns:
    the number of pieces.
  Raises:
    UserError: bad options, no usable text, or SentencePiece refusing them
      (e.g. a --vocab-size the corpus cannot fill), naming the cause.
  """
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  if model_type not in MODEL_TYPES:
    raise UserError("model type must be one of %s, got %r." % (
        ", ".join(MODEL_TYPES), model_type))
  rule = normalization_rule(normalization, lower_case)
  user_defined = [t for t in SPECIAL_TOKENS if t not in ("[PAD]", "[UNK]")]
  user_defined += [t for t in reserved_tokens if t not in SPECIAL_TOKENS]
  if vocab_size <= len(user_defined) + 2:
    raise UserError("--vocab-size must be more than the %d reserved tokens, "
                    "got %d." % (len(user_defined) + 2, vocab_size))
  sentences = list(_sentences(corpus_lib.read_corpus(corpus_dir)))
  model = io.BytesIO()
  try:
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=model,
        model_type=model_type, vocab_size=vocab_size,
        normalization_rule_name=rule, byte_fallback=byte_fallback,
        character_coverage=character_coverage,
        pad_id=0, pad_piece="[PAD]", unk_id=1, unk_piece="[UNK]",
        bos_id=-1, eos_id=-1, user_defined_symbols=user_defined,
        max_sentence_length=_MAX_SENTENCE_BYTES,
        num_threads=os.cpu_count() or 1, minloglevel=2)
  except (RuntimeError, ValueError) as e:
    raise UserError("sentencepiece cannot train a %s model of --vocab-size "
                    "%d on %s: %s" % (model_type, vocab_size, corpus_dir,
                                      " ".join(str(e).split()))) from None
  data = model.getvalue()
  write_bytes_atomic(output_file, data)
  return spm.SentencePieceProcessor(model_proto=data).get_piece_size()
