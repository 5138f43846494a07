"""Tests of pretrain/step_statistics.py: the progress line's estimator r."""

import math

import numpy as np
import tensorflow as tf
import tf_keras

from pretrain import eval_metrics
from pretrain import step_statistics
from tests import pretrain_fixtures as fx

BATCH, SEQ_LEN, PREDS, VOCAB = 8, 16, 3, 40
# Tokens HP-Dist's p_S puts all its mass on, and log p_G at each (about):
# every log-ratio log p_S / p_G is above 88, where exp overflows float32.
_FAVOURED = (10, 11, 12, 13)
_LOG_PG = (-150.0, -130.0, -110.0, -90.0)


def _hp_dist_with_huge_ratios(features):
  tf_keras.utils.set_random_seed(1234)
  model = fx.build_pretrainer(
      fx.tiny_config(VOCAB, SEQ_LEN, PREDS, sampling="hp_dist"))
  model(features, training=False)
  sampling_bias = np.zeros(VOCAB, np.float32)
  mlm_bias = np.zeros(VOCAB, np.float32)
  for token, log_pg in zip(_FAVOURED, _LOG_PG):
    sampling_bias[token], mlm_bias[token] = 150.0, log_pg
  model.generator.sampling_head.output_bias.assign(sampling_bias)
  model.generator.mlm_head.output_bias.assign(mlm_bias)
  return model


def test_hp_dist_estimator_stays_finite_where_p_s_over_p_g_overflows():
  # Issue 30: exp(log p_S - log p_G) gave inf, and hp_r squared it.
  features = fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=9)
  model = _hp_dist_with_huge_ratios(features)
  out = model(features, training=False, step=10)
  real = features["masked_lm_weights"].numpy() > 0
  assert set(np.unique(out["sampled_tokens"].numpy()[real])) <= set(_FAVOURED)
  sums = step_statistics.step_statistics(out, features, learns_sampler=True)
  summary = step_statistics.summarize_sums(
      {k: v.numpy() for k, v in sums.items()}, num_steps=1)
  assert math.isfinite(summary["hp_estimator_pearson"]), summary
  # The estimate is log p_S / p_G itself, finite, at least 88.
  estimate = out["est_log_disc_loss"].numpy()[real]
  expected = (out["sample_log_prob"] - out["generator_log_prob"]).numpy()
  np.testing.assert_allclose(estimate, expected[real], rtol=1e-6)
  assert np.all(np.isfinite(estimate)) and estimate.min() > 88.0
  # The evaluation's correlations are defined and finite too.
  accumulator = eval_metrics.PretrainEvalAccumulator()
  accumulator.update(dict(
      est_log_disc_loss=out["est_log_disc_loss"].numpy(),
      actual_log_disc_loss=out["actual_log_disc_loss"].numpy(),
      masked_lm_weights=features["masked_lm_weights"].numpy()))
  result = accumulator.result()
  assert math.isfinite(result["estimator_spearman"]), result
  assert math.isfinite(result["estimator_pearson"]), result


def test_actual_log_disc_loss_is_the_log_of_d_s_loss_at_the_draw():
  features = fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=10)
  model = _hp_dist_with_huge_ratios(features)
  out = model(features, training=False, step=10)
  np.testing.assert_allclose(out["actual_log_disc_loss"].numpy(),
                             np.log(out["actual_disc_loss"].numpy()),
                             rtol=1e-5)


def test_hp_r_is_the_pearson_correlation_of_the_logs():
  rng = np.random.default_rng(0)
  est, actual = rng.normal(0, 3, (2, 5)), rng.normal(-1, 1, (2, 5))
  weights = np.ones((2, 5), np.float32)
  weights[1, 4] = 0.0
  out = dict(total_loss=tf.constant(1.0), mlm_loss=tf.constant(1.0),
             disc_loss=tf.constant(1.0), sampling_loss=tf.constant(1.0),
             masked_lm_preds=tf.zeros((2, 5), tf.int32),
             sampled_tokens=tf.zeros((2, 5), tf.int32),
             disc_probs=tf.zeros((2, 4)), disc_labels=tf.zeros((2, 4),
                                                               tf.int32),
             disc_loss_per_token=tf.zeros((2, 4)),
             est_log_disc_loss=tf.constant(est, tf.float32),
             actual_log_disc_loss=tf.constant(actual, tf.float32))
  features = dict(masked_lm_weights=tf.constant(weights),
                  masked_lm_ids=tf.zeros((2, 5), tf.int32),
                  input_mask=tf.ones((2, 4), tf.int32))
  sums = step_statistics.step_statistics(out, features, learns_sampler=True)
  summary = step_statistics.summarize_sums(
      {k: v.numpy() for k, v in sums.items()}, num_steps=1)
  real = weights > 0
  expected = np.corrcoef(est[real], actual[real])[0, 1]
  assert abs(summary["hp_estimator_pearson"] - expected) < 1e-4


def test_d_losses_on_replaced_and_original_tokens_are_apart():
  out = dict(total_loss=tf.constant(1.0), mlm_loss=tf.constant(1.0),
             disc_loss=tf.constant(1.0), sampling_loss=tf.constant(0.0),
             masked_lm_preds=tf.zeros((1, 2), tf.int32),
             sampled_tokens=tf.ones((1, 2), tf.int32),
             disc_probs=tf.zeros((1, 4)),
             disc_labels=tf.constant([[1, 0, 1, 0]], tf.int32),
             disc_loss_per_token=tf.constant([[2.0, 0.5, 4.0, 9.0]]))
  features = dict(masked_lm_weights=tf.ones((1, 2)),
                  masked_lm_ids=tf.zeros((1, 2), tf.int32),
                  input_mask=tf.constant([[1, 1, 1, 0]], tf.int32))
  sums = step_statistics.step_statistics(out, features, learns_sampler=False)
  summary = step_statistics.summarize_sums(
      {k: v.numpy() for k, v in sums.items()}, num_steps=1)
  # The padding token's 9.0 counts nowhere.
  assert summary["disc_loss_replaced"] == 3.0
  assert summary["disc_loss_original"] == 0.5
