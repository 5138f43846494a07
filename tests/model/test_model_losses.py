"""Tests of model/losses.py: focal MLM loss, discriminator loss, HP losses."""

import numpy as np
import pytest
import tensorflow as tf

from model import losses
from model import sampling


def _np_focal(logits, labels, gamma):
  """Reference focal loss per position in float64: [batch, P]."""
  logits = np.asarray(logits, np.float64)
  shifted = logits - logits.max(-1, keepdims=True)
  log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
  log_p = np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
  return -(1.0 - np.exp(log_p)) ** gamma * log_p


def _focal_mlm_loss(mlm_logits, labels, gamma):
  """The pre-trainer's focal MLM loss per position (`_generator_outputs`)."""
  return losses.focal_loss_from_log_prob(
      losses.true_token_log_prob(mlm_logits, labels), gamma)


def _random_logits(seed, shape=(2, 3, 7)):
  rng = np.random.default_rng(seed)
  logits = rng.normal(0, 2, shape).astype(np.float32)
  labels = rng.integers(0, shape[-1], shape[:2]).astype(np.int32)
  return logits, labels


def test_focal_gamma_zero_is_sparse_cross_entropy():
  logits, labels = _random_logits(0)
  expected = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
  got = _focal_mlm_loss(tf.constant(logits), tf.constant(labels), 0.0)
  np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


