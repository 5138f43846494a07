"""ELECTRA's input embeddings stored so TFLite's INT8 converter leaves them.

Dynamic-range quantization (`tf.lite.Optimize.DEFAULT`, export/tflite.py's
`--quantize dynamic`) stores every float32 constant of 1024 elements or
more as int8. A FULLY_CONNECTED kernel gets a scale per output unit and
runs as an int8 matmul on activations quantized on the fly; any other
constant, the embedding tables among them, gets one scale for the whole
table and is dequantized after the GATHER. A single scale for 30,522 rows
of word vectors costs most of the INT8 model's accuracy (docs/
export_and_serving.md). `TfliteEmbeddings` computes what
`ElectraEmbeddings` computes in inference (word + position + segment rows,
then the LayerNorm) from tables the converter does not quantize:

  "float"      each table's float32 bits as an int32 constant, gathered
               and bitcast back (GATHER and BITCAST builtins): the float
               model's rows exactly, 4 bytes a weight;
  "int8_rows"  int8 with a float32 scale per row (symmetric, max |w| /
               127), gathered then scaled: 1 byte a weight and 4 a row.

The converter quantizes float constants only, so neither is touched.
"""

import numpy as np
import tensorflow as tf

from export import inference_encoder

TABLES = ("float", "int8_rows")


def _bits(array):
  """A float32 numpy array as an int32 variable of its bits (frozen into
  an int32 constant by the converter)."""
  return tf.Variable(np.ascontiguousarray(array, np.float32).view(np.int32),
                     trainable=False)


def _float(bits):
  return tf.bitcast(bits, tf.float32)


class _Table(tf.Module):
  """A [rows, width] float32 table, `storage` one of TABLES; `gather(ids)`
  -> its rows [..., width] float32."""

  def __init__(self, table, storage, name):
    super(_Table, self).__init__(name=name)
    if storage not in TABLES:
      raise ValueError("tables must be one of %s, not %r." % (
          ", ".join(TABLES), storage))
    table = np.asarray(table, np.float32)
    self.storage = storage
    if storage == "float":
      self.bits = _bits(table)
      return
    scale = np.abs(table).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    self.values = tf.Variable(np.round(table / scale[:, None]).astype(np.int8),
                              trainable=False)
    self.scale_bits = _bits(scale[:, None])

  def gather(self, ids):
    if self.storage == "float":
      return _float(tf.gather(self.bits, ids))
    return tf.cast(tf.gather(self.values, ids), tf.float32) * _float(
        tf.gather(self.scale_bits, ids))


class TfliteEmbeddings(tf.Module):
  """What an `ElectraEmbeddings` layer computes in inference, its tables
  kept out of the converter's quantization.

  Args:
    layer: a built float32 `ElectraEmbeddings` (model/layers/embeddings.py);
      its weights are copied.
    tables: one of TABLES (the module docstring).

  Call: `input_ids`, `segment_ids` [batch, seq] int32 (and `training`,
  which must not be True) -> [batch, seq, embedding_size] float32.
  """

  def __init__(self, layer, tables="float"):
    super(TfliteEmbeddings, self).__init__(name="tflite_embeddings")
    self.words = _Table(layer.word_embeddings.embeddings, tables, "words")
    self.positions = _Table(
        layer.position_embeddings._position_embeddings, tables, "positions")  # pylint: disable=protected-access
    self.types = _Table(layer.type_embeddings.embeddings, tables, "types")
    self.layer_norm = inference_encoder.LayerNorm(layer.layer_norm)

  def __call__(self, input_ids, segment_ids, training=None):
    if training:
      raise ValueError("TfliteEmbeddings computes inference only.")
    seq = tf.shape(input_ids)[1]
    x = (self.words.gather(input_ids) + self.types.gather(segment_ids) +
         self.positions.gather(tf.range(seq))[tf.newaxis])
    return self.layer_norm(x)
