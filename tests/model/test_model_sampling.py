"""Tests of model/sampling.py, model/samplers.py and of the draw inside the
pre-training model."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import configure_specs
from model import samplers
from model import sampling
from tests import pretrain_fixtures as fx

# 0.999 quantile of the chi-square distribution with 7 degrees of freedom.
_CHI2_7_999 = 24.32


def _np_log_softmax(x):
  x = np.asarray(x, np.float64)
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _softplus(x):
  return np.logaddexp(0.0, np.asarray(x, np.float64))


def test_hp_loss_estimate_uses_log_one_minus_q_except_at_the_original():
  rng = np.random.default_rng(0)
  u = rng.normal(0, 2, (2, 3, 6)).astype(np.float32)
  original = np.array([[0, 5, 2], [3, 3, 1]], np.int32)
  got = samplers.HPLossSampler().estimated_disc_loss(
      tf.constant(u), tf.constant(original)).numpy()
  q = 1.0 / (1.0 + np.exp(-u.astype(np.float64)))
  expected = -np.log(1.0 - q)
  for b, p in np.ndindex(original.shape):
    expected[b, p, original[b, p]] = -np.log(q[b, p, original[b, p]])
  np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_hp_loss_sampler_is_p_g_times_estimated_loss_normalised():
  rng = np.random.default_rng(1)
  logits = rng.normal(0, 2, (2, 3, 6))
  u = rng.normal(0, 3, (2, 3, 6))
  u[0, 0, 4] = -40.0  # L^_D ~ 4e-18, below the clamp.
  original = np.array([[1, 0, 5], [2, 2, 4]], np.int32)
  log_pg = sampling.generator_log_probs(tf.constant(logits, tf.float32))
  # Unnormalised (the draw normalises): log p_G + log L^_D itself.
  assert not samplers.HPLossSampler.draws_normalised
  got = tf.nn.log_softmax(samplers.HPLossSampler(min_estimate=1e-6).log_probs(
      log_pg, tf.constant(u, tf.float32), tf.constant(original))).numpy()
  estimate = _softplus(u)
  for b, p in np.ndindex(original.shape):
    estimate[b, p, original[b, p]] = _softplus(-u[b, p, original[b, p]])
  p_s = np.exp(_np_log_softmax(logits)) * np.maximum(estimate, 1e-6)
  p_s /= p_s.sum(-1, keepdims=True)
  np.testing.assert_allclose(np.exp(got), p_s, rtol=1e-4, atol=1e-7)
  # p_S differs from p_G: the test would notice a sampler ignoring u.
  assert np.abs(np.exp(got) - np.exp(log_pg.numpy())).max() > 0.1


def test_other_samplers_and_their_gradients():
  logits = tf.Variable(tf.random.stateless_normal([2, 3, 5], [1, 2]))
  scores = tf.Variable(tf.random.stateless_normal([2, 3, 5], [3, 4]))
  original = tf.constant([[0, 1, 2], [3, 4, 0]])
  with tf.GradientTape(persistent=True) as tape:
    log_pg = sampling.generator_log_probs(logits, temperature=2.0)
    hp_dist = samplers.HPDistSampler().log_probs(log_pg, scores, original)
    hp_loss = samplers.HPLossSampler().log_probs(log_pg, scores, original)
  np.testing.assert_allclose(
      log_pg.numpy(), _np_log_softmax(logits.numpy() / 2.0), atol=1e-5)
  # HP-Dist draws from u itself (log p_S up to a constant per position).
  assert not samplers.HPDistSampler.draws_normalised
  np.testing.assert_allclose(hp_dist.numpy(), scores.numpy())
  np.testing.assert_allclose(tf.nn.log_softmax(hp_dist).numpy(),
                             _np_log_softmax(scores.numpy()), atol=1e-5)
  np.testing.assert_allclose(
      samplers.UniformSampler().log_probs(log_pg, None, None).numpy(),
      np.full([2, 3, 5], -np.log(5.0)), rtol=1e-6)
  assert samplers.GeneratorSampler().log_probs(log_pg, None, None) is log_pg
  # The draw is not differentiated.
  for value in (log_pg, hp_dist, hp_loss):
    assert tape.gradient(value, logits) is None
    assert tape.gradient(value, scores) is None
  with pytest.raises(ValueError, match="unknown sampler"):
    samplers.sampler_class("bogus")


def test_registry_names_and_properties():
  """configure.py reads its choices from the registry; the properties
  decide the generator's heads and the train step's compiled region."""
  import configure  # pylint: disable=g-import-not-at-top
  assert samplers.NAMES == ("mlm", "uniform", "hp_loss", "hp_dist")
  assert configure.PRETRAIN_FIELDS["sampling"].choices == samplers.NAMES
  assert [samplers.REGISTRY[n].learns for n in samplers.NAMES] == [
      False, False, True, True]
  assert [samplers.REGISTRY[n].normalises_over_batch
          for n in samplers.NAMES] == [False, False, False, True]
  config = fx.tiny_config(sampling="hp_dist", hp_dist_weight_clip=3.0,
                          hp_loss_min_estimate=1e-4)
  objective = configure_specs.ObjectiveSpec.from_config(config)
  assert samplers.from_objective("hp_dist", objective).weight_clip == 3.0
  assert samplers.from_objective("hp_loss", objective).min_estimate == 1e-4


def _draw_many(log_probs, copies_per_example, batch, seed):
  """Draws batch * copies_per_example times from every row of log_probs."""
  num_dists, vocab = log_probs.shape
  tiled = np.tile(log_probs[None, None], [batch, copies_per_example, 1, 1])
  tiled = tiled.reshape(batch, copies_per_example * num_dists, vocab)
  seeds = np.stack([np.arange(batch), np.full(batch, seed)], -1)
  draws = tf.function(sampling.categorical_sample)(
      tf.constant(tiled, tf.float32), tf.constant(seeds, tf.int32)).numpy()
  return draws.reshape(batch * copies_per_example, num_dists)


def _assert_frequencies(draws, probs):
  """Each column of draws [n, rows] against its row of probs [rows, 8]."""
  n = draws.shape[0]
  for d, p in enumerate(probs):
    counts = np.bincount(draws[:, d], minlength=len(p))
    chi2 = np.sum((counts - n * p) ** 2 / (n * p))
    assert chi2 < _CHI2_7_999, (d, counts)
    assert 0.5 * np.abs(counts / n - p).sum() < 0.02


_PROBS = np.array([[0.3, 0.2, 0.15, 0.12, 0.1, 0.08, 0.04, 0.01],
                   [0.02, 0.02, 0.5, 0.06, 0.1, 0.1, 0.1, 0.1],
                   [0.125] * 8])


def test_draw_frequencies_match_softmax():
  log_probs = np.log(_PROBS) + np.array([[3.0], [-7.0], [0.0]])  # unnormalised
  draws = _draw_many(log_probs, copies_per_example=20, batch=1000, seed=5)
  _assert_frequencies(draws, _PROBS)


@pytest.mark.parametrize("vocab", [300, 256])
def test_draw_frequencies_match_softmax_across_blocks(vocab):
  """Over a vocabulary of several blocks of the two-stage draw (with a tail
  block of 44 tokens at 300, none at 256): the 8 tokens that hold the mass
  sit in different blocks, the tail among them; the rest never come."""
  where = np.array([0, 1, 127, 128, 200, 250, vocab - 2, vocab - 1])
  log_probs = np.full((3, vocab), -1e9)
  log_probs[:, where] = np.log(_PROBS) + 20.0  # exp overflows without max
  draws = _draw_many(log_probs, copies_per_example=20, batch=1000, seed=8)
  assert set(np.unique(draws)) <= set(where)
  _assert_frequencies(np.searchsorted(where, draws), _PROBS)


def test_a_total_rounded_up_never_picks_a_massless_entry():
  """u * total can round to the total in float32: the pick is then the
  last entry with mass, not a padding or impossible one after it."""
  masses = tf.constant([[0.25, 0.5, 0.25, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0]])
  top = tf.constant([1.0 - 2.0**-24] * 2)
  np.testing.assert_array_equal(sampling._pick(masses, top).numpy(), [2, 1])
  np.testing.assert_array_equal(
      sampling._pick(masses, tf.constant([1.0, 1.0])).numpy(), [2, 1])
  low = tf.constant([2.0**-24] * 2)
  np.testing.assert_array_equal(sampling._pick(masses, low).numpy(), [0, 1])


def test_draws_are_the_same_compiled():
  log_probs = tf.random.stateless_normal([3, 19, 700], [3, 4]) * 3.0
  seeds = tf.constant([[1, 2], [3, 4], [5, 6]])
  eager = sampling.categorical_sample(log_probs, seeds).numpy()
  compiled = tf.function(sampling.categorical_sample, jit_compile=True)(
      log_probs, seeds).numpy()
  np.testing.assert_array_equal(eager, compiled)


def test_draw_never_gives_impossible_tokens_and_disallow_correct():
  log_probs = np.log(np.array([[0.97, 0.01, 0.01, 0.01, 1e-30, 1e-30,
                                1e-30, 1e-30]]))
  log_probs[0, 4:] = -1e9
  forbidden = sampling.forbid_original(
      tf.constant(log_probs[None], tf.float32), tf.constant([[0]])).numpy()
  draws = _draw_many(forbidden[0], copies_per_example=20, batch=200, seed=3)
  assert set(np.unique(draws)) == {1, 2, 3}
  np.testing.assert_allclose(np.exp(forbidden[0, 0, 1:4]), [1 / 3.0] * 3,
                             rtol=1e-5)


def test_draws_are_reproducible_and_per_example():
  log_probs = tf.random.stateless_normal([3, 4, 50], [7, 8])
  seeds = tf.constant([[1, 2], [3, 4], [5, 6]])
  first = sampling.categorical_sample(log_probs, seeds).numpy()
  np.testing.assert_array_equal(
      first, sampling.categorical_sample(log_probs, seeds).numpy())
  # Example 0 moved to another place in a smaller batch of other examples
  # (other distributions and seeds) keeps its draw.
  other = tf.concat([-log_probs[1:2], log_probs[:1]], 0)
  second = sampling.categorical_sample(
      other, tf.constant([[9, 9], [1, 2]])).numpy()
  np.testing.assert_array_equal(first[0], second[1])
  assert not np.array_equal(first[1], second[0])
  changed = sampling.categorical_sample(
      log_probs, tf.constant([[1, 3], [3, 4], [5, 6]])).numpy()
  assert not np.array_equal(first[0], changed[0])


_SEEDS = [[1, 2], [-5, 7], [2**31 - 1, -2**31], [0, 0]]


def test_noise_of_a_batch_is_the_noise_of_its_parts():
  """One example's noise depends on its seed alone: not on the batch split,
  nor on the example's place in the batch (so not on the replicas)."""
  seeds = tf.constant(_SEEDS, tf.int32)
  shape = tf.constant([3, 50])
  whole = sampling.per_example_uniform(seeds, shape).numpy()
  assert whole.shape == (4, 3, 50)
  parts = [sampling.per_example_uniform(seeds[i:i + 2], shape).numpy()
           for i in (0, 2)]
  np.testing.assert_array_equal(whole, np.concatenate(parts))
  reversed_batch = sampling.per_example_uniform(seeds[::-1], shape).numpy()
  np.testing.assert_array_equal(whole, reversed_batch[::-1])
  as_int64 = sampling.per_example_uniform(tf.cast(seeds, tf.int64), shape)
  np.testing.assert_array_equal(whole, as_int64.numpy())
  # An odd number of draws per example: the same leading draws.
  odd = sampling.per_example_uniform(seeds, tf.constant([149])).numpy()
  np.testing.assert_array_equal(odd, whole.reshape(4, 150)[:, :149])