def test_focal_gamma_two_matches_hand_computed_values():
  # p = 0.5: -(0.5)^2 log 0.5; p = 0.75: -(0.25)^2 log 0.75.
  logits = tf.constant([[[0.0, 0.0], [np.log(3.0), 0.0]]], tf.float32)
  labels = tf.constant([[0, 0]])
  got = _focal_mlm_loss(logits, labels, 2.0).numpy()
  np.testing.assert_allclose(got, [[0.25 * np.log(2.0),
                                    -0.0625 * np.log(0.75)]], rtol=1e-5)
  np.testing.assert_allclose(got, [[0.1732868, 0.0179801]], rtol=1e-5)
  random_logits, random_labels = _random_logits(1)
  np.testing.assert_allclose(
      _focal_mlm_loss(tf.constant(random_logits),
                      tf.constant(random_labels), 2.0).numpy(),
      _np_focal(random_logits, random_labels, 2.0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("gamma", [0.0, 0.5, 1.0, 2.0])
def test_focal_gradient_matches_finite_difference(gamma):
  logits, labels = _random_logits(2, shape=(2, 2, 5))
  position_weights = np.array([[1.0, 0.3], [2.0, 0.7]])
  x = tf.Variable(logits)
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(_focal_mlm_loss(x, tf.constant(labels), gamma)
                         * position_weights)
  grad = tape.gradient(loss, x).numpy()

  def objective(values):
    return np.sum(_np_focal(values, labels, gamma) * position_weights)

  eps = 1e-6
  numeric = np.zeros_like(grad, np.float64)
  base = logits.astype(np.float64)
  for index in np.ndindex(base.shape):
    up, down = base.copy(), base.copy()
    up[index] += eps
    down[index] -= eps
    numeric[index] = (objective(up) - objective(down)) / (2 * eps)
  assert np.abs(numeric).max() > 0.05
  np.testing.assert_allclose(grad, numeric, rtol=1e-3, atol=2e-5)


@pytest.mark.parametrize("gamma", [0.5, 1.0, 2.0])
def test_focal_gradient_stays_finite_when_generator_is_certain(gamma):
  # float32 rounds p to exactly 1; (1 - p)^gamma must not give inf * 0.
  x = tf.Variable([[[40.0, 0.0, -3.0], [0.0, 1.0, 2.0]]])
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(_focal_mlm_loss(x, tf.constant([[0, 1]]), gamma))
  grad = tape.gradient(loss, x).numpy()
  assert np.all(np.isfinite(grad)) and np.isfinite(loss.numpy())
  assert np.abs(grad[0, 1]).max() > 0.01


def test_discriminator_loss_is_binary_cross_entropy():
  z = np.array([[2.0, -1.0, 0.5, -3.0]], np.float32)
  y = np.array([[1, 0, 0, 1]], np.int32)
  s = 1.0 / (1.0 + np.exp(-z.astype(np.float64)))
  expected = -y * np.log(s) - (1 - y) * np.log(1 - s)
  np.testing.assert_allclose(
      losses.discriminator_loss(tf.constant(z), tf.constant(y)).numpy(),
      expected, rtol=1e-5)


def test_replica_mean_is_weighted_mean():
  values = tf.constant([[1.0, 2.0, 30.0], [4.0, 5.0, 60.0]])
  weights = tf.constant([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
  assert losses.replica_mean(values, weights).numpy() == pytest.approx(3.0)


def test_hp_loss_sampling_loss_targets_one_minus_sigma_and_stops_gradient():
  u = tf.Variable([[0.3, -1.2]])
  z = tf.Variable([[1.5, -0.4]])
  with tf.GradientTape(persistent=True) as tape:
    loss = losses.hp_loss_sampling_loss(u, z)
  target = 1.0 / (1.0 + np.exp(np.array([[1.5, -0.4]])))
  q = 1.0 / (1.0 + np.exp(-np.array([[0.3, -1.2]])))
  expected = -target * np.log(q) - (1 - target) * np.log(1 - q)
  np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-5)
  assert tape.gradient(loss, z) is None
  np.testing.assert_allclose(tape.gradient(loss, u).numpy(), q - target,
                             rtol=1e-5)


def test_hp_dist_weights_are_self_normalised_clipped_and_padded():
  log_pg = np.log([[0.2, 0.1, 0.5], [0.3, 0.05, 0.9]])
  log_ps = np.log([[0.1, 0.4, 0.5], [0.6, 0.0005, 0.1]])
  disc_loss = np.array([[1.0, 2.0, 0.5], [0.3, 4.0, 7.0]])
  weights = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
  raw = np.exp(log_pg - log_ps) * disc_loss * weights
  expected = np.minimum(raw / (raw.sum() / weights.sum()), 3.0)
  got = losses.hp_dist_weights(
      tf.constant(log_pg, tf.float32), tf.constant(log_ps, tf.float32),
      tf.constant(disc_loss, tf.float32), tf.constant(weights, tf.float32),
      clip=3.0).numpy()
  np.testing.assert_allclose(got, expected, rtol=1e-5)
  assert got[1, 1] == pytest.approx(3.0) and got[1, 2] == 0.0
  unclipped = losses.hp_dist_weights(
      tf.constant(log_pg, tf.float32), tf.constant(log_ps, tf.float32),
      tf.constant(disc_loss, tf.float32), tf.constant(weights, tf.float32),
      clip=1e9).numpy()
  assert unclipped.sum() / weights.sum() == pytest.approx(1.0, rel=1e-5)


def test_disc_importance_weights_have_mean_one_over_real_positions():
  log_num = tf.math.log([[0.2, 0.4, 0.1]])
  log_den = tf.math.log([[0.1, 0.1, 0.5]])
  ratio = losses.disc_importance_weights(
      log_num, log_den, tf.constant([[1.0, 1.0, 0.0]]), clip=10.0).numpy()
  np.testing.assert_allclose(ratio, [[2.0 / 3.0, 4.0 / 3.0, 0.0]], rtol=1e-5)


def test_one_huge_weight_is_clipped_after_self_normalisation():
  # 49 ordinary positions, one whose p_S is 1e6 times below p_G (as the
  # hp_loss_min_estimate floor of 1e-6 allows), and one padding slot.
  raw = np.ones([1, 51], np.float32)
  raw[0, 49] = 1e6
  weights = np.ones([1, 51], np.float32)
  weights[0, 50] = 0.0
  got = losses.self_normalise_and_clip(tf.constant(raw), tf.constant(weights),
                                       clip=10.0).numpy()
  mean = (49 + 1e6) / 50
  assert got[0, 49] == 10.0
  np.testing.assert_allclose(got[0, :49], 1.0 / mean, rtol=1e-5)
  assert got[0, 50] == 0.0
  # Unclipped, the one position would carry (almost) all of D's weight.
  ratio = losses.disc_importance_weights(
      tf.math.log(tf.constant(raw)), tf.zeros([1, 51]), tf.constant(weights),
      clip=10.0).numpy()
  np.testing.assert_allclose(ratio, got, rtol=1e-6)


@pytest.mark.parametrize("caller", ["hp_dist", "disc_importance"])
def test_both_importance_weights_share_self_normalise_and_clip(clip_spy,
                                                               caller):
  calls, shared = clip_spy.calls, clip_spy.original
  log_pg = tf.math.log([[0.2, 0.4]])
  log_ps = tf.math.log([[0.1, 0.3]])
  weights = tf.ones([1, 2])
  if caller == "hp_dist":
    got = losses.hp_dist_weights(log_pg, log_ps, tf.constant([[1.0, 2.0]]),
                                 weights, clip=3.0)
    expected = shared(tf.exp(log_pg - log_ps) * [[1.0, 2.0]], weights, 3.0)
  else:
    got = losses.disc_importance_weights(log_pg, log_ps, weights, clip=3.0)
    expected = shared(tf.exp(log_pg - log_ps), weights, 3.0)
  assert calls == [3.0]
  np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


def test_hp_dist_loss_drives_a_free_softmax_to_p_star():
  """SGD on sampled HP-Dist losses converges to p* = p_G L_D / Z (3b)."""
  p_g = np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04])
  l_d = np.array([0.05, 0.3, 1.0, 2.0, 0.7, 3.0])
  p_star = p_g * l_d / np.sum(p_g * l_d)
  num_samples, vocab = 4096, len(p_g)
  log_pg = tf.math.log(tf.constant(p_g, tf.float32))
  disc_loss = tf.constant(l_d, tf.float32)
  logits = tf.Variable(tf.zeros([vocab]))
  optimizer_lr = tf.Variable(2.0)
  ones = tf.ones([1, num_samples])

  @tf.function
  def step(seed):
    log_ps_all = tf.nn.log_softmax(logits)
    drawn = sampling.categorical_sample(
        tf.broadcast_to(log_ps_all, [1, num_samples, vocab]),
        tf.reshape(seed, [1, 2]))
    with tf.GradientTape() as tape:
      log_ps = tf.gather(tf.nn.log_softmax(logits), drawn)
      weights = losses.hp_dist_weights(
          tf.gather(log_pg, drawn), tf.stop_gradient(log_ps),
          tf.gather(disc_loss, drawn), ones, clip=10.0)
      loss = losses.replica_mean(
          losses.hp_dist_sampling_loss(log_ps, weights), ones)
    logits.assign_sub(optimizer_lr * tape.gradient(loss, logits))

  for i in range(300):
    if i == 200:
      optimizer_lr.assign(0.5)
    step(tf.constant([i, 17]))
  p_s = tf.nn.softmax(logits).numpy()
  total_variation = 0.5 * np.abs(p_s - p_star).sum()
  assert total_variation < 0.03, (p_s, p_star)
  # The target is far from both the start (uniform) and p_G.
  assert 0.5 * np.abs(p_g - p_star).sum() > 0.3


def test_log_softplus_and_log_discriminator_loss_stay_finite():
  x = np.array([-300.0, -120.0, -104.0, -30.0, -15.5, -15.0, -3.0, 0.0, 2.0,
                40.0, 100.0], np.float32)
  expected = np.log(np.logaddexp(0.0, x.astype(np.float64)))
  np.testing.assert_allclose(losses.log_softplus(x).numpy(), expected,
                             rtol=1e-6)
  # log l_t: softplus(z) for an original token, softplus(-z) if replaced.
  labels = (np.arange(x.size) % 2).astype(np.int32)
  got = losses.log_discriminator_loss(x, labels).numpy()
  np.testing.assert_allclose(got, np.where(labels > 0, np.log(np.logaddexp(
      0.0, -x.astype(np.float64))), expected), rtol=1e-6)
  assert np.all(np.isfinite(got))
  # Where l_t is representable, its log matches the loss's.
  plain = losses.discriminator_loss(x, labels).numpy()
  shown = plain > 1e-30
  np.testing.assert_allclose(got[shown], np.log(plain[shown]), rtol=1e-5)


def test_the_clip_bounds_each_weight_not_its_share_of_the_sum():
  # Issue 30: the docstring claimed a bound on "the share of any one
  # position". The clip bounds each weight at clip times the mean; one huge
  # raw weight still holds nearly all of the clipped weights' sum.
  raw = np.ones([1, 100], np.float32)
  raw[0, 0] = 1e6
  got = losses.self_normalise_and_clip(tf.constant(raw), tf.ones([1, 100]),
                                       clip=10.0).numpy()
  assert got.max() == 10.0
  assert got[0, 0] / got.sum() > 0.99
  doc = " ".join(losses.self_normalise_and_clip.__doc__.split())
  assert "bounds the share" not in doc
  assert "does not bound a position's share" in doc
