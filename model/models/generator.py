"""The generator: ELECTRA's MLM generator and its hardness-prediction subclass.

`MaskedLMGenerator` is ELECTRA's generator: an encoder over the masked input
and the MLM head at the masked positions (tied to the input embeddings unless
`tie_output_embeddings` is false). `HardnessPredictionGenerator`
adds the sampling head of docs/method.md §7: same body, its own prediction
layer, giving one score u_t(v) per vocabulary entry. Both heads follow
`tie_output_embeddings`: tied, both read the input embedding table; untied,
each owns its output table, so neither loss's push on every vocabulary entry
moves the input embeddings.
"""

import tensorflow as tf
import tf_keras

from model.layers.vocabulary_head import VocabularyHead


def gather_positions(sequence, positions):
  """[batch, seq_len, ...] gathered at [batch, num_predictions] positions."""
  return tf.gather(sequence, positions, batch_dims=1)


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class MaskedLMGenerator(tf_keras.Model):
  """Encoder + MLM head.

  Args:
    encoder: the generator's `ElectraEncoder` (model/networks/encoder.py);
      its embeddings' table is the output table when tied.
    embedding_size, vocab_size: the vocabulary head's sizes.
    hidden_act: the head's activation.
    initializer_range: stddev of the head's truncated-normal initial kernels.
    tie_output_embeddings: the head reads the input embedding table (ELECTRA)
      instead of owning an output table.

  Inputs: dict with `masked_input_ids`, `input_mask`, `segment_ids`
    [batch, seq_len] int32 and `masked_lm_positions` [batch, P] int32.
  Output: dict with `mlm_logits` [batch, P, vocab] float32.
  """

  def __init__(self, encoder, embedding_size, vocab_size, hidden_act="gelu",
               initializer_range=0.02, tie_output_embeddings=True, **kwargs):
    super(MaskedLMGenerator, self).__init__(**kwargs)
    self.encoder = encoder
    self._head_args = (embedding_size, vocab_size, hidden_act,
                       initializer_range, tie_output_embeddings)
    self.mlm_head = self._vocabulary_head("mlm_head")

  def _vocabulary_head(self, name):
    """A `VocabularyHead` of this generator's sizes and tying."""
    (embedding_size, vocab_size, hidden_act, initializer_range,
     tie_output_embeddings) = self._head_args
    return VocabularyHead(embedding_size, vocab_size, hidden_act,
                                initializer_range,
                                tied=tie_output_embeddings, name=name)

  def masked_hidden(self, inputs, training=None):
    hidden = self.encoder(
        dict(input_ids=inputs["masked_input_ids"],
             input_mask=inputs["input_mask"],
             segment_ids=inputs["segment_ids"]), training=training)
    return gather_positions(hidden, inputs["masked_lm_positions"])

  def call(self, inputs, training=None):
    hidden = self.masked_hidden(inputs, training=training)
    table = self.encoder.embeddings.embedding_table
    return dict(mlm_logits=self.mlm_head(hidden, table))

  def get_config(self):
    """Constructor arguments, the encoder as the network object itself."""
    (embedding_size, vocab_size, hidden_act, initializer_range,
     tie_output_embeddings) = self._head_args
    return dict(encoder=self.encoder, embedding_size=embedding_size,
                vocab_size=vocab_size, hidden_act=hidden_act,
                initializer_range=initializer_range,
                tie_output_embeddings=tie_output_embeddings, name=self.name)

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)


@tf_keras.utils.register_keras_serializable(package="electra_hp")
class HardnessPredictionGenerator(MaskedLMGenerator):
  """MLM generator with a sampling head (HP-Loss or HP-Dist).

  Args: as `MaskedLMGenerator`'s; the sampling head has the MLM head's sizes
  and tying.

  Output: dict with `mlm_logits` and `sampling_scores` u_t, both
  [batch, P, vocab] float32, and `sampling_features`, the sampling head's
  transformed hidden states [batch, P, embedding_size] float32, from which
  `sampling_scores_at` reads u_t at chosen ids. How u_t is read (sigmoid
  for HP-Loss, softmax for HP-Dist) is the sampler's business
  (model/samplers.py).
  """

  def __init__(self, encoder, embedding_size, vocab_size, hidden_act="gelu",
               initializer_range=0.02, tie_output_embeddings=True, **kwargs):
    super(HardnessPredictionGenerator, self).__init__(
        encoder, embedding_size, vocab_size, hidden_act, initializer_range,
        tie_output_embeddings, **kwargs)
    self.sampling_head = self._vocabulary_head("sampling_head")

  def call(self, inputs, training=None):
    hidden = self.masked_hidden(inputs, training=training)
    table = self.encoder.embeddings.embedding_table
    mlm_logits = self.mlm_head(hidden, table)  # built first: initial values
    features = self.sampling_head.transform(hidden)
    with tf.name_scope(self.sampling_head.name):
      scores = self.sampling_head.project(features, table)
    return dict(mlm_logits=mlm_logits, sampling_scores=scores,
                sampling_features=features)

  def sampling_scores_at(self, outputs, ids):
    """u_t at ids [batch, P] from `call`'s `outputs`: [batch, P] float32,
    equal to gathering `sampling_scores` there, with a gradient of one
    table row per position."""
    with tf.name_scope(self.sampling_head.name):
      return self.sampling_head.project_at(
          outputs["sampling_features"], ids,
          self.encoder.embeddings.embedding_table)
