"""The ELECTRA transformer: shared embeddings and a BERT-style encoder.

Layers -> networks, as in tf-models-official:
  * `ElectraEmbeddings`: token + absolute position + segment embeddings,
    LayerNorm and dropout. One instance is shared by generator and
    discriminator (ELECTRA ties all three tables).
  * `BiasedSelfAttention`: Keras multi-head attention whose mask argument is an
    additive float bias (padding mask plus an optional relative position bias).
  * `ElectraEncoder`: embedding projection (when embedding and hidden sizes
    differ), an optional T5-style relative position bias computed once per
    call and shared by all layers, and post-LayerNorm transformer blocks
    (`official.nlp.modeling.layers.TransformerScaffold`).
"""

import tensorflow as tf
import tf_keras
from official.modeling import tf_utils
from official.nlp.modeling import layers as nlp_layers

from model import activations  # noqa: F401 (registers "gelu_exact")
from model.initializers import truncated_normal

# Added to the attention logits of padding keys; large but finite in float32.
_NEG_INF = -1e9


class ElectraEmbeddings(tf_keras.layers.Layer):
  """Token, position and segment embeddings, summed and normalised.

  Inputs: `input_ids`, `segment_ids`, both [batch, seq_len] int32.
  Output: [batch, seq_len, embedding_size] in the compute dtype.
  `word_embeddings.embeddings` ([vocab_size, embedding_size]) is the table the
  MLM and sampling heads tie their output layers to.
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
    self.word_embeddings = nlp_layers.OnDeviceEmbedding(
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
    self.dropout = tf_keras.layers.Dropout(dropout_rate)

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


class BiasedSelfAttention(tf_keras.layers.MultiHeadAttention):
  """Multi-head attention taking an additive bias instead of a boolean mask.

  `attention_mask` must be a float tensor broadcastable to
  [batch, num_heads, seq_len, seq_len]; it is added to the attention logits
  in float32 before the softmax (so bf16/fp16 logits do not overflow).
  """

  def _compute_attention_mask(self, query, value, key=None,
                              attention_mask=None, use_causal_mask=False):
    return attention_mask

  def _masked_softmax(self, attention_scores, attention_mask=None):
    scores = tf.cast(attention_scores, tf.float32)
    if attention_mask is not None:
      scores += tf.cast(attention_mask, tf.float32)
    return tf.cast(tf.nn.softmax(scores, axis=-1), attention_scores.dtype)


class ElectraEncoder(tf_keras.Model):
  """A transformer encoder over shared embeddings.

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
    if embeddings._config["embedding_size"] != hidden_size:
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
        nlp_layers.TransformerScaffold(
            num_attention_heads=num_attention_heads,
            inner_dim=intermediate_size,
            inner_activation=tf_utils.get_activation(hidden_act),
            attention_cls=BiasedSelfAttention,
            dropout_rate=hidden_dropout_prob,
            attention_dropout_rate=attention_probs_dropout_prob,
            kernel_initializer=truncated_normal(initializer_range),
            name="layer_%d" % i)
        for i in range(num_hidden_layers)]

  def attention_bias(self, hidden, input_mask):
    """Additive attention bias, [batch or 1, heads or 1, seq_len, seq_len] f32."""
    mask = tf.cast(input_mask, tf.float32)
    bias = (1.0 - mask)[:, tf.newaxis, tf.newaxis, :] * _NEG_INF
    if self.relative_position_bias is not None:
      # The bias depends on positions only: compute it for one example.
      bias += tf.cast(self.relative_position_bias(hidden[:1], hidden[:1]),
                      tf.float32)
    return bias

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
    return dict(self._config)


def build_embeddings(model_hparams, name="embeddings"):
  """The shared `ElectraEmbeddings` from a config's `model_hparams` dict."""
  m = model_hparams
  return ElectraEmbeddings(
      vocab_size=m["vocab_size"], embedding_size=m["embedding_size"],
      max_position_embeddings=m["max_position_embeddings"],
      type_vocab_size=m["type_vocab_size"],
      dropout_rate=m["hidden_dropout_prob"],
      initializer_range=m["initializer_range"], name=name)


def build_encoder(model_hparams, embeddings, relative_position=False,
                  relative_num_buckets=32, relative_max_distance=128,
                  name="encoder"):
  """An `ElectraEncoder` of the sizes in `model_hparams` over `embeddings`."""
  m = model_hparams
  return ElectraEncoder(
      embeddings, hidden_size=m["hidden_size"],
      num_hidden_layers=m["num_hidden_layers"],
      num_attention_heads=m["num_attention_heads"],
      intermediate_size=m["intermediate_size"], hidden_act=m["hidden_act"],
      hidden_dropout_prob=m["hidden_dropout_prob"],
      attention_probs_dropout_prob=m["attention_probs_dropout_prob"],
      initializer_range=m["initializer_range"],
      relative_position=relative_position,
      relative_num_buckets=relative_num_buckets,
      relative_max_distance=relative_max_distance, name=name)


def build_discriminator_encoder(config, name="encoder"):
  """The discriminator's encoder (with its own embeddings) from a config.

  `config` is a `PretrainingConfig` or `FinetuningConfig`.
  """
  return build_encoder(
      config.model_hparams, build_embeddings(config.model_hparams),
      relative_position=config.relative_position,
      relative_num_buckets=config.relative_num_buckets,
      relative_max_distance=config.relative_max_distance, name=name)
