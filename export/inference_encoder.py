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
the matmuls. The heads and the FFN's inner units are each cut into two
groups (one if there is one head) whose ops are independent until their
outputs are summed, so that the executor runs them side by side: at a
few dozen tokens a matmul gains little from a second intra-op thread, so
serve with an inter-op pool of the cores and an intra-op pool of half.
A batch of one text takes the tokens as columns instead (W x^T is already
[q|k|v, heads, size, tokens]): no transposes, which at a few dozen tokens
cost as much as the matmuls.
The query scale 1/sqrt(size) is folded into Wq and bq; the rest is the
encoder's own arithmetic, so the outputs agree with the Keras encoder's to
float32 rounding (tests/export/test_inference_encoder.py). The embeddings,
the embedding projection and the relative position bias are the encoder's
own layers.

Measured with bench/serving.py (README, "Serving on a CPU beside
transformers").

Float32 encoders of post-LayerNorm blocks only: `supports(encoder)` says
why another one is not, and the export then serves the Keras model.
"""

import math

import tensorflow as tf

from model.networks.encoder import attention_bias


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


def _split(total, parts):
  """[(start, stop)] of min(parts, total) slices of range(total), total >=
  1: none empty, their sizes differ by at most one (3 in 2: 1 and 2)."""
  parts = min(parts, total)
  bounds = [total * i // parts for i in range(parts + 1)]
  return list(zip(bounds[:-1], bounds[1:]))


class _Block(tf.Module):
  """One post-LayerNorm transformer block of the encoder, for inference.

  Args:
    block: a built `TransformerScaffold` (BiasedSelfAttention, no
      feedforward_cls).
    parts: the attention heads and the FFN's inner units are each cut into
      this many groups (fewer if there are fewer heads or units: no group
      is empty), each computed by ops of its own whose outputs are
      summed: independent ops TensorFlow's executor runs side by side.

  Call: x [tokens, hidden] float32 (the batch's tokens flattened, batch
  major), bias [batch|1, heads|1, seq, seq] float32, batch, seq (scalar
  int32 tensors), single (a Python bool: the batch holds one text) ->
  [tokens, hidden].
  """

  def __init__(self, block, parts=1):
    super(_Block, self).__init__(name=block.name)
    attention = block._attention_layer  # pylint: disable=protected-access
    self.head_size = attention._key_dim  # pylint: disable=protected-access
    scales = (1.0 / math.sqrt(float(self.head_size)), 1.0, 1.0)
    projections = (attention._query_dense, attention._key_dense,  # pylint: disable=protected-access
                   attention._value_dense)  # pylint: disable=protected-access
    # Per projection: kernel [hidden, heads, size] -> [heads, size, hidden].
    kernels = [tf.transpose(d.kernel, [1, 2, 0]) * s
               for d, s in zip(projections, scales)]
    biases = [d.bias * s for d, s in zip(projections, scales)]
    out = attention._output_dense.kernel  # pylint: disable=protected-access
    self.head_groups = []
    for i, (a, b) in enumerate(_split(attention._num_heads, parts)):  # pylint: disable=protected-access
      # qkv: [3 * heads * size, hidden], rows q, then k, then v: one MatMul
      # gives [tokens, 3 * width] (transpose_b) or [3 * width, tokens].
      self.head_groups.append(dict(
          heads=b - a, first_head=a,
          qkv_kernel=_snapshot(tf.stack([k[a:b] for k in kernels]), [
              3 * (b - a) * self.head_size, -1], "qkv_kernel_%d" % i),
          qkv_bias=_snapshot(tf.stack([v[a:b] for v in biases]), [-1],
                             "qkv_bias_%d" % i),
          output_kernel=_snapshot(out[a:b], [(b - a) * self.head_size, -1],
                                  "attention_output_kernel_%d" % i)))
    self.attention_bias = _snapshot(attention._output_dense.bias, [-1],  # pylint: disable=protected-access
                                    "attention_output_bias")
    self.attention_norm = _LayerNorm(block._attention_layer_norm)  # pylint: disable=protected-access
    inner, outer = block._intermediate_dense, block._output_dense  # pylint: disable=protected-access
    self.ffn_groups = [dict(
        inner_kernel=_snapshot(inner.kernel[:, a:b], [-1, b - a],
                               "intermediate_kernel_%d" % i),
        inner_bias=_snapshot(inner.bias[a:b], [-1], "intermediate_bias_%d" % i),
        outer_kernel=_snapshot(outer.kernel[a:b], [b - a, -1],
                               "output_kernel_%d" % i))
                       for i, (a, b) in enumerate(_split(inner.kernel.shape[1],
                                                         parts))]
    self.outer_bias = _snapshot(outer.bias, [-1], "output_bias")
    self.activation = block._intermediate_activation_layer.activation  # pylint: disable=protected-access
    self.output_norm = _LayerNorm(block._output_layer_norm)  # pylint: disable=protected-access

  def _attend_by_rows(self, group, x, bias, batch, seq):
    """Attention with tokens as rows: one large fused MatMul for q, k, v;
    heads moved in front of the tokens by transposes."""
    qkv = tf.nn.bias_add(tf.matmul(x, group["qkv_kernel"], transpose_b=True),
                         group["qkv_bias"])
    qkv = tf.transpose(tf.reshape(qkv, [batch, seq, 3, group["heads"],
                                        self.head_size]), [2, 0, 3, 1, 4])
    query, key, value = tf.unstack(qkv)  # each [batch, heads, seq, size]
    probs = tf.nn.softmax(tf.matmul(query, key, transpose_b=True) + bias)
    context = tf.transpose(tf.matmul(probs, value), [0, 2, 1, 3])
    return tf.matmul(tf.reshape(context, [batch * seq, -1]),
                     group["output_kernel"])

  def _attend_by_columns(self, group, x, bias, seq):
    """Attention of one text with tokens as columns: W x^T is already
    [3, heads, size, seq], so no transposes; faster for a few tokens."""
    # [1, seq, hidden]: oneDNN's BatchMatMul takes the transposed operands
    # as they are, where a 2-D MatMul copies them.
    qkv = tf.matmul(group["qkv_kernel"], x[tf.newaxis], transpose_b=True)
    qkv += group["qkv_bias"][:, tf.newaxis]
    query, key, value = tf.unstack(tf.reshape(
        qkv, [3, group["heads"], self.head_size, seq]))  # [heads, size, seq]
    probs = tf.nn.softmax(tf.matmul(query, key, transpose_a=True) + bias[0])
    context = tf.matmul(value, probs, transpose_b=True)  # [heads, size, seq]
    return tf.matmul(tf.reshape(context, [1, -1, seq]),
                     group["output_kernel"], transpose_a=True)[0]

  def _feed_forward(self, group, h):
    inner = self.activation(tf.nn.bias_add(
        tf.matmul(h, group["inner_kernel"]), group["inner_bias"]))
    return tf.matmul(inner, group["outer_kernel"])

  def __call__(self, x, bias, batch, seq, single):
    if bias.shape[1] != 1:  # a bias per head (relative positions): slice it
      groups = [(g, bias[:, g["first_head"]:g["first_head"] + g["heads"]])
                for g in self.head_groups]
    else:
      groups = [(g, bias) for g in self.head_groups]
    if single:
      attended = [self._attend_by_columns(g, x, b, seq) for g, b in groups]
    else:
      attended = [self._attend_by_rows(g, x, b, batch, seq)
                  for g, b in groups]
    h = self.attention_norm(x + tf.nn.bias_add(tf.add_n(attended),
                                               self.attention_bias))
    out = tf.add_n([self._feed_forward(g, h) for g in self.ffn_groups])
    return self.output_norm(tf.nn.bias_add(out, self.outer_bias) + h)


class InferenceEncoder(tf.Module):
  """What a trained float32 `ElectraEncoder` computes in inference mode.

  Args:
    encoder: a built `ElectraEncoder` (see `supports`). Its weights are
      copied when this is made: later training of `encoder` does not
      reach it.
    parts: groups of heads and of FFN units computed side by side, at
      least 1 (fewer groups of heads if the encoder has fewer heads: see
      `_Block`). Served with an inter-op pool of the cores and an
      intra-op pool of half, 2 groups take one 27-token text in 6.8 ms
      where 1 takes 9.9, and a batch of 32 in 161 ms where 1 takes 276
      (all-MiniLM-L6-v2's sizes, 2 cores); 3 were slower than 2.
    by_columns: a batch of one text takes the tokens as columns (a
      `tf.cond` on the batch size when it is not known when traced);
      False: always as rows, one branch (for TFLite, export/tflite.py).

  Call: a dict with `input_ids`, `input_mask`, `segment_ids` [batch, seq]
  int32 -> the sequence output [batch, seq, hidden] float32, as
  `encoder(inputs, training=False)`. It computes inference only; `training`
  is taken so that it stands where the Keras encoder is called, and must
  not be True.
  """

  def __init__(self, encoder, parts=2, by_columns=True):
    super(InferenceEncoder, self).__init__(name="inference_encoder")
    usable, reason = supports(encoder)
    if not usable:
      raise ValueError("InferenceEncoder cannot stand for %s: %s" % (
          encoder.name, reason))
    if parts < 1:
      raise ValueError("parts must be at least 1, not %d." % parts)
    self.embeddings = encoder.embeddings
    self.embedding_projection = encoder.embedding_projection
    self.relative_position_bias = encoder.relative_position_bias
    self.parts = parts
    self.by_columns = by_columns
    self.blocks = [_Block(block, parts) for block in encoder.transformer_layers]

  def __call__(self, inputs, training=None):
    if training:
      raise ValueError("InferenceEncoder computes inference only.")
    x = self.embeddings(inputs["input_ids"], inputs["segment_ids"],
                        training=False)
    if self.embedding_projection is not None:
      x = self.embedding_projection(x)
    bias = attention_bias(x, inputs["input_mask"],
                          self.relative_position_bias)
    batch, seq = tf.shape(x)[0], tf.shape(x)[1]
    hidden = x.shape[-1]
    x = tf.reshape(x, [batch * seq, hidden])

    def blocks(single):
      y = x
      for block in self.blocks:
        y = block(y, bias, batch, seq, single)
      return y
    if not self.by_columns:
      return tf.reshape(blocks(False), [batch, seq, hidden])
    if inputs["input_ids"].shape[0] is not None:  # known when traced
      return tf.reshape(blocks(inputs["input_ids"].shape[0] == 1),
                        [batch, seq, hidden])
    x = tf.cond(tf.equal(batch, 1), lambda: blocks(True),
                lambda: blocks(False))
    return tf.reshape(x, [batch, seq, hidden])
