"""Multi-head self-attention whose mask argument is an additive bias."""

import math

import tensorflow as tf
import tf_keras

from model.layers.dense import EinsumDense
from model.layers.dropout import CounterDropout

# Added to the attention logits of padding keys; large but finite in float32.
PADDING_BIAS = -1e9


def padding_bias(input_mask):
  """[batch, 1, 1, seq_len] float32: 0 at real keys, PADDING_BIAS at padding.

  Args: input_mask: [batch, seq_len], 1 for real tokens, 0 for padding.
  """
  mask = tf.cast(input_mask, tf.float32)
  # expand_dims, not [:, newaxis, newaxis]: TFLite has no builtin for a
  # strided slice adding two axes (export/tflite.py).
  return tf.expand_dims(tf.expand_dims(1.0 - mask, 1), 1) * PADDING_BIAS


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class BiasedSelfAttention(tf_keras.layers.MultiHeadAttention):
  """Keras multi-head attention taking an additive bias instead of a mask.

  Constructor arguments are `tf_keras.layers.MultiHeadAttention`'s.
  Inputs: query, value [batch, seq_len, hidden] and `attention_mask`, a
    float tensor broadcastable to [batch, num_heads, seq_len, seq_len]
    (the padding bias plus an optional relative position bias). It is
    added to the attention logits in float32 before the softmax, so
    bf16/fp16 logits do not overflow.
  Output: [batch, seq_len, hidden] in the compute dtype.

  The attention probabilities' dropout is a `CounterDropout`; the query,
  key, value and output projections add their bias with `dense.add_bias`.
  Scores and context are batched matmuls over [batch, heads, seq, size]
  (`_compute_attention`).
  """

  def _build_attention(self, rank):
    super(BiasedSelfAttention, self)._build_attention(rank)
    self._dropout_layer = CounterDropout(rate=self._dropout,
                                         dtype=self._dtype_policy)
    for projection in (self._query_dense, self._key_dense, self._value_dense):
      EinsumDense.adopt(projection)

  def _make_output_dense(self, free_dims, common_kwargs, name=None):
    return EinsumDense.adopt(super(BiasedSelfAttention, self)
                             ._make_output_dense(free_dims, common_kwargs,
                                                 name))

  def _compute_attention_mask(self, query, value, key=None,
                              attention_mask=None, use_causal_mask=False):
    return attention_mask

  def _masked_softmax(self, attention_scores, attention_mask=None):
    scores = tf.cast(attention_scores, tf.float32)
    if attention_mask is not None:
      scores += tf.cast(attention_mask, tf.float32)
    return tf.cast(tf.nn.softmax(scores, axis=-1), attention_scores.dtype)

  def _compute_attention(self, query, key, value, attention_mask=None,
                         training=None):
    """Keras's attention over one attention axis, as batched matmuls.

    query [batch, T, heads, key_dim], key and value [batch, S, heads, size];
    returns the output [batch, T, heads, value_dim] and the probabilities
    [batch, heads, T, S], as Keras's. Keras's einsums over [batch, seq,
    heads, size] transpose inside every call, forward and backward, at 2-4x
    the cost of these explicit transposes and matmuls on CPU
    (bench/matmul_floor.py).
    """
    if query.shape.rank != 4:  # several attention axes: Keras's einsums
      return super(BiasedSelfAttention, self)._compute_attention(
          query, key, value, attention_mask, training)
    query = query * tf.cast(1.0 / math.sqrt(float(self._key_dim)),
                            query.dtype)
    scores = tf.matmul(heads_first(query), heads_first(key), transpose_b=True)
    probs = self._masked_softmax(scores, attention_mask)
    dropped = self._dropout_layer(probs, training=training)
    output = heads_first(tf.matmul(dropped, heads_first(value)))
    return output, probs


def heads_first(x):
  """[batch, seq, heads, size] -> [batch, heads, seq, size] and back."""
  return tf.transpose(x, [0, 2, 1, 3])
