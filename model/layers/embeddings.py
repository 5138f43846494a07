"""ELECTRA's input embeddings: token, position and segment tables."""

import tensorflow as tf
import tf_keras
from official.nlp.modeling import layers as nlp_layers

from model.initializers import truncated_normal
from model.layers.dropout import CounterDropout
from model.layers.float32_read import read_float32


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class DenseReadEmbedding(nlp_layers.OnDeviceEmbedding):
  """tf-models-official's `OnDeviceEmbedding`, gathering from a dense read.

  `tf.gather` on the table variable itself is a ResourceGather, which puts
  the variable in copy-on-read mode: from then on every dense read of it
  (the tied MLM and sampling heads, the optimizer) copies the whole
  [vocab, width] table. Gathering from one dense read of the table gives
  the same rows and the same gradient without those copies.

  Args and inputs/outputs as `OnDeviceEmbedding`'s: ids [batch, seq_len]
  int32 -> [batch, seq_len, embedding_width] in the compute dtype.
  """

  def call(self, inputs):
    if self._use_one_hot or self._scale_factor:
      return super(DenseReadEmbedding, self).call(inputs)
    # The rows, not the whole table, are cast to the compute dtype.
    rows = tf.cast(tf.gather(read_float32(self.embeddings),
                             tf.reshape(inputs, [-1])), self.compute_dtype)
    out = tf.reshape(rows, tf.concat([tf.shape(inputs),
                                      [self._embedding_width]], axis=0))
    out.set_shape(inputs.shape.as_list() + [self._embedding_width])
    return out


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class ElectraEmbeddings(tf_keras.layers.Layer):
  """Token, position and segment embeddings, summed, normalised, dropped out.

  One instance is shared by generator and discriminator (ELECTRA ties the
  tables of both networks).

  Args:
    vocab_size: rows of the token table.
    embedding_size: width of every table (the output width).
    max_position_embeddings: longest sequence the position table covers.
    type_vocab_size: number of segment ids.
    dropout_rate: dropout after the LayerNorm.
    initializer_range: stddev of the truncated-normal initial tables.

  Inputs: `input_ids`, `segment_ids`, both [batch, seq_len] int32.
  Output: [batch, seq_len, embedding_size] in the compute dtype.
  `embedding_table` ([vocab_size, embedding_size]) is the table the MLM and
  sampling heads tie their output layers to.
  """

  def __init__(self, vocab_size, embedding_size, max_position_embeddings=512,
               type_vocab_size=2, dropout_rate=0.1, initializer_range=0.02,
               **kwargs):
    super(ElectraEmbeddings, self).__init__(**kwargs)
    self._config = dict(vocab_size=vocab_size, embedding_size=embedding_size,
                        max_position_embeddings=max_position_embeddings,
                        type_vocab_size=type_vocab_size,
                        dropout_rate=dropout_rate,
                        initializer_range=initializer_range)
    self.word_embeddings = DenseReadEmbedding(
        vocab_size, embedding_size,
        initializer=truncated_normal(initializer_range), name="word_embeddings")
    self.position_embeddings = nlp_layers.PositionEmbedding(
        max_length=max_position_embeddings,
        initializer=truncated_normal(initializer_range),
        name="position_embeddings")
    self.type_embeddings = nlp_layers.OnDeviceEmbedding(
        type_vocab_size, embedding_size,
        initializer=truncated_normal(initializer_range), use_one_hot=True,
        name="type_embeddings")
    self.layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=1e-12, dtype=tf.float32, name="layer_norm")
    self.dropout = CounterDropout(dropout_rate)

  @property
  def embedding_size(self):
    return self._config["embedding_size"]

  @property
  def embedding_table(self):
    """The token embedding table, [vocab_size, embedding_size] float32."""
    return self.word_embeddings.embeddings

  def call(self, input_ids, segment_ids, training=None):
    words = self.word_embeddings(input_ids)
    x = words + self.position_embeddings(words) + self.type_embeddings(
        segment_ids)
    x = self.layer_norm(x)
    return self.dropout(tf.cast(x, self.compute_dtype), training=training)

  def get_config(self):
    config = super(ElectraEmbeddings, self).get_config()
    config.update(self._config)
    return config
