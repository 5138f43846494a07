"""Raw text to model inputs in ops a TFLite model can hold.

`TfliteTextEncoder` is export/text_encoder.py's `TextEncoder` with the
parts TFLite cannot run replaced: the tokenizer is tensorflow-text's
`FastBertNormalizer` + `FastWordpieceTokenizer` (BERT's lower-casing,
accent stripping, punctuation and CJK split, then WordPiece: the same ids
as `BertTokenizer`) or `FastSentencepieceTokenizer`, whose TFLite kernels
are custom ops (FastBertNormalize, FastWordpieceTokenizeWithOffsets,
FastSentencepieceTokenize) registered by `tensorflow_text.tflite_registrar`;
and the ragged `[CLS] a [SEP] (b [SEP])` assembly becomes index arithmetic
and one gather on static [batch, max_seq_length] positions (TFLite
builtins only). The truncation (which tokens a text too long keeps) is
`TextEncoder`'s: `encode` and `encode_question` are inherited.
"""

import fractions

import tensorflow as tf
import tensorflow_text as tf_text

from export.text_encoder import TextEncoder
from finetune import truncation


def _head_share():
  """truncation.HEAD_SHARE as (numerator, denominator): head+tail keeps
  keep * num // den head tokens, exactly as int(keep * HEAD_SHARE)."""
  share = fractions.Fraction(truncation.HEAD_SHARE).limit_denominator(1000)
  return share.numerator, share.denominator


class TfliteTextEncoder(TextEncoder):
  """Strings [batch] -> `input_ids`, `input_mask`, `segment_ids` [batch,
  max_seq_length] int32, equal to `TextEncoder`'s, in TFLite-capable ops.

  Args: those of `TextEncoder`.
  """

  def _sentencepiece_tokenizer(self, model):
    return tf_text.FastSentencepieceTokenizer(model)

  def _wordpiece_tokenizer(self, tokens, do_lower_case):
    self._normalizer = tf_text.FastBertNormalizer(
        lower_case_nfd_strip_accents=do_lower_case)
    return tf_text.FastWordpieceTokenizer(
        vocab=list(tokens), token_out_type=tf.int32, unknown_token="[UNK]",
        no_pretokenization=False, support_detokenization=False)

  def pieces(self, text):
    """Token ids of each text (no special tokens): ragged [batch, (n)]
    int32 with int32 row splits."""
    if self._sp_unk is None:
      ids = self._tokenizer.tokenize(self._normalizer.normalize(text))
    else:
      ids = self._tokenizer.tokenize(text)
    values = tf.cast(ids.flat_values, tf.int32)
    if self._sp_unk is not None and self._sp_unk[0] != self._sp_unk[1]:
      sp_unk, unk = self._sp_unk
      values = tf.where(tf.equal(values, sp_unk), unk, values)
    return tf.RaggedTensor.from_row_splits(
        values, tf.cast(ids.row_splits, tf.int32), validate=False)

  def _assemble(self, segments, rule=None):
    """[CLS] s1 [SEP] (s2 [SEP]) from (pieces, keep) pairs, padded to
    max_seq_length, by position: [batch, max_seq_length] int32 each."""
    rule = rule or self._rule
    if rule not in truncation.RULES:
      raise ValueError("unknown truncation rule %r; use one of %s" % (
          rule, ", ".join(truncation.RULES)))
    rows = tf.zeros_like(segments[0][0].row_lengths())[:, tf.newaxis]
    position = rows + tf.range(self._max_seq_length, dtype=tf.int32)
    ids = tf.where(tf.equal(position, 0), self._cls, 0)
    types = tf.zeros_like(ids)
    start = rows + 1  # [batch, 1]: after [CLS]
    for segment_id, (pieces, keep) in enumerate(segments):
      n = pieces.row_lengths()[:, tf.newaxis]
      keep = tf.minimum(tf.cast(keep, tf.int32)[:, tf.newaxis], n)
      if rule == "head":
        head = keep
      elif rule == "tail":
        head = tf.zeros_like(keep)
      else:
        num, den = _head_share()
        head = keep * num // den
      j = position - start  # the index among the kept tokens
      inside = (j >= 0) & (j < keep)
      # Kept tokens: the first `head`, then the last keep - head.
      source = tf.where(j < head, j, n - keep + j)
      # Index into the values with a 0 appended (an empty batch of
      # pieces still has one value to gather; positions outside read it).
      padded = tf.concat([pieces.flat_values, [0]], axis=0)
      index = tf.where(inside, pieces.row_splits[:-1, tf.newaxis] + source,
                       tf.shape(pieces.flat_values)[0])
      ids = tf.where(inside, tf.gather(padded, index), ids)
      end = start + keep  # the [SEP]
      ids = tf.where(tf.equal(position, end), self._sep, ids)
      if segment_id:
        types = tf.where((position >= start) & (position <= end),
                         segment_id, types)
      start = end + 1
    return dict(input_ids=ids,
                input_mask=tf.cast(position < start, tf.int32),
                segment_ids=types)
