"""Tests of the pre-trainer/sampler hand-off (model/samplers.py): the named
tuples `SamplerInputs`, `Draw`, `DrawnTerms`, `HeadLossInputs`, the samplers'
`draw` / `drawn_terms` / `head_loss`, and the warm-up as `WarmupSampler`."""

import numpy as np
import pytest
import tensorflow as tf

from model import losses
from model import samplers
from model import sampling
from model.models.pretrainer import ElectraPretrainer
from tests import pretrain_fixtures as fx

BATCH, PREDS, VOCAB = 2, 3, 6
ORIGINAL = tf.constant([[1, 0, 5], [2, 2, 4]], tf.int32)
SAMPLED = tf.constant([[3, 0, 1], [2, 5, 4]], tf.int32)


def _inputs(step=0, seed=0):
  """`SamplerInputs` of random logits and scores, [BATCH, PREDS, VOCAB]."""
  logits = tf.random.stateless_normal([BATCH, PREDS, VOCAB], [seed, 1])
  scores = tf.random.stateless_normal([BATCH, PREDS, VOCAB], [seed, 2],
                                      stddev=3.0)
  return samplers.SamplerInputs(
      log_pg=sampling.generator_log_probs(logits), original_ids=ORIGINAL,
      scores=scores,
      scores_at=lambda ids: tf.gather(scores, ids, batch_dims=2), step=step)


def _at(values, ids=SAMPLED):
  return sampling.gather_vocab(values, ids).numpy()


def test_draw_normalise_applies_one_log_softmax_when_needed():
  u = tf.random.stateless_normal([BATCH, PREDS, VOCAB], [3, 4])
  draw = samplers.Draw(u, normalised=False).normalise()
  assert draw.normalised
  np.testing.assert_array_equal(draw.log_probs.numpy(),
                                tf.nn.log_softmax(u).numpy())
  assert draw.normalise() is draw


def test_a_drawn_draw_reads_normalised_log_probs_from_its_log_mass():
  u = tf.random.stateless_normal([BATCH, PREDS, VOCAB], [3, 4], stddev=3.0)
  seeds = tf.constant([[1, 2], [3, 4]])
  sampled, log_mass = sampling.categorical_sample_and_log_mass(u, seeds)
  np.testing.assert_allclose(log_mass.numpy(),
                             tf.reduce_logsumexp(u, -1).numpy(), rtol=1e-6)
  draw = samplers.Draw(u, normalised=False)
  with pytest.raises(ValueError, match="normaliser"):
    draw.log_prob_at(sampled)
  drawn = draw.drawn(log_mass)
  np.testing.assert_allclose(drawn.log_prob_at(sampled).numpy(),
                             _at(tf.nn.log_softmax(u), sampled), atol=1e-5)
  # A normalised draw is its own normaliser: the log mass is not read.
  normalised = draw.normalise()
  assert normalised.drawn(log_mass) is normalised
  np.testing.assert_array_equal(normalised.log_prob_at(sampled).numpy(),
                                _at(normalised.log_probs, sampled))


def test_draws_of_the_samplers_and_disallow_correct():
  inputs = _inputs()
  draw = samplers.GeneratorSampler().draw(inputs)
  assert draw.normalised and draw.log_probs is inputs.log_pg
  unnormalised = samplers.HPDistSampler().draw(inputs)
  assert not unnormalised.normalised
  np.testing.assert_array_equal(unnormalised.log_probs.numpy(),
                                inputs.scores.numpy())
  for sampler in (samplers.GeneratorSampler(), samplers.HPDistSampler()):
    forbidden = sampler.draw(inputs, disallow_correct=True)
    assert forbidden.normalised
    np.testing.assert_array_equal(
        forbidden.log_probs.numpy(),
        sampling.forbid_original(sampler.draw(inputs).log_probs,
                                 ORIGINAL).numpy())
    assert np.all(_at(forbidden.log_probs, ORIGINAL) < -1e8)


def test_warmup_sampler_draws_from_p_g_then_from_the_wrapped_sampler():
  inner = samplers.HPDistSampler(weight_clip=3.0)
  warm = samplers.WarmupSampler(inner, steps=4)
  assert (warm.name, warm.drawn_from, warm.learns,
          warm.normalises_over_batch) == ("hp_dist", "pS", True, True)
  assert warm.draws_normalised and not inner.draws_normalised
  for step in (0, 3, tf.constant(3, tf.int64)):
    draw = warm.draw(_inputs(step))
    assert draw.normalised
    np.testing.assert_array_equal(draw.log_probs.numpy(),
                                  _inputs().log_pg.numpy())
  for step in (4, tf.constant(100)):
    draw = warm.draw(_inputs(step))
    np.testing.assert_array_equal(
        draw.log_probs.numpy(), tf.nn.log_softmax(_inputs().scores).numpy())
  # disallow_correct applies in and after the warm-up.
  for step in (0, 4):
    draw = warm.draw(_inputs(step), disallow_correct=True)
    assert np.all(_at(draw.log_probs, ORIGINAL) < -1e8)


