"""Learns a WordPiece vocabulary (vocab.txt) from a corpus directory.

The text is normalized as text.tokenization.WordPieceTokenizer normalizes
it, so the vocabulary fits the tokenizer; build_vocab.py is the command line.
"""

import sys

from text.tokenization import SPECIAL_TOKENS
from text.bert_text import BertNormalizer
from util import corpus as corpus_lib
from util.errors import UserError
from util.io_utils import write_text_atomic


def build_vocab(corpus_dir, output_file, vocab_size=30522,
                reserved_tokens=SPECIAL_TOKENS, lower_case=True,
                strip_accents=None, batch_size=1024):
  """Learns a WordPiece vocab.txt from a corpus directory.

  Text is normalized like WordPieceTokenizer does, split into words by
  tensorflow-text's BasicTokenizer and counted, and the vocabulary is learned
  by tensorflow-text's WordPiece learner (the two steps of its
  `bert_vocab_from_dataset`, with the learner's threshold search started
  from bounds read off the word counts: seconds instead of a minute on a
  small corpus). SPECIAL_TOKENS come first ([PAD] has id 0, as in BERT),
  then the other reserved tokens, the characters, and the learned tokens
  from the most to the least frequent.

  Args:
    corpus_dir: directory of UTF-8 text files (read recursively; files that
      are binary, not UTF-8 or empty are skipped with a warning).
    output_file: vocab.txt to write (atomically).
    vocab_size: the most tokens to keep. If the learner returns more (a small
      corpus, where even threshold 1 gives too many), the rarest multi-
      character tokens are dropped.
    reserved_tokens: tokens to put first; missing special tokens are added.
    lower_case, strip_accents: as for WordPieceTokenizer.
  Returns:
    the vocabulary, a list of tokens.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow_text.python.ops import bert_tokenizer  # pylint: disable=g-import-not-at-top
  from tensorflow_text.tools.wordpiece_vocab import (  # pylint: disable=g-import-not-at-top
      wordpiece_tokenizer_learner_lib as learner)
  reserved = list(SPECIAL_TOKENS) + [t for t in reserved_tokens
                                     if t not in SPECIAL_TOKENS]
  if vocab_size <= len(reserved):
    raise UserError("--vocab-size must be more than the %d reserved tokens, "
                    "got %d." % (len(reserved), vocab_size))
  normalizer = BertNormalizer(lower_case, strip_accents)
  lines = [line for text in corpus_lib.read_corpus(corpus_dir)
           for line in normalizer.normalize(text).splitlines()
           if line.strip()]

  # The text is normalized already: the BasicTokenizer only splits words.
  splitter = bert_tokenizer.BasicTokenizer(lower_case=False)
  dataset = tf.data.Dataset.from_tensor_slices(lines).batch(batch_size)
  word_counts = learner.count_words(dataset.map(splitter.tokenize))
  # Every word of count >= t is a token at threshold t, so the threshold that
  # fits vocab_size is at least `lower`; `upper` (where the words alone fill
  # half the vocabulary) bounds it in practice.
  counts = sorted(word_counts.values(), reverse=True)

  def threshold_for(num_words):
    return counts[num_words] + 1 if len(counts) > num_words else 1

  lower = threshold_for(vocab_size - len(reserved))
  upper = max(lower, threshold_for(vocab_size // 2))
  vocab = learner.learn(word_counts, vocab_size, reserved,
                        lower_thresh=lower, upper_thresh=upper)
  vocab = _fit_vocab(vocab, vocab_size, len(reserved))
  write_text_atomic(output_file, "".join(t + "\n" for t in vocab))
  return vocab


def _fit_vocab(vocab, vocab_size, num_reserved):
  """Drops the rarest multi-character tokens beyond vocab_size.

  The reserved tokens (the first num_reserved), characters and "##" +
  character stay, so every word can still be spelled out.
  """
  excess = len(vocab) - vocab_size
  dropped = set()
  for i in range(len(vocab) - 1, num_reserved - 1, -1):
    if excess <= 0:
      break
    token = vocab[i]
    if len(token) > (3 if token.startswith("##") else 1):
      dropped.add(i)
      excess -= 1
  if excess > 0:
    sys.stderr.write("warning: the vocabulary has %d tokens, more than "
                     "--vocab-size %d: the corpus has that many distinct "
                     "characters.\n" % (len(vocab) - len(dropped), vocab_size))
  return [t for i, t in enumerate(vocab) if i not in dropped]
