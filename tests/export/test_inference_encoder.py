"""export/inference_encoder.py: the serving form of an `ElectraEncoder`
computes what the Keras encoder computes in inference, for one text (the
tokens-as-columns path) and for a padded batch (tokens as rows), with the
activations and options an encoder can have and any number of heads (1
included) and of FFN units; and the SavedModel's `_Serving.predict` uses
it."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from export import inference_encoder
from export import saved_model
from model.layers.embeddings import ElectraEmbeddings
from model.models.discriminator import Discriminator
from model.networks.encoder import ElectraEncoder

VOCAB, HIDDEN, HEADS, LAYERS = 40, 32, 4, 2
TOL = 1e-5


def _encoder(hidden_act="gelu", embedding_size=HIDDEN,
             relative_position=False, hidden=HIDDEN, heads=HEADS,
             intermediate=2 * HIDDEN):
  """A built encoder with large random weights (initializer range 0.3, so
  attention is far from uniform and a mixed-up head would show)."""
  embeddings = ElectraEmbeddings(VOCAB, embedding_size, initializer_range=0.3)
  encoder = ElectraEncoder(embeddings, hidden, LAYERS, heads, intermediate,
                           hidden_act=hidden_act, initializer_range=0.3,
                           relative_position=relative_position)
  encoder(_inputs([5]), training=False)
  # Biases and LayerNorm parameters start at 0 and 1; move them too.
  for i, variable in enumerate(encoder.weights):
    if "bias" in variable.name or "beta" in variable.name or (
        "gamma" in variable.name):
      variable.assign_add(tf.random.stateless_normal(
          variable.shape, [7, i], stddev=0.3))
  return encoder


def _inputs(lengths, seq_len=None, seed=3):
  """A batch of len(lengths) texts of those lengths, padded to seq_len."""
  seq_len = seq_len or max(lengths)
  mask = np.array([[1] * n + [0] * (seq_len - n) for n in lengths], np.int32)
  ids = tf.random.stateless_uniform([len(lengths), seq_len], [seed, 0],
                                    minval=1, maxval=VOCAB, dtype=tf.int32)
  segments = np.zeros_like(mask)
  segments[:, seq_len // 2:] = 1
  return dict(input_ids=ids * mask, input_mask=tf.constant(mask),
              segment_ids=tf.constant(segments * mask))


@pytest.mark.parametrize("hidden_act,embedding_size,relative_position", [
    ("gelu", HIDDEN, False),
    ("gelu_exact", 16, True),
    ("relu", HIDDEN, True),
])
@pytest.mark.parametrize("lengths,seq_len", [
    ([9], None),          # one text: tokens as columns
    ([9, 4, 1], 11),      # a padded batch: tokens as rows
])
@pytest.mark.parametrize("parts", [1, 2, 3])  # 3: groups of 1, 1, 2 heads
def test_it_computes_what_the_keras_encoder_computes(
    hidden_act, embedding_size, relative_position, lengths, seq_len, parts):
  encoder = _encoder(hidden_act, embedding_size, relative_position)
  inputs = _inputs(lengths, seq_len)
  fast = inference_encoder.InferenceEncoder(encoder, parts)
  expected = encoder(inputs, training=False).numpy()
  for got in (fast(inputs), tf.function(fast)(inputs)):
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=TOL, atol=TOL)


def test_heads_and_units_are_cut_into_groups_none_empty():
  split = inference_encoder._split  # pylint: disable=protected-access
  assert split(1, 2) == [(0, 1)]
  assert split(3, 2) == [(0, 1), (1, 3)]
  assert split(4, 2) == [(0, 2), (2, 4)]
  assert split(37, 2) == [(0, 18), (18, 37)]
  assert split(2, 3) == [(0, 1), (1, 2)]
  with pytest.raises(ValueError, match="parts must be at least 1, not 0"):
    inference_encoder.InferenceEncoder(_encoder(), parts=0)


@pytest.mark.parametrize("relative_position", [False, True])
@pytest.mark.parametrize("lengths,seq_len", [
    ([7], None),          # one text: tokens as columns
    ([7, 3, 1], 8),       # a padded batch: tokens as rows
])
@pytest.mark.parametrize("heads", [1, 2, 3, 4])
def test_any_number_of_heads_and_an_odd_number_of_units(
    heads, lengths, seq_len, relative_position):
  """Fewer heads than groups (1), uneven groups (3 heads: 1 and 2; 37 FFN
  units: 18 and 19), each with the default 2 parts the export uses."""
  encoder = _encoder(embedding_size=24, relative_position=relative_position,
                     hidden=24, heads=heads, intermediate=37)
  inputs = _inputs(lengths, seq_len)
  fast = inference_encoder.InferenceEncoder(encoder)
  for block in fast.blocks:
    assert [g["heads"] for g in block.head_groups] == (
        [1] if heads == 1 else [heads // 2, heads - heads // 2])
    assert [g["inner_kernel"].shape[1] for g in block.ffn_groups] == [18, 19]
  # As a SavedModel traces it: the batch size unknown, both paths built.
  any_batch = tf.function(fast, input_signature=[
      {k: tf.TensorSpec([None, None], tf.int32) for k in inputs}])
  expected = encoder(inputs, training=False).numpy()
  for got in (fast(inputs), tf.function(fast)(inputs), any_batch(inputs)):
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=TOL, atol=TOL)


def test_it_is_a_copy_that_later_training_does_not_reach():
  encoder = _encoder()
  inputs = _inputs([6])
  fast = inference_encoder.InferenceEncoder(encoder)
  before = fast(inputs).numpy()
  for variable in encoder.transformer_layers[0].weights:
    variable.assign(tf.zeros_like(variable))
  np.testing.assert_array_equal(fast(inputs).numpy(), before)
  assert not np.allclose(encoder(inputs, training=False).numpy(), before,
                         atol=1e-3)


def test_a_bfloat16_encoder_is_not_supported_and_says_why():
  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
  try:
    encoder = _encoder()
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")
  usable, reason = inference_encoder.supports(encoder)
  assert not usable and "bfloat16" in reason
  with pytest.raises(ValueError, match="compute dtype is bfloat16"):
    inference_encoder.InferenceEncoder(encoder)


def test_the_saved_models_forward_uses_it_and_falls_back_when_it_cannot():
  logs = []
  discriminator = Discriminator(_encoder(), HIDDEN, initializer_range=0.3)
  inputs = _inputs([7])
  expected = discriminator(inputs, training=False).numpy()
  serving = saved_model._Serving(discriminator, None, logs.append)  # pylint: disable=protected-access
  assert isinstance(serving.network, inference_encoder.InferenceEncoder)
  np.testing.assert_allclose(serving.predict(inputs).numpy(), expected,
                             rtol=TOL, atol=TOL)
  assert logs == ["serving the encoder as export/inference_encoder.py "
                  "computes it (2 groups side by side: for speed, serve "
                  "with inter-op threads = cores, intra-op threads = cores "
                  "/ 2)"]
  logs.clear()

  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
  try:
    mixed = Discriminator(_encoder(), HIDDEN)
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")
  serving = saved_model._Serving(mixed, None, logs.append)  # pylint: disable=protected-access
  assert serving.network is mixed.encoder
  assert logs == ["serving the Keras encoder as it is (its compute dtype "
                  "is bfloat16, not float32)"]
  np.testing.assert_array_equal(serving.predict(inputs).numpy(),
                                mixed(inputs, training=False).numpy())
