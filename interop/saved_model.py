"""A SavedModel of the pre-trained discriminator that takes raw text.

Signatures (load with only `tensorflow` and `tensorflow_text` imported):
  * "serving_default": `text` [batch] tf.string -> `replaced_probability`
    [batch, max_seq_length] float32 (sigmoid of D's logit per token, 0 on
    padding), `input_ids`, `input_mask` [batch, max_seq_length] int32. The
    WordPiece tokenizer runs in the graph (tensorflow-text's BertTokenizer:
    lower-casing and accent stripping as BERT's, punctuation split,
    WordPiece); each text is one segment, [CLS] text [SEP], truncated.
  * "from_ids": `input_ids`, `input_mask`, `segment_ids` [batch, seq_len]
    int32 -> `replaced_probability` [batch, seq_len].

Not covered yet: SentencePiece vocabularies and fine-tuned task models.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from model import tokenization
from util.errors import UserError

_IDS = tf.TensorSpec([None, None], tf.int32)


class _Serving(tf.Module):
  """Tokenizer table + discriminator, with the two serving functions."""

  def __init__(self, discriminator, vocab_file, do_lower_case,
               max_seq_length):
    super(_Serving, self).__init__()
    self.discriminator = discriminator
    vocab = tokenization.load_vocab(vocab_file)
    tokens = sorted(vocab, key=vocab.get)
    self.table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(tokens), tf.range(len(tokens), dtype=tf.int64)),
        default_value=-1)
    self.tokenizer = tf_text.BertTokenizer(
        self.table, token_out_type=tf.int64, unknown_token="[UNK]",
        lower_case=do_lower_case)
    self._cls = vocab["[CLS]"]
    self._sep = vocab["[SEP]"]
    self._max_seq_length = max_seq_length

  @tf.function(input_signature=[_IDS, _IDS, _IDS])
  def from_ids(self, input_ids, input_mask, segment_ids):
    logits = self.discriminator(
        dict(input_ids=input_ids, input_mask=input_mask,
             segment_ids=segment_ids), training=False)
    probs = tf.sigmoid(logits) * tf.cast(input_mask, tf.float32)
    return dict(replaced_probability=probs)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def from_text(self, text):
    pieces = self.tokenizer.tokenize(text).merge_dims(-2, -1)
    pieces = tf.cast(pieces[:, :self._max_seq_length - 2], tf.int32)
    ones = tf.ones_like(pieces[:, :1])
    ids = tf.concat([ones * self._cls, pieces, ones * self._sep], axis=1)
    shape = [None, self._max_seq_length]
    input_ids = ids.to_tensor(0, shape=shape)
    input_mask = tf.ones_like(ids).to_tensor(0, shape=shape)
    out = self.from_ids(input_ids, input_mask, tf.zeros_like(input_ids))
    return dict(out, input_ids=input_ids, input_mask=input_mask)


def export_saved_model(model, config, output_dir, log=print):
  """Writes the SavedModel of `model`'s discriminator to `output_dir`.

  Args:
    model: a built `ElectraPretrainingModel`.
    config: its `PretrainingConfig` (vocab_file, do_lower_case,
      max_seq_length).
  """
  if not tf.io.gfile.exists(config.vocab_file):
    raise UserError("vocab file %s not found; set hparam vocab_file." %
                    config.vocab_file)
  module = _Serving(model.discriminator, config.vocab_file,
                    config.do_lower_case, config.max_seq_length)
  tf.saved_model.save(module, output_dir, signatures={
      "serving_default": module.from_text,
      "from_ids": module.from_ids})
  log("exported SavedModel (signatures serving_default: text, from_ids) -> "
      "%s" % output_dir)
  return output_dir