def test_noise_is_drawn_in_one_vectorised_pass_the_same_under_xla():
  seeds = tf.constant(_SEEDS, tf.int32)
  shape = tf.constant([3, 50])
  graph = tf.function(sampling.per_example_uniform).get_concrete_function(
      seeds, shape).graph
  loops = [op.type for op in graph.get_operations() if "While" in op.type]
  assert not loops, loops
  eager = sampling.per_example_uniform(seeds, shape).numpy()
  compiled = tf.function(sampling.per_example_uniform, jit_compile=True)(
      seeds, shape).numpy()
  np.testing.assert_array_equal(eager, compiled)


def _np_mix64(z):
  """SplitMix64's output function on Python ints (mod 2^64)."""
  mask = 2**64 - 1
  z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
  z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
  return z ^ (z >> 31)


def _np_noise(seed, size):
  """The documented generator, in plain Python: word i of an example is
  mix64(key + (i + 1) * golden), split into two 23-bit uniforms."""
  golden, mask = 0x9E3779B97F4A7C15, 2**64 - 1
  s0, s1 = (int(v) & mask for v in seed)
  key = _np_mix64((_np_mix64((s0 + golden) & mask) + s1) & mask)
  values = []
  for i in range((size + 1) // 2):
    word = _np_mix64((key + (i + 1) * golden) & mask)
    for bits in ((word >> 9) & (2**23 - 1), word >> 41):
      values.append(np.float32(bits) * np.float32(2.0**-23) +
                    np.float32(2.0**-24))
  return np.array(values[:size], np.float32)


def test_noise_is_the_documented_generator():
  """Pins the generator: a change of it (and of every draw) is deliberate."""
  got = sampling.per_example_uniform(tf.constant(_SEEDS),
                                     tf.constant([7])).numpy()
  np.testing.assert_array_equal(got, [_np_noise(s, 7) for s in _SEEDS])


def test_noise_is_uniform_in_the_open_unit_interval():
  seeds = tf.constant(_SEEDS, tf.int32)
  u = sampling.per_example_uniform(seeds, tf.constant([19, 3000])).numpy()
  assert u.dtype == np.float32
  assert u.min() > 0.0 and u.max() < 1.0
  for row in u.reshape(len(_SEEDS), -1):
    n = row.size
    assert abs(row.mean() - 0.5) < 6 * np.sqrt(1 / 12.0 / n)
    assert abs(row.var() - 1 / 12.0) < 0.0015
    deciles = np.histogram(row, bins=10, range=(0.0, 1.0))[0] / n
    np.testing.assert_allclose(deciles, 0.1, atol=0.005)
    # Neighbouring draws (the two halves of one 64-bit word, too) are
    # uncorrelated.
    for lag in (1, 2):
      assert abs(np.corrcoef(row[:-lag], row[lag:])[0, 1]) < 0.02
  flat = u.reshape(len(_SEEDS), -1)
  correlations = np.corrcoef(flat)[np.triu_indices(len(_SEEDS), 1)]
  assert np.all(np.abs(correlations) < 0.02), correlations


def test_scatter_at_positions_leaves_padding_predictions_alone():
  input_ids = tf.constant([[1, 10, 11, 12, 2], [1, 20, 21, 2, 0]])
  positions = tf.constant([[1, 3], [2, 0]])
  sampled = tf.constant([[30, 31], [32, 33]])
  weights = tf.constant([[1.0, 1.0], [1.0, 0.0]])
  got = sampling.scatter_at_positions(input_ids, positions, sampled, weights)
  np.testing.assert_array_equal(got.numpy(), [[1, 30, 11, 31, 2],
                                              [1, 20, 32, 2, 0]])


def _model(config, features):
  tf_keras.utils.set_random_seed(1234)  # reproducible initial weights
  model = fx.build_pretrainer(config)
  model(features, training=False)
  return model


def test_model_draws_are_per_example():
  features = fx.make_features(4, 16, 3, 40, seed=11, as_tensors=False)
  model = _model(fx.tiny_config(sampling="hp_loss"),
                 {k: tf.constant(v) for k, v in features.items()})
  first = model({k: tf.constant(v) for k, v in features.items()},
                training=False)["sampled_tokens"].numpy()
  again = model({k: tf.constant(v) for k, v in features.items()},
                training=False)["sampled_tokens"].numpy()
  np.testing.assert_array_equal(first, again)
  # Example 0 at position 2 of a batch of other examples keeps its draw.
  others = fx.make_features(4, 16, 3, 40, seed=12, as_tensors=False)
  for key in features:
    others[key][2] = features[key][0]
  mixed = model({k: tf.constant(v) for k, v in others.items()},
                training=False)["sampled_tokens"].numpy()
  np.testing.assert_array_equal(first[0], mixed[2])
  assert not np.array_equal(first[1:], mixed[[0, 1, 3]])


def test_model_hp_loss_draw_uses_p_g_times_estimate():
  """With the sampling head's LayerNorm scale at 0, u_t(v) = b_S(v) is fixed."""
  features = fx.make_features(4, 16, 3, 30, seed=4)
  config = fx.tiny_config(vocab_size=30, sampling="hp_loss")
  model = _model(config, features)
  head = model.generator.sampling_head
  head.layer_norm.gamma.assign(tf.zeros_like(head.layer_norm.gamma))
  head.layer_norm.beta.assign(tf.zeros_like(head.layer_norm.beta))
  bias = np.random.default_rng(0).normal(0, 3, 30).astype(np.float32)
  head.output_bias.assign(bias)
  out = model(features, training=False)
  logits = model.generator(features, training=False)["mlm_logits"].numpy()
  labels = features["masked_lm_ids"].numpy()
  estimate = np.broadcast_to(_softplus(bias), logits.shape).copy()
  for b, p in np.ndindex(labels.shape):
    estimate[b, p, labels[b, p]] = _softplus(-bias[labels[b, p]])
  p_s = np.exp(_np_log_softmax(logits)) * np.maximum(estimate, 1e-6)
  p_s /= p_s.sum(-1, keepdims=True)
  sampled = out["sampled_tokens"].numpy()
  np.testing.assert_allclose(
      out["sample_log_prob"].numpy(),
      np.log(np.take_along_axis(p_s, sampled[..., None], -1)[..., 0]),
      rtol=1e-4, atol=1e-5)
  expected_estimate = np.take_along_axis(estimate, sampled[..., None],
                                         -1)[..., 0]
  np.testing.assert_allclose(out["est_log_disc_loss"].numpy(),
                             np.log(expected_estimate), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("extra", [{}, dict(sampling_warmup_steps=1),
                                   dict(disallow_correct=True)],
                         ids=["own", "warmup", "disallow_correct"])
def test_hp_dist_sample_log_prob_is_log_p_s_at_the_draw(extra):
  # HP-Dist draws from u unnormalised and reads log p_S(x') from its head
  # terms; with a warm-up or disallow_correct the draw is normalised first.
  features = fx.make_features(4, 16, 3, 30, seed=5)
  config = fx.tiny_config(vocab_size=30, sampling="hp_dist", **extra)
  model = _model(config, features)
  out = model(features, training=False, step=5)
  scores = model.generator(features, training=False)["sampling_scores"]
  scores = scores.numpy().astype(np.float64)
  if extra.get("disallow_correct"):
    labels = features["masked_lm_ids"].numpy()
    for b, p in np.ndindex(labels.shape):
      scores[b, p, labels[b, p]] = -1e9
  sampled = out["sampled_tokens"].numpy()
  expected = np.take_along_axis(_np_log_softmax(scores), sampled[..., None],
                                -1)[..., 0]
  np.testing.assert_allclose(out["sample_log_prob"].numpy(), expected,
                             rtol=1e-5, atol=1e-5)


def test_disallow_correct_in_the_model():
  # Vocabulary 6: every original is token 4 or 5, and p_S puts ~1/2 on each,
  # so without disallow_correct about half the draws would be the original.
  features = fx.make_features(8, 16, 3, 6, seed=6)
  config = fx.tiny_config(vocab_size=6, sampling="hp_dist",
                          disallow_correct=True)
  model = _model(config, features)
  head = model.generator.sampling_head
  head.layer_norm.gamma.assign(tf.zeros_like(head.layer_norm.gamma))
  head.output_bias.assign([0.0, 0.0, 0.0, 0.0, 10.0, 10.0])
  out = model(features, training=False)
  weights = features["masked_lm_weights"].numpy() > 0
  labels = features["masked_lm_ids"].numpy()
  sampled = out["sampled_tokens"].numpy()
  assert np.all(sampled[weights] != labels[weights])
  assert set(np.unique(sampled[weights])) == {4, 5}
  mask = out["masked_position_mask"].numpy() > 0
  assert np.all(out["disc_labels"].numpy()[mask] == 1)


@pytest.fixture
def mixed_bfloat16():
  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
  try:
    yield
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("mode", ["hp_loss", "hp_dist"])
def test_sampling_stays_float32_under_mixed_bfloat16(mixed_bfloat16, mode):
  features = fx.make_features(4, 16, 3, 40, seed=8)
  model = fx.build_pretrainer(
      fx.tiny_config(sampling=mode, disc_importance_weighting=True))
  with tf.GradientTape() as tape:
    out = model(features, training=True)
  assert model.discriminator.encoder.compute_dtype == "bfloat16"
  gen_out = model.generator(features, training=False)
  for key in ("mlm_logits", "sampling_scores"):
    assert gen_out[key].dtype == tf.float32, key
  for key in ("total_loss", "mlm_loss", "disc_loss", "sampling_loss",
              "sample_log_prob", "generator_log_prob", "est_log_disc_loss",
              "actual_disc_loss", "actual_log_disc_loss", "gen_max_prob",
              "disc_probs"):
    assert out[key].dtype == tf.float32, key
    assert np.all(np.isfinite(out[key].numpy())), key
  # Sampled log-probs are proper log-probabilities.
  assert np.all(out["sample_log_prob"].numpy() <= 1e-6)
  grads = tape.gradient(out["total_loss"], model.trainable_variables)
  assert all(g is not None and np.all(np.isfinite(tf.convert_to_tensor(g)))
             for g in grads)
