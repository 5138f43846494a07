"""A trained `ElectraEncoder` recast for serving: the same outputs, fewer and
larger ops.

Training keeps tf-models-official's layers (`EinsumDense`, Keras attention),
whose ops suit the backward pass. In inference on a CPU their forward is
slow: each projection is an `Einsum`, a bias add and an activation apart,
and query, key and value are three matmuls. `InferenceEncoder` copies the
encoder's weights into 2-D kernels and computes each block as

    [q | k | v] = x Wqkv^T + b              one MatMul+BiasAdd
    ctx = softmax(q k^T + bias) v           two BatchMatMuls, f32 softmax
    h = LN(x + ctx Wo + bo)
    LN(h + act(h W1 + b1) W2 + b2)          MatMul+BiasAdd(+GELU) each

so that TensorFlow's CPU graph optimizer (oneDNN) fuses bias and GELU into
the matmuls. A batch of one text takes the tokens as columns instead
(W x^T is already [q|k|v, heads, size, tokens]): no transposes, which at a
few dozen tokens cost as much as the matmuls. The query scale 1/sqrt(size)
is folded into Wq and bq; the rest is the encoder's own arithmetic, so the
outputs agree with the Keras encoder's to float32 rounding
(tests/export/test_inference_encoder.py). The embeddings, the embedding
projection and the relative position bias are the encoder's own layers.

Measured with bench/serving.py (README, "Serving on a CPU beside
transformers").

Float32 encoders of post-LayerNorm blocks only: `supports(encoder)` says
why another one is not, and the export then serves the Keras model.
"""

import math

import tensorflow as tf

from model.layers.attention import padding_bias


def supports(encoder):
  """(True, "") if `InferenceEncoder` can stand for `encoder`, else
  (False, the reason)."""
  if encoder.compute_dtype != "float32":
    return False, "its compute dtype is %s, not float32" % (
        encoder.compute_dtype)
  for block in encoder.transformer_layers:
    if block._norm_first or block._feedforward_block is not None:  # pylint: disable=protected-access
      return False, "%s is not a post-LayerNorm block" % block.name
  return True, ""


def _snapshot(value, shape, name):
  return tf.Variable(tf.reshape(tf.convert_to_tensor(value), shape),
                     trainable=False, name=name)


class _LayerNorm(tf.Module):
  """A float32 Keras `LayerNormalization` over the last axis, copied.

  Call: x [..., hidden] -> the same shape. Five elementwise passes where
  Keras' moments + batch_normalization take eight; at 1,700 tokens x 384
  that is 0.95 against 1.25 ms on a 2-core CPU.
  """

  def __init__(self, layer):
    super(_LayerNorm, self).__init__(name=layer.name)
    self.gamma = _snapshot(layer.gamma, [-1], "gamma")
    self.beta = _snapshot(layer.beta, [-1], "beta")
    self.epsilon = layer.epsilon

  def __call__(self, x):
    centred = x - tf.reduce_mean(x, axis=-1, keepdims=True)
    variance = tf.reduce_mean(tf.square(centred), axis=-1, keepdims=True)
    return centred * tf.math.rsqrt(variance + self.epsilon) * self.gamma + (
        self.beta)


