"""The ELECTRA encoder network: a BERT-style transformer over given embeddings.

Layers -> networks, as in tf-models-official: `ElectraEncoder` receives its
`ElectraEmbeddings` (model/layers/embeddings.py), so generator and
discriminator can share one instance. On top of them: an embedding
projection (when embedding and hidden sizes differ), an optional T5-style
relative position bias computed once per call and shared by all layers, and
post-LayerNorm transformer blocks
(`official.nlp.modeling.layers.TransformerScaffold`) whose attention is
`BiasedSelfAttention`, whose feed-forward activation is
`activations.inner_activation` (GELU with a backward pass that keeps only
its input) and whose dropout is `CounterDropout` (`TransformerBlock`).
"""

import tensorflow as tf
import tf_keras
from official.nlp.modeling import layers as nlp_layers

from model import activations
from model.initializers import truncated_normal
from model.layers.attention import BiasedSelfAttention
from model.layers.attention import padding_bias
from model.layers.dense import EinsumDense
from model.layers.dropout import CounterDropout


def attention_bias(hidden, input_mask, relative_position_bias=None):
  """The additive attention bias of an encoder's blocks.

  Args:
    hidden: [batch, seq_len, hidden] the embeddings (only their positions
      are read).
    input_mask: [batch, seq_len], 1 for real tokens, 0 for padding.
    relative_position_bias: the encoder's `RelativePositionBias` or None.

  Returns: [batch|1, heads|1, seq_len, seq_len] float32.
  """
  bias = padding_bias(input_mask)
  if relative_position_bias is not None:
    # The bias depends on positions only: compute it for one example.
    bias += tf.cast(relative_position_bias(hidden[:1], hidden[:1]),
                    tf.float32)
  return bias


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class TransformerBlock(nlp_layers.TransformerScaffold):
  """tf-models-official's `TransformerScaffold` whose two dropout layers
  (after the attention and after the feed-forward block) are
  `CounterDropout`s and whose feed-forward dense layers add their bias
  with `dense.add_bias`. Arguments, inputs and outputs are its own."""

  def build(self, input_shape):
    super(TransformerBlock, self).build(input_shape)
    self._attention_dropout = CounterDropout(self._dropout_rate)
    self._output_dropout = CounterDropout(self._dropout_rate)
    if self._feedforward_block is None:
      EinsumDense.adopt(self._intermediate_dense)
      EinsumDense.adopt(self._output_dense)


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class ElectraEncoder(tf_keras.Model):
  """A transformer encoder over (possibly shared) embeddings.

  Args:
    embeddings: the `ElectraEmbeddings` layer it reads its input through.
    hidden_size, num_hidden_layers, num_attention_heads, intermediate_size:
      the transformer's sizes (intermediate_size: the FFN's inner width).
    hidden_act: the FFN's activation ("gelu" is the tanh approximation,
      "gelu_exact" the erf form).
    hidden_dropout_prob, attention_probs_dropout_prob: dropout rates.
    initializer_range: stddev of the truncated-normal initial kernels.
    relative_position: add a T5-style relative position bias to the
      attention logits (bucketed into `relative_num_buckets`, distances up
      to `relative_max_distance`).

  Inputs (dict): `input_ids`, `input_mask`, `segment_ids`, each
    [batch, seq_len] int32.
  Output: sequence output [batch, seq_len, hidden_size] in the compute dtype.

  Attributes used elsewhere: `embeddings` (the shared `ElectraEmbeddings`),
  `embedding_projection` (None when embedding_size == hidden_size),
  `transformer_layers` (bottom to top; layer-wise LR decay reads them).
  """

  def __init__(self, embeddings, hidden_size, num_hidden_layers,
               num_attention_heads, intermediate_size, hidden_act="gelu",
               hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
               initializer_range=0.02, relative_position=False,
               relative_num_buckets=32, relative_max_distance=128, **kwargs):
    super(ElectraEncoder, self).__init__(**kwargs)
    self._config = dict(
        hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        intermediate_size=intermediate_size, hidden_act=hidden_act,
        hidden_dropout_prob=hidden_dropout_prob,
        attention_probs_dropout_prob=attention_probs_dropout_prob,
        initializer_range=initializer_range,
        relative_position=relative_position,
        relative_num_buckets=relative_num_buckets,
        relative_max_distance=relative_max_distance)
    self.embeddings = embeddings
    self.embedding_projection = None
    if embeddings.embedding_size != hidden_size:
      self.embedding_projection = tf_keras.layers.Dense(
          hidden_size, kernel_initializer=truncated_normal(initializer_range),
          name="embedding_projection")
    self.relative_position_bias = None
    if relative_position:
      self.relative_position_bias = nlp_layers.RelativePositionBias(
          num_heads=num_attention_heads,
          relative_attention_num_buckets=relative_num_buckets,
          relative_attention_max_distance=relative_max_distance,
          embeddings_initializer=truncated_normal(initializer_range),
          dtype=tf.float32,
          name="relative_position_bias")
    self.transformer_layers = [
        TransformerBlock(
            num_attention_heads=num_attention_heads,
            inner_dim=intermediate_size,
            inner_activation=activations.inner_activation(hidden_act),
            attention_cls=BiasedSelfAttention,
            dropout_rate=hidden_dropout_prob,
            attention_dropout_rate=attention_probs_dropout_prob,
            kernel_initializer=truncated_normal(initializer_range),
            name="layer_%d" % i)
        for i in range(num_hidden_layers)]

  def attention_bias(self, hidden, input_mask):
    """Additive attention bias, [batch|1, heads|1, seq_len, seq_len] f32."""
    return attention_bias(hidden, input_mask, self.relative_position_bias)

  def call(self, inputs, training=None):
    x = self.embeddings(inputs["input_ids"], inputs["segment_ids"],
                        training=training)
    if self.embedding_projection is not None:
      x = self.embedding_projection(x)
    bias = self.attention_bias(x, inputs["input_mask"])
    for layer in self.transformer_layers:
      x = layer([x, bias], training=training)
    return tf.cast(x, self.compute_dtype)

  def get_config(self):
    """Constructor arguments; `embeddings` is the layer object itself, as in
    tf-models-official's networks, so that a shared instance stays shared."""
    return dict(self._config, embeddings=self.embeddings, name=self.name)

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
