"""Tests of model/layers/replaced_token_head.py under mixed precision."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from model.layers.replaced_token_head import ReplacedTokenHead

BATCH, SEQ_LEN, HIDDEN = 2, 8, 16


@pytest.fixture(params=["mixed_bfloat16", "mixed_float16"])
def mixed_policy(request):
  tf_keras.mixed_precision.set_global_policy(request.param)
  try:
    yield request.param
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")


def test_logit_is_computed_in_float32_under_a_mixed_policy(mixed_policy):
  head = ReplacedTokenHead(HIDDEN, initializer_range=0.5)
  hidden = tf.cast(tf.random.stateless_normal([BATCH, SEQ_LEN, HIDDEN],
                                              [1, 2]), mixed_policy[6:])
  head(hidden)
  # A bias of 3 puts z where bfloat16 keeps steps of 1/64 (float16: 1/512).
  head.logit.bias.assign([3.0])
  z = head(hidden)
  assert z.dtype == tf.float32
  assert head.dense.compute_dtype == mixed_policy[6:]
  transformed = head.dense(hidden).numpy().astype(np.float64)
  kernel = head.logit.kernel.numpy().astype(np.float64)
  expected = (transformed @ kernel)[..., 0] + 3.0
  np.testing.assert_allclose(z.numpy(), expected, rtol=1e-6, atol=1e-6)
  # Rounded to the compute dtype, it would be visibly off somewhere.
  rounded = tf.cast(tf.cast(expected, mixed_policy[6:]), tf.float64).numpy()
  assert np.abs(rounded - expected).max() > 1e-4
