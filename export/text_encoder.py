"""Raw text to model inputs inside the TensorFlow graph (tensorflow-text).

`TextEncoder` is what a SavedModel (export/saved_model.py) serves with: the
WordPiece tokenizer (tensorflow-text's `BertTokenizer`: BERT's lower-casing
and accent stripping, punctuation split, WordPiece) or a SentencePiece model
(`SentencepieceTokenizer`), then `[CLS] a [SEP]`, `[CLS] a [SEP] b [SEP]` or
a question/context window, cut to `max_seq_length` as fine-tuning cuts it
(finetune/truncation.py: the longer text of a pair loses tokens first; each
text keeps its head, its tail or both ends).
"""

import tensorflow as tf
import tensorflow_text as tf_text

from finetune import truncation
from text import tokenization
from util import io_utils


def _keep_lengths(length_a, length_b, budget):
  """`truncation.segment_lengths` for a batch: int64 [batch] each."""
  fits = length_a + length_b <= budget
  half_a = budget // 2
  half_b = budget - half_a
  a_short = length_a <= half_a
  b_short = length_b <= half_b
  keep_a = tf.where(fits | a_short, length_a,
                    tf.where(b_short, budget - length_b, half_a))
  keep_b = tf.where(fits, length_b, tf.where(
      a_short, budget - length_a, tf.where(b_short, length_b, half_b)))
  return keep_a, keep_b


def keep_tokens(pieces, keep, rule):
  """`truncation.keep_tokens` for a batch: `keep` [batch] of each row of the
  ragged `pieces` [batch, (n)], as `rule` ("head", "tail", "head+tail")."""
  n = pieces.row_lengths()
  keep = tf.minimum(keep, n)
  if rule == "head":
    head = keep
  elif rule == "tail":
    head = tf.zeros_like(keep)
  elif rule == "head+tail":
    head = tf.cast(tf.math.floor(tf.cast(keep, tf.float64) *
                                 truncation.HEAD_SHARE), tf.int64)
  else:
    raise ValueError("unknown truncation rule %r; use one of %s" % (
        rule, ", ".join(truncation.RULES)))
  tail = keep - head
  index = tf.concat([tf.ragged.range(tf.zeros_like(n), head),
                     tf.ragged.range(n - tail, n)], axis=1)
  flat = tf.gather(pieces.flat_values,
                   (index + pieces.row_starts()[:, tf.newaxis]).flat_values)
  return tf.RaggedTensor.from_row_lengths(flat, index.row_lengths())


def _column(rows, token):
  """A ragged [batch, (1)] of `token` for each row of `rows` [batch, (n)],
  also for rows with no pieces (an empty or blank text still gets its
  [CLS] and [SEP], as fine-tuning gives it)."""
  return tf.RaggedTensor.from_tensor(
      tf.fill(tf.stack([rows.nrows(), 1]), tf.cast(token, rows.dtype)))