class _Block(tf.Module):
  """One post-LayerNorm transformer block of the encoder, for inference.

  Args:
    block: a built `TransformerScaffold` (BiasedSelfAttention, no
      feedforward_cls).

  Call: x [tokens, hidden] float32 (the batch's tokens flattened, batch
  major), bias [batch|1, heads|1, seq, seq] float32, batch, seq (scalar
  int32 tensors), single (a Python bool: the batch holds one text) ->
  [tokens, hidden].
  """

  def __init__(self, block):
    super(_Block, self).__init__(name=block.name)
    attention = block._attention_layer  # pylint: disable=protected-access
    self.heads = attention._num_heads  # pylint: disable=protected-access
    self.head_size = attention._key_dim  # pylint: disable=protected-access
    width = self.heads * self.head_size
    dense = (attention._query_dense, attention._key_dense,  # pylint: disable=protected-access
             attention._value_dense)  # pylint: disable=protected-access
    scales = (1.0 / math.sqrt(float(self.head_size)), 1.0, 1.0)
    # [3 * width, hidden]: rows are output units (q, then k, then v), so one
    # MatMul gives [tokens, 3 * width] (transpose_b) or [3 * width, tokens].
    self.qkv_kernel = _snapshot(tf.concat(
        [tf.transpose(tf.reshape(d.kernel, [-1, width])) * s
         for d, s in zip(dense, scales)], axis=0), [3 * width, -1],
                                "qkv_kernel")
    self.qkv_bias = _snapshot(tf.concat(
        [tf.reshape(d.bias, [width]) * s for d, s in zip(dense, scales)],
        axis=0), [3 * width], "qkv_bias")
    out = attention._output_dense  # pylint: disable=protected-access
    self.attention_kernel = _snapshot(out.kernel, [width, -1],
                                      "attention_output_kernel")
    self.attention_bias = _snapshot(out.bias, [-1], "attention_output_bias")
    self.attention_norm = _LayerNorm(block._attention_layer_norm)  # pylint: disable=protected-access
    inner, outer = block._intermediate_dense, block._output_dense  # pylint: disable=protected-access
    self.inner_kernel = _snapshot(inner.kernel, inner.kernel.shape,
                                  "intermediate_kernel")
    self.inner_bias = _snapshot(inner.bias, inner.bias.shape,
                                "intermediate_bias")
    self.outer_kernel = _snapshot(outer.kernel, outer.kernel.shape,
                                  "output_kernel")
    self.outer_bias = _snapshot(outer.bias, outer.bias.shape, "output_bias")
    self.activation = block._intermediate_activation_layer.activation  # pylint: disable=protected-access
    self.output_norm = _LayerNorm(block._output_layer_norm)  # pylint: disable=protected-access

  def _attend_by_rows(self, x, bias, batch, seq):
    """Attention with tokens as rows: one large fused MatMul for q, k, v;
    heads moved in front of the tokens by transposes."""
    qkv = tf.nn.bias_add(tf.matmul(x, self.qkv_kernel, transpose_b=True),
                         self.qkv_bias)
    qkv = tf.transpose(tf.reshape(qkv, [batch, seq, 3, self.heads,
                                        self.head_size]), [2, 0, 3, 1, 4])
    query, key, value = tf.unstack(qkv)  # each [batch, heads, seq, size]
    probs = tf.nn.softmax(tf.matmul(query, key, transpose_b=True) + bias)
    context = tf.transpose(tf.matmul(probs, value), [0, 2, 1, 3])
    return tf.matmul(tf.reshape(context, [batch * seq, -1]),
                     self.attention_kernel)

  def _attend_by_columns(self, x, bias, seq):
    """Attention of one text with tokens as columns: W x^T is already
    [3, heads, size, seq], so no transposes; faster for a few tokens."""
    # [1, seq, hidden]: oneDNN's BatchMatMul takes the transposed operands
    # as they are, where a 2-D MatMul copies them.
    qkv = tf.matmul(self.qkv_kernel, x[tf.newaxis], transpose_b=True)
    qkv += self.qkv_bias[:, tf.newaxis]
    query, key, value = tf.unstack(tf.reshape(
        qkv, [3, self.heads, self.head_size, seq]))  # each [heads, size, seq]
    probs = tf.nn.softmax(tf.matmul(query, key, transpose_a=True) + bias[0])
    context = tf.matmul(value, probs, transpose_b=True)  # [heads, size, seq]
    return tf.matmul(tf.reshape(context, [1, -1, seq]), self.attention_kernel,
                     transpose_a=True)[0]

  def __call__(self, x, bias, batch, seq, single):
    if single:
      attended = self._attend_by_columns(x, bias, seq)
    else:
      attended = self._attend_by_rows(x, bias, batch, seq)
    h = self.attention_norm(x + tf.nn.bias_add(attended,
                                               self.attention_bias))
    inner = self.activation(tf.nn.bias_add(tf.matmul(h, self.inner_kernel),
                                           self.inner_bias))
    out = tf.nn.bias_add(tf.matmul(inner, self.outer_kernel), self.outer_bias)
    return self.output_norm(out + h)


class InferenceEncoder(tf.Module):
  """What a trained float32 `ElectraEncoder` computes in inference mode.

  Args:
    encoder: a built `ElectraEncoder` (see `supports`). Its weights are
      copied when this is made: later training of `encoder` does not
      reach it.

  Call: a dict with `input_ids`, `input_mask`, `segment_ids` [batch, seq]
  int32 -> the sequence output [batch, seq, hidden] float32, as
  `encoder(inputs, training=False)`.
  """

  def __init__(self, encoder):
    super(InferenceEncoder, self).__init__(name="inference_encoder")
    usable, reason = supports(encoder)
    if not usable:
      raise ValueError("InferenceEncoder cannot stand for %s: %s" % (
          encoder.name, reason))
    self.embeddings = encoder.embeddings
    self.embedding_projection = encoder.embedding_projection
    self.relative_position_bias = encoder.relative_position_bias
    self.blocks = [_Block(block) for block in encoder.transformer_layers]

  def __call__(self, inputs):
    x = self.embeddings(inputs["input_ids"], inputs["segment_ids"],
                        training=False)
    if self.embedding_projection is not None:
      x = self.embedding_projection(x)
    bias = padding_bias(inputs["input_mask"])
    if self.relative_position_bias is not None:
      bias += tf.cast(self.relative_position_bias(x[:1], x[:1]), tf.float32)
    batch, seq = tf.shape(x)[0], tf.shape(x)[1]
    hidden = x.shape[-1]
    x = tf.reshape(x, [batch * seq, hidden])

    def blocks(single):
      y = x
      for block in self.blocks:
        y = block(y, bias, batch, seq, single)
      return y
    if inputs["input_ids"].shape[0] is not None:  # known when traced
      return tf.reshape(blocks(inputs["input_ids"].shape[0] == 1),
                        [batch, seq, hidden])
    x = tf.cond(tf.equal(batch, 1), lambda: blocks(True),
                lambda: blocks(False))
    return tf.reshape(x, [batch, seq, hidden])
