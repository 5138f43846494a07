"""The sentence-classification head: [CLS] and mean pooling."""

import numpy as np
import pytest
import tensorflow as tf

from configure import ConfigError, FinetuningConfig
from finetune.classification.classification_tasks import ClassificationHead
from finetune.classification.classification_tasks import pool_sequence

# [batch 2, seq_len 4, hidden 2]; the second example has two padding slots.
SEQUENCE = np.array([[[1., 2.], [3., 4.], [5., 6.], [7., 8.]],
                     [[1., -1.], [3., 5.], [100., 100.], [-50., 9.]]],
                    np.float32)
MASK = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], np.int32)


def test_cls_pooling_reads_the_first_position():
  pooled = pool_sequence(tf.constant(SEQUENCE), tf.constant(MASK), "cls")
  np.testing.assert_array_equal(pooled.numpy(), [[1., 2.], [1., -1.]])


def test_mean_pooling_averages_real_tokens_only():
  pooled = pool_sequence(tf.constant(SEQUENCE), tf.constant(MASK), "mean")
  np.testing.assert_allclose(pooled.numpy(), [[4., 5.], [2., 2.]])


def test_mean_pooling_is_float32_under_bfloat16():
  pooled = pool_sequence(tf.constant(SEQUENCE, tf.bfloat16),
                         tf.constant(MASK), "mean")
  assert pooled.dtype == tf.float32
  np.testing.assert_allclose(pooled.numpy(), [[4., 5.], [2., 2.]])


def test_head_logits_follow_the_pooling():
  head = ClassificationHead(3, 0.0, 0.02, pooling="mean")
  features = dict(input_mask=tf.constant(MASK))
  logits = head(tf.constant(SEQUENCE), features, training=False)["logits"]
  kernel, bias = head.dense.kernel.numpy(), head.dense.bias.numpy()
  np.testing.assert_allclose(logits.numpy(),
                             np.array([[4., 5.], [2., 2.]]) @ kernel + bias,
                             rtol=1e-6)
  config = head.get_config()
  assert (config["pooling"], config["num_outputs"]) == ("mean", 3)
  with pytest.raises(ValueError, match="input_mask"):
    head(tf.constant(SEQUENCE), {}, training=False)


def test_config_rejects_an_unknown_pooling():
  assert FinetuningConfig("m", "/d").classifier_pooling == "cls"
  with pytest.raises(ConfigError, match="classifier_pooling"):
    FinetuningConfig("m", "/d", classifier_pooling="max")