class TextEncoder(tf.Module):
  """Strings -> `input_ids`, `input_mask`, `segment_ids` [batch, seq] int32.

  Args:
    max_seq_length: the model's sequence length (rows are padded to it).
    vocab_file: the vocabulary: a WordPiece vocab.txt or a SentencePiece
      `.model` (unless `sentencepiece_model`).
    do_lower_case: WordPiece: lower-case and strip accents.
    sentencepiece_model: a SentencePiece model file instead of vocab_file;
      either way a SentencePiece model's own normalisation applies, and it
      must hold the special tokens as pieces.
    truncation_rule: how a text too long keeps its tokens
      (finetune/truncation.py RULES).
  """

  def __init__(self, max_seq_length, vocab_file=None, do_lower_case=True,
               sentencepiece_model=None, truncation_rule="head"):
    super(TextEncoder, self).__init__()
    python = tokenization.create_tokenizer(vocab_file, sentencepiece_model,
                                           do_lower_case)
    self._cls, self._sep = python.cls_id, python.sep_id
    self._max_seq_length = max_seq_length
    self._rule = truncation_rule
    self._sp_unk = None
    if python.kind == "sentencepiece":
      # Our tokenizer maps SentencePiece's unknown id to [UNK]'s.
      self._sp_unk = (python.sentencepiece_unk_id, python.unk_id)
      self._tokenizer = self._sentencepiece_tokenizer(
          io_utils.read_bytes(python.vocab_file))
    else:
      self._tokenizer = self._wordpiece_tokenizer(
          sorted(python.vocab, key=python.vocab.get), do_lower_case)

  def _sentencepiece_tokenizer(self, model):
    """The in-graph tokenizer of a serialized SentencePiece model."""
    return tf_text.SentencepieceTokenizer(model=model, out_type=tf.int32)

  def _wordpiece_tokenizer(self, tokens, do_lower_case):
    """The in-graph tokenizer of a WordPiece vocabulary (tokens by id)."""
    self._table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(tokens), tf.range(len(tokens), dtype=tf.int64)),
        default_value=-1)
    return tf_text.BertTokenizer(
        self._table, token_out_type=tf.int64, unknown_token="[UNK]",
        lower_case=do_lower_case)

  def pieces(self, text):
    """Token ids of each text (no special tokens): ragged [batch, (n)] int64."""
    if self._sp_unk is None:
      return self._tokenizer.tokenize(text).merge_dims(-2, -1)
    ids = tf.cast(self._tokenizer.tokenize(text), tf.int64)
    sp_unk, unk = self._sp_unk
    if sp_unk == unk:
      return ids
    return tf.ragged.map_flat_values(
        lambda v: tf.where(tf.equal(v, sp_unk), tf.constant(unk, tf.int64), v),
        ids)

  def encode(self, text_a, text_b=None):
    """`[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, cut as fine-tuning cuts."""
    a = self.pieces(text_a)
    budget = self._max_seq_length - (2 if text_b is None else 3)
    if text_b is None:
      return self._assemble([(a, tf.minimum(a.row_lengths(), budget))])
    b = self.pieces(text_b)
    keep_a, keep_b = _keep_lengths(a.row_lengths(), b.row_lengths(), budget)
    return self._assemble([(a, keep_a), (b, keep_b)])

  def encode_question(self, question, context, max_query_length):
    """A QA window: `[CLS] question [SEP] context [SEP]` with the question's
    head (at most `max_query_length` tokens) and the context's head; adds
    `paragraph_mask` [batch, seq] int32, 1 on context tokens and [CLS]."""
    q = self.pieces(question)
    q_keep = tf.minimum(q.row_lengths(), max_query_length)
    c = self.pieces(context)
    c_keep = tf.maximum(self._max_seq_length - 3 - q_keep, 0)
    features = self._assemble([(q, q_keep), (c, c_keep)], rule="head")
    on_context = tf.equal(features["segment_ids"], 1) & tf.not_equal(
        features["input_ids"], self._sep)
    first = tf.equal(tf.range(self._max_seq_length), 0)[tf.newaxis]
    features["paragraph_mask"] = tf.cast(on_context | first, tf.int32)
    return features

  def _assemble(self, segments, rule=None):
    """[CLS] s1 [SEP] (s2 [SEP]) from (pieces, keep) pairs, padded."""
    rows, types = [], []
    for segment_id, (pieces, keep) in enumerate(segments):
      kept = keep_tokens(pieces, keep, rule or self._rule)
      cls, sep = (_column(kept, token) for token in (self._cls, self._sep))
      part = [cls, kept, sep] if not rows else [kept, sep]
      part = tf.concat(part, axis=1)
      rows.append(part)
      types.append(tf.ones_like(part) * segment_id)
    shape = [None, self._max_seq_length]
    ids = tf.concat(rows, axis=1)
    return dict(
        input_ids=tf.cast(ids.to_tensor(0, shape=shape), tf.int32),
        input_mask=tf.cast(tf.ones_like(ids).to_tensor(0, shape=shape),
                           tf.int32),
        segment_ids=tf.cast(tf.concat(types, axis=1).to_tensor(
            0, shape=shape), tf.int32))
