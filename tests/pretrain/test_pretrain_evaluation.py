"""The eval step of pretrain/evaluation.py on the tiny model."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from model import samplers
from pretrain import eval_metrics
from pretrain import evaluation
from pretrain import rank_stats
from tests import pretrain_fixtures as fx

BATCH, SEQ_LEN, PREDS, VOCAB = 4, 16, 3, 40


def _eval_results(config, features, weights=None):
  """Eval-metric results of one batch through `make_eval_step`."""
  tf_keras.utils.set_random_seed(1234)
  model = fx.build_pretrainer(config)
  model(features, training=False)
  if weights is not None:
    model.set_weights(weights)
  strategy = tf.distribute.get_strategy()
  eval_step = evaluation.make_eval_step(model, strategy,
                                        bool(config.focal_gamma))
  outputs = eval_step(iter(tf.data.Dataset.from_tensors(features)))
  batch, _ = evaluation.split_pg_estimator(
      {k: v.numpy() for k, v in outputs.items()})
  batch, _ = evaluation.split_t1(batch)
  accumulator = eval_metrics.PretrainEvalAccumulator()
  accumulator.update(batch)
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


def _eval_outputs(model, config, features):
  """The eval step's per-batch outputs, as numpy arrays."""
  eval_step = evaluation.make_eval_step(model, tf.distribute.get_strategy(),
                                        bool(config.focal_gamma))
  outputs = eval_step(iter(tf.data.Dataset.from_tensors(features)))
  return {k: v.numpy() for k, v in outputs.items()}


def _spread_distributions(model):
  """p_G and (in HP modes) the sampler's scores far from uniform and from
  each other: random output biases on the vocabulary heads."""
  rng = np.random.default_rng(7)
  heads = [model.generator.mlm_head]
  if model.learns_sampler:
    heads.append(model.generator.sampling_head)
  for head in heads:
    head.output_bias.assign(rng.normal(0, 3, VOCAB).astype(np.float32))


@pytest.mark.parametrize("mode", ["uniform", "hp_loss", "hp_dist"])
def test_evaluation_draws_from_the_configured_sampler_without_warmup(mode):
  # Issue 30: with a warm-up, evaluation's draw came from p_G (step 0).
  features = fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=3)
  config = fx.tiny_config(VOCAB, SEQ_LEN, PREDS, sampling=mode,
                          sampling_warmup_steps=1000)
  tf_keras.utils.set_random_seed(1234)
  model = fx.build_pretrainer(config)
  model(features, training=False)
  _spread_distributions(model)
  got = _eval_outputs(model, config, features)
  after_warmup = model(features, training=False, step=10 ** 6)
  under_pg = model(features, training=False, step=0)
  real = features["masked_lm_weights"].numpy() > 0
  np.testing.assert_array_equal(got["sampled_tokens"][real],
                                after_warmup["sampled_tokens"].numpy()[real])
  assert not np.array_equal(got["sampled_tokens"][real],
                            under_pg["sampled_tokens"].numpy()[real])
  if mode != "uniform":
    np.testing.assert_allclose(
        got["est_log_disc_loss"],
        after_warmup["est_log_disc_loss"].numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode, drawn_from", [
    ("mlm", ("pG",)), ("uniform", ("uniform",)), ("hp_loss", ("pS", "pG")),
    ("hp_dist", ("pS", "pG"))])
def test_hardness_accuracies_are_filed_under_the_distribution_drawn_from(
    mode, drawn_from):
  # Issue 30: uniform draws were filed as disc_accuracy_pG_*.
  features = fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=4)
  results, _ = _eval_results(fx.tiny_config(VOCAB, SEQ_LEN, PREDS,
                                            sampling=mode), features)
  filed = sorted(k for k in results if k.startswith("disc_accuracy_")
                 and k.split("_")[2] in eval_metrics.DRAW_SOURCES)
  assert filed == sorted("disc_accuracy_%s_%s" % (src, where)
                         for src in drawn_from
                         for where in ("all", "masked")), filed
  # The configured sampler's draw is the one D's ELECTRA metrics score.
  assert results["disc_accuracy_%s_all" % drawn_from[0]] == pytest.approx(
      results["disc_accuracy"])


def _evaluated(config, features, step):
  """`evaluation`'s merged results of one batch evaluated at `step`."""
  tf_keras.utils.set_random_seed(1234)
  model = fx.build_pretrainer(config)
  model(features, training=False)
  _spread_distributions(model)
  eval_step = evaluation.make_eval_step(model, tf.distribute.get_strategy())
  outputs = eval_step(iter(tf.data.Dataset.from_tensors(features)),
                      tf.constant(step, tf.int64))
  batch, _ = evaluation.split_pg_estimator(
      {k: v.numpy() for k, v in outputs.items()})
  batch, t1_batch = evaluation.split_t1(batch)
  main, t1 = (eval_metrics.PretrainEvalAccumulator() for _ in range(2))
  main.update(batch)
  if t1_batch:
    t1.update(t1_batch)
  results = main.result()
  results.update(evaluation.t1_metrics(results, t1.result()))
  return results, t1_batch is not None, model


def test_plain_electra_makes_no_second_pass_and_its_auc_is_the_t1_auc():
  features = fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=6)
  results, second_pass, _ = _evaluated(
      fx.tiny_config(VOCAB, SEQ_LEN, PREDS, sampling="mlm"), features, 0)
  assert not second_pass
  assert results["disc_auc_t1"] == results["disc_auc"]
  assert results["disc_loss_replaced_t1"] == results["disc_loss_replaced"]


@pytest.mark.parametrize("hparams", [
    dict(sampling="mlm", temperature=5.0, temperature_final=1.0,
         temperature_decay_steps=100),
    dict(sampling="uniform"), dict(sampling="hp_loss")])
def test_other_draws_are_scored_once_more_on_temperature_1_draws(hparams):
  features = fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=6)
  config = fx.tiny_config(VOCAB, SEQ_LEN, PREDS, **hparams)
  results, second_pass, model = _evaluated(config, features, 0)
  assert second_pass
  plain = model(features, training=False, sampler=samplers.GeneratorSampler(),
                temperature=1.0)
  labels = plain["disc_labels"].numpy()
  real = features["input_mask"].numpy() > 0
  assert results["disc_auc_t1"] == pytest.approx(rank_stats.exact_auc(
      plain["disc_probs"].numpy()[real], labels[real]))
  assert isinstance(results["replacement_log10_rank_t1"], float)
  replaced = real & (labels > 0)
  assert results["disc_loss_replaced_t1"] == pytest.approx(
      plain["disc_loss_per_token"].numpy()[replaced].mean(), rel=1e-5)


def test_the_curriculum_is_evaluated_at_the_temperature_of_its_step():
  features = fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=6)
  config = fx.tiny_config(VOCAB, SEQ_LEN, PREDS, sampling="mlm",
                          temperature=5.0, temperature_final=1.0,
                          temperature_decay_steps=100)
  early, _, model = _evaluated(config, features, 0)
  late, _, _ = _evaluated(config, features, 100)
  # At its end the curriculum draws as plain ELECTRA does.
  assert late["disc_auc"] == pytest.approx(late["disc_auc_t1"])
  hot = model(features, training=False, step=0)
  assert early["sampled_masked_lm_accuracy"] == pytest.approx(
      float(np.mean(hot["sampled_tokens"].numpy()[
          features["masked_lm_weights"].numpy() > 0] ==
          features["masked_lm_ids"].numpy()[
              features["masked_lm_weights"].numpy() > 0])))
