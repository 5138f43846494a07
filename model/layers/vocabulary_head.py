"""The vocabulary head: ELECTRA's MLM head, and the sampling head's layout."""

import tensorflow as tf
import tf_keras
from official.modeling import tf_utils

from model import activations  # noqa: F401 (registers "gelu_exact")
from model.initializers import truncated_normal
from model.layers.dense import add_bias
from model.layers.float32_read import read_float32


def _project(h, table):
  """h [batch, P, e] times table^T [e, vocab] -> [batch, P, vocab]."""
  return tf.einsum("bpe,ve->bpv", h, table)


def projection_with_backward_in(dtype):
  """(h, table) -> h table^T in float32, whose gradient's matmuls run in
  `dtype`.

  The forward stays float32 (sampling and losses read these logits); the
  backward casts the [batch, P, vocab] logit gradient to `dtype` for the
  two vocabulary-sized matmuls, which in bfloat16 on a CPU with native
  bf16 take about half their float32 time. Mixed precision rounds every
  other layer's gradient to its compute dtype in the same way.

  Args to the returned function: h [batch, P, embedding_size] float32,
  table [vocab, embedding_size] float32 (a tensor). Returns [batch, P,
  vocab] float32; the gradients of h and table come back in float32.
  """
  @tf.custom_gradient
  def project(h, table):
    def grad(upstream):
      upstream = tf.cast(upstream, dtype)
      grad_h = tf.einsum("bpv,ve->bpe", upstream, tf.cast(table, dtype))
      grad_table = tf.einsum("bpv,bpe->ve", upstream, tf.cast(h, dtype))
      return tf.cast(grad_h, h.dtype), tf.cast(grad_table, table.dtype)
    return _project(h, table), grad
  return project


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class VocabularyHead(tf_keras.layers.Layer):
  """dense(embedding_size, act) -> LayerNorm -> h E^T + b, logits in float32.

  ELECTRA's MLM head; the sampling head is a second instance (own dense,
  LayerNorm and bias), tied or untied as the MLM head. With `tied` (ELECTRA)
  E is the input embedding table passed to `call`; otherwise the head owns
  its output table `output_embeddings`, so the softmax's push on every
  non-target entry does not move the input embeddings of tokens that are
  rarely seen.

  Args:
    embedding_size: width of the transform and of the output table.
    vocab_size: number of logits (rows of the output table).
    hidden_act: activation of the transform.
    initializer_range: stddev of the truncated-normal initial kernels.
    tied: read the output table passed to `call` (True) or own one.

  Inputs: hidden [batch, num_predictions, hidden] (compute dtype) and, when
    tied, `embedding_table` [vocab_size, embedding_size].
  Output: logits [batch, num_predictions, vocab_size], float32.

  The logits are computed in float32 under any dtype policy, from the
  table's float32 value (`read_float32`: not the compute-dtype read of a
  mixed policy); under a mixed policy their gradient's two matmuls run in
  the compute dtype, as every other layer's backward does
  (`projection_with_backward_in`).
  """

  def __init__(self, embedding_size, vocab_size, hidden_act="gelu",
               initializer_range=0.02, tied=True, **kwargs):
    super(VocabularyHead, self).__init__(**kwargs)
    self._config = dict(embedding_size=embedding_size, vocab_size=vocab_size,
                        hidden_act=hidden_act,
                        initializer_range=initializer_range, tied=tied)
    self.dense = tf_keras.layers.Dense(
        embedding_size, activation=tf_utils.get_activation(hidden_act),
        kernel_initializer=truncated_normal(initializer_range),
        name="transform")
    self.layer_norm = tf_keras.layers.LayerNormalization(
        epsilon=1e-12, dtype=tf.float32, name="layer_norm")
    # autocast=False: under a mixed policy the bias is still read in float32,
    # as the float32 logits it is added to.
    self.output_bias = self.add_weight(
        "output_bias", shape=[vocab_size], initializer="zeros",
        dtype=tf.float32, autocast=False)
    self.output_embeddings = None
    if not tied:
      self.output_embeddings = self.add_weight(
          "output_embeddings", shape=[vocab_size, embedding_size],
          initializer=truncated_normal(initializer_range), dtype=tf.float32,
          autocast=False)

  def call(self, hidden, embedding_table=None):
    return self.project(self.transform(hidden), embedding_table)

  def transform(self, hidden):
    """dense -> LayerNorm: h [batch, P, embedding_size] float32."""
    return tf.cast(self.layer_norm(self.dense(hidden)), tf.float32)

  def project(self, h, embedding_table=None):
    """Logits over the vocabulary h E^T + b, [batch, P, vocab] float32."""
    table = self._table(embedding_table)
    if self.compute_dtype == "float32":
      logits = _project(h, table)
    else:
      logits = projection_with_backward_in(self.compute_dtype)(h, table)
    return add_bias(logits, self.output_bias)

  def project_at(self, h, ids, embedding_table=None):
    """The logits of `project` at ids [batch, P] only: [batch, P] float32.

    Equal to gathering `project`'s output, but its gradient is one table
    row per position, not a [batch, P, vocab] one through two matmuls.
    """
    rows = tf.gather(self._table(embedding_table), ids)
    return (tf.reduce_sum(h * rows, axis=-1) +
            tf.gather(tf.convert_to_tensor(self.output_bias), ids))

  def _table(self, embedding_table):
    if self.output_embeddings is not None:
      embedding_table = self.output_embeddings
    elif embedding_table is None:
      raise ValueError("A tied VocabularyHead needs the embedding_table.")
    return tf.cast(read_float32(embedding_table), tf.float32)

  def get_config(self):
    config = super(VocabularyHead, self).get_config()
    config.update(self._config)
    return config