def test_warmup_sampler_keeps_the_wrapped_head():
  inner = samplers.HPDistSampler(weight_clip=3.0)
  warm = samplers.WarmupSampler(inner, steps=4)
  inputs = _inputs(step=0)
  draw = warm.draw(inputs)
  terms = warm.drawn_terms(inputs, draw, SAMPLED, None)
  # During the warm-up the draw is p_G's: p_sample(x') = p_G(x').
  np.testing.assert_array_equal(terms.sample_log_prob.numpy(),
                                _at(inputs.log_pg))
  np.testing.assert_allclose(
      terms.head_term.numpy(), _at(tf.nn.log_softmax(inputs.scores)),
      rtol=1e-5, atol=1e-6)
  loss_inputs = samplers.HeadLossInputs(
      head_term=terms.head_term, sample_log_prob=terms.sample_log_prob,
      generator_log_prob=tf.constant(_at(inputs.log_pg)),
      disc_loss=tf.fill([BATCH, PREDS], 0.5), weights=tf.ones([BATCH, PREDS]))
  np.testing.assert_array_equal(warm.head_loss(loss_inputs).numpy(),
                                inner.head_loss(loss_inputs).numpy())
  assert samplers.with_warmup(inner, 4).inner is inner
  assert samplers.with_warmup(inner, 0) is inner
  generator = samplers.GeneratorSampler()
  assert samplers.with_warmup(generator, 4) is generator


def test_sampler_without_a_head_gives_the_draw_s_log_prob_only():
  inputs = _inputs()
  sampler = samplers.UniformSampler()
  terms = sampler.drawn_terms(inputs, sampler.draw(inputs), SAMPLED, None)
  assert isinstance(terms, samplers.DrawnTerms)
  np.testing.assert_allclose(terms.sample_log_prob.numpy(),
                             np.full([BATCH, PREDS], -np.log(VOCAB)),
                             rtol=1e-6)
  np.testing.assert_array_equal(terms.est_log_disc_loss.numpy(), 0.0)
  assert terms.head_term is None
  assert sampler.head_loss(None) is None
  with pytest.raises(ValueError, match="normaliser"):
    sampler.drawn_terms(inputs, samplers.Draw(inputs.scores, False),
                        SAMPLED, None)


def test_hp_loss_terms_read_d_only_through_stop_gradient():
  inputs = _inputs()
  sampler = samplers.HPLossSampler()
  disc_logits = tf.Variable(tf.random.stateless_normal([BATCH, PREDS],
                                                       [5, 6]))
  draw = sampler.draw(inputs)
  assert not draw.normalised
  drawn = draw.drawn(tf.reduce_logsumexp(draw.log_probs, -1))
  with tf.GradientTape() as tape:
    terms = sampler.drawn_terms(inputs, drawn, SAMPLED, disc_logits)
  np.testing.assert_allclose(terms.sample_log_prob.numpy(),
                             _at(tf.nn.log_softmax(draw.log_probs)),
                             atol=1e-5)
  at_sampled = inputs.scores_at(SAMPLED)
  np.testing.assert_array_equal(
      terms.head_term.numpy(),
      losses.hp_loss_sampling_loss(at_sampled, disc_logits).numpy())
  assert tape.gradient(terms.head_term, disc_logits) is None
  loss_inputs = samplers.HeadLossInputs(terms.head_term,
                                        terms.sample_log_prob, None, None,
                                        None)
  assert sampler.head_loss(loss_inputs) is terms.head_term


def test_hp_dist_terms_and_loss():
  inputs = _inputs()
  sampler = samplers.HPDistSampler(weight_clip=10.0)
  terms = sampler.drawn_terms(inputs, sampler.draw(inputs), SAMPLED, None)
  log_ps = _at(tf.nn.log_softmax(inputs.scores))
  # Drawn from u unnormalised: log p_S(x') is its head's term.
  np.testing.assert_allclose(terms.sample_log_prob.numpy(), log_ps,
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(terms.est_log_disc_loss.numpy(),
                             log_ps - _at(inputs.log_pg), rtol=1e-5,
                             atol=1e-5)
  disc_loss = tf.Variable(tf.random.stateless_uniform([BATCH, PREDS],
                                                      [7, 8]))
  weights = tf.constant([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
  with tf.GradientTape() as tape:
    per_pos = sampler.head_loss(samplers.HeadLossInputs(
        head_term=terms.head_term, sample_log_prob=terms.sample_log_prob,
        generator_log_prob=tf.constant(_at(inputs.log_pg)),
        disc_loss=disc_loss, weights=weights))
  assert tape.gradient(per_pos, disc_loss) is None
  raw = np.exp(_at(inputs.log_pg) - terms.sample_log_prob.numpy()) * (
      disc_loss.numpy()) * weights.numpy()
  importance = np.minimum(raw / (raw.sum() / weights.numpy().sum()), 10.0)
  np.testing.assert_allclose(per_pos.numpy(),
                             -importance * terms.head_term.numpy(),
                             rtol=1e-5, atol=1e-6)


def test_the_model_hands_over_named_tuples_and_round_trips_its_warmup():
  features = fx.make_features(4, 16, 3, 40, seed=9)
  config = fx.tiny_config(sampling="hp_loss", sampling_warmup_steps=3)
  model = fx.build_pretrainer(config)
  model(features, training=False)
  forward_out = model.forward(features, training=False)
  head_loss_inputs = [v for v in forward_out.values()
                      if isinstance(v, samplers.HeadLossInputs)]
  assert len(head_loss_inputs) == 1
  out = model(features, training=False)
  assert all(isinstance(v, tf.Tensor) for v in out.values())
  clone = ElectraPretrainer.from_config(model.get_config())
  for step, in_warmup in ((0, True), (2, True), (3, False)):
    got = clone(features, training=False, step=step)
    same = np.array_equal(got["sample_log_prob"].numpy(),
                          got["generator_log_prob"].numpy())
    assert same == in_warmup, step
