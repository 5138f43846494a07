"""VocabularyHead's projection (model/layers/vocabulary_head.py): float32
logits under every policy; under a mixed policy the gradient's matmuls run
in the compute dtype and stay within its rounding of the float32 ones."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from model.layers import vocabulary_head

BATCH, P, EMB, VOCAB = 2, 3, 8, 50


def _inputs():
  h = tf.random.stateless_normal([BATCH, P, EMB], [1, 2])
  table = tf.random.stateless_normal([VOCAB, EMB], [3, 4])
  upstream = tf.random.stateless_normal([BATCH, P, VOCAB], [5, 6])
  return h, table, upstream


def _value_and_grads(project, h, table, upstream):
  with tf.GradientTape() as tape:
    tape.watch([h, table])
    logits = project(h, table)
  return [logits] + tape.gradient(logits, [h, table], upstream)


def _float32_project(h, table):
  return tf.einsum("bpe,ve->bpv", h, table)


def test_bfloat16_backward_keeps_float32_logits_and_rounds_only_gradients():
  h, table, upstream = _inputs()
  ours = _value_and_grads(
      vocabulary_head.projection_with_backward_in(tf.bfloat16), h, table,
      upstream)
  exact = _value_and_grads(_float32_project, h, table, upstream)
  assert all(t.dtype == tf.float32 for t in ours)
  np.testing.assert_array_equal(ours[0].numpy(), exact[0].numpy())
  for got, want in zip(ours[1:], exact[1:]):
    # Rounding the inputs to bf16 (8 significant bits) moves each product
    # by <= 2^-8 relative; the sums over the vocabulary or positions by
    # that much of the sum of magnitudes.
    assert not np.array_equal(got.numpy(), want.numpy())
    scale = np.abs(want.numpy()).max()
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=0.05 * scale)


@pytest.mark.parametrize("policy,backward_dtype", [
    ("float32", tf.float32), ("mixed_bfloat16", tf.bfloat16)])
def test_head_uses_its_compute_dtype_for_the_backward_only(
    monkeypatch, policy, backward_dtype):
  seen = []
  original = vocabulary_head.projection_with_backward_in

  def spy(dtype):
    seen.append(tf.as_dtype(dtype))
    return original(dtype)

  monkeypatch.setattr(vocabulary_head, "projection_with_backward_in", spy)
  # tests/conftest.py puts the global policy back after the test.
  tf_keras.mixed_precision.set_global_policy(policy)
  head = vocabulary_head.VocabularyHead(EMB, VOCAB, tied=False)
  h, _, upstream = _inputs()
  with tf.GradientTape() as tape:
    logits = head.project(h)
  grads = tape.gradient(logits, head.trainable_variables, upstream)
  assert logits.dtype == tf.float32
  assert all(g is not None and g.dtype == tf.float32 for g in grads)
  # float32 takes the plain einsum; a mixed policy the custom gradient.
  assert seen == ([] if backward_dtype == tf.float32 else [backward_dtype])


class _TiedLayer(tf_keras.layers.Layer):
  """Owns a table (an AutoCastVariable under a mixed policy) and calls the
  head inside its own call, where Keras reads such variables in the
  compute dtype."""

  def __init__(self, **kwargs):
    super(_TiedLayer, self).__init__(**kwargs)
    self._autocast = False  # h stays float32, as the head's transform gives it
    self.table = self.add_weight(
        "table", shape=[VOCAB, EMB],
        initializer=tf_keras.initializers.RandomNormal(seed=7))
    self.head = vocabulary_head.VocabularyHead(EMB, VOCAB, tied=True)

  def call(self, h):
    return self.head.project(h, self.table)


def test_tied_table_is_read_in_float32_under_a_mixed_policy():
  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
  layer = _TiedLayer()
  h, _, _ = _inputs()
  logits = layer(h)
  assert type(layer.table).__name__ == "AutoCastVariable"
  table = tf.convert_to_tensor(layer.table._variable)  # pylint: disable=protected-access
  exact = _float32_project(h, table)
  rounded = _float32_project(
      h, tf.cast(tf.cast(table, tf.bfloat16), tf.float32))
  np.testing.assert_allclose(logits.numpy(), exact.numpy(), rtol=1e-6,
                             atol=1e-6)
  assert np.abs(logits.numpy() - rounded.numpy()).max() > 1e-4
