"""The eval step of pretrain/evaluation.py on the tiny model."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from model import builders
from pretrain import eval_metrics
from pretrain import evaluation
from tests import pretrain_fixtures as fx

BATCH, SEQ_LEN, PREDS, VOCAB = 4, 16, 3, 40


def _eval_results(config, features, weights=None):
  """Eval-metric results of one batch through `make_eval_step`."""
  tf_keras.utils.set_random_seed(1234)
  model = builders.build_pretrainer(config)
  model(features, training=False)
  if weights is not None:
    model.set_weights(weights)
  strategy = tf.distribute.get_strategy()
  eval_step = evaluation.make_eval_step(config, model, strategy)
  outputs = eval_step(iter(tf.data.Dataset.from_tensors(features)))
  accumulator = eval_metrics.PretrainEvalAccumulator()
  accumulator.update({k: v.numpy() for k, v in outputs.items()})
  return accumulator.result(), model


def _np_true_token_log_prob(model, features):
  """log p_G(x_t) at the masked positions, float64 [batch, P]."""
  logits = model.generator(features, training=False)["mlm_logits"].numpy()
  logits = logits.astype(np.float64)
  logits -= logits.max(-1, keepdims=True)
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  labels = features["masked_lm_ids"].numpy()
  return np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]


def test_masked_lm_loss_is_the_cross_entropy_for_every_focal_gamma():
  features = fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=3)
  plain, model = _eval_results(
      fx.tiny_config(VOCAB, SEQ_LEN, PREDS, focal_gamma=0.0), features)
  focal, _ = _eval_results(
      fx.tiny_config(VOCAB, SEQ_LEN, PREDS, focal_gamma=2.0), features,
      weights=model.get_weights())
  weights = features["masked_lm_weights"].numpy()
  log_p = _np_true_token_log_prob(model, features)
  cross_entropy = (-log_p * weights).sum() / weights.sum()
  assert plain["masked_lm_loss"] == focal["masked_lm_loss"]
  assert focal["masked_lm_loss"] == pytest.approx(cross_entropy, rel=1e-5)
  # The focal value has its own name, only where it differs from the CE.
  assert "masked_lm_focal_loss" not in plain
  expected_focal = (-(1 - np.exp(log_p)) ** 2 * log_p * weights).sum() / (
      weights.sum())
  assert focal["masked_lm_focal_loss"] == pytest.approx(expected_focal,
                                                        rel=1e-5)
  assert focal["masked_lm_focal_loss"] < focal["masked_lm_loss"]
