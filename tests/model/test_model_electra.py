"""Tests of the pre-training model: passes, losses, gradients, checkpoints."""

import os

# XLA's LLVM optimisations triple the compile time of these tiny graphs on
# CPU and buy nothing here. Read once, at the process's first compile.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")

import numpy as np  # pylint: disable=g-import-not-at-top
import pytest
import tensorflow as tf
import tf_keras

from interop import checkpoints
from model import builders
from model import samplers
from model import sampling
from tests import paths
from tests import pretrain_fixtures as fx
from util.errors import UserError

MODES = ("mlm", "uniform", "hp_loss", "hp_dist")
# Not 1, 50, 1: a formula mixing up the weights fails.
LOSS_WEIGHTS = dict(gen_weight=0.7, disc_weight=3.0, sampling_weight=0.5)
BATCH, SEQ_LEN, PREDS, VOCAB = 4, 16, 3, 40


def _config(mode, **hparams):
  values = dict(LOSS_WEIGHTS, sampling=mode,
                relative_position=mode in ("hp_loss", "hp_dist"))
  values.update(hparams)
  return fx.tiny_config(VOCAB, SEQ_LEN, PREDS, **values)


def _build(config, features):
  tf_keras.utils.set_random_seed(1234)  # reproducible initial weights
  model = fx.build_pretrainer(config)
  model(features, training=False)
  return model


def _set_sampling_bias(model, seed, scale=3.0):
  """Makes p_S far from p_G: a large random bias on the sampling scores."""
  head = model.generator.sampling_head
  rng = np.random.default_rng(seed)
  head.output_bias.assign(rng.normal(0, scale, VOCAB).astype(np.float32))


@pytest.fixture(scope="module")
def features():
  return fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=0)


@pytest.fixture(scope="module")
def models(features):
  return {mode: _build(_config(mode), features) for mode in MODES}


def _disc_only_variables(model):
  shared = {id(v) for v in model.generator.trainable_variables}
  return [v for v in model.discriminator.trainable_variables
          if id(v) not in shared]


def _is_zero(grad):
  return grad is None or not np.any(tf.convert_to_tensor(grad).numpy())


@pytest.mark.parametrize("mode", MODES)
def test_forward_backward_shapes_and_total_loss(models, features, mode):
  model = models[mode]
  with tf.GradientTape() as tape:
    out = model(features, training=True)
  for key in ("total_loss", "mlm_loss", "disc_loss", "sampling_loss"):
    assert out[key].shape == () and np.isfinite(out[key].numpy()), key
  for key in ("mlm_loss_per_pos", "masked_lm_preds", "gen_max_prob",
              "sampled_tokens", "est_log_disc_loss", "actual_disc_loss",
              "actual_log_disc_loss", "sample_log_prob", "generator_log_prob"):
    assert out[key].shape == (BATCH, PREDS), key
  for key in ("disc_logits", "disc_probs", "disc_labels",
              "disc_loss_per_token", "masked_position_mask"):
    assert out[key].shape == (BATCH, SEQ_LEN), key
  expected = (0.7 * out["mlm_loss"] + 3.0 * out["disc_loss"] +
              0.5 * out["sampling_loss"])
  assert out["total_loss"].numpy() == pytest.approx(expected.numpy(),
                                                    rel=1e-6)
  if mode in ("hp_loss", "hp_dist"):
    assert out["sampling_loss"].numpy() != 0.0
    assert np.all(np.isfinite(out["est_log_disc_loss"].numpy()))
  else:
    assert out["sampling_loss"].numpy() == 0.0
  grads = tape.gradient(out["total_loss"], model.trainable_variables)
  for variable, grad in zip(model.trainable_variables, grads):
    assert not _is_zero(grad), variable.name
    assert np.all(np.isfinite(tf.convert_to_tensor(grad).numpy()))


@pytest.mark.parametrize("mode", MODES)
def test_forward_backward_under_jit_compile(models, features, mode):
  model = models[mode]
  variables = model.trainable_variables
  scalars = ("total_loss", "mlm_loss", "disc_loss", "sampling_loss")

  @tf.function(jit_compile=True)
  def step(batch):
    with tf.GradientTape() as tape:
      out = model(batch, training=True)
    grads = tape.gradient(out["total_loss"], variables)
    return ({k: out[k] for k in scalars + ("sampled_tokens",)},
            [tf.convert_to_tensor(g) for g in grads])

  out, grads = step(features)
  values = {k: out[k].numpy() for k in scalars}
  assert all(np.isfinite(v) for v in values.values())
  assert values["total_loss"] == pytest.approx(
      0.7 * values["mlm_loss"] + 3.0 * values["disc_loss"] +
      0.5 * values["sampling_loss"], rel=1e-5)
  assert all(np.all(np.isfinite(g.numpy())) and np.any(g.numpy())
             for g in grads)
  # Near the untrained model's eager loss (dropout and draws differ).
  eager = model(features, training=False)
  assert values["total_loss"] == pytest.approx(eager["total_loss"].numpy(),
                                               rel=0.05)
  sampled = out["sampled_tokens"].numpy()
  assert sampled.shape == (BATCH, PREDS)
  assert np.all((sampled >= 0) & (sampled < VOCAB))


def test_disc_labels_and_padding_predictions(models, features, monkeypatch):
  labels = features["masked_lm_ids"]

  def fake_draw(log_probs, seeds):
    del log_probs, seeds
    # Slot 0 draws the original; other slots (padding ones too) another token.
    other = (labels - fx.FIRST_TOKEN_ID + 1) % (
        VOCAB - fx.FIRST_TOKEN_ID) + fx.FIRST_TOKEN_ID
    slot = tf.range(PREDS)[tf.newaxis, :]
    return tf.where(slot == 0, labels, other)

  monkeypatch.setattr(sampling, "categorical_sample_and_log_mass",
                      lambda *args: (fake_draw(*args), 0.0))
  out = models["mlm"](features, training=False)
  f = {k: v.numpy() for k, v in features.items()}
  replaced = f["input_ids"].copy()
  expected_mask = np.zeros_like(replaced)
  sampled = fake_draw(None, None).numpy()
  for b, p in np.ndindex(sampled.shape):
    if f["masked_lm_weights"][b, p] > 0:
      replaced[b, f["masked_lm_positions"][b, p]] = sampled[b, p]
      expected_mask[b, f["masked_lm_positions"][b, p]] = 1
  disc_labels = out["disc_labels"].numpy()
  np.testing.assert_array_equal(disc_labels,
                                (replaced != f["input_ids"]).astype(int))
  np.testing.assert_array_equal(out["masked_position_mask"].numpy(),
                                expected_mask)
  # Slot 0 drew the original: a masked position labelled original.
  first = f["masked_lm_positions"][:, 0]
  assert np.all(disc_labels[np.arange(BATCH), first] == 0)
  assert disc_labels.sum() == (f["masked_lm_weights"].sum() - BATCH)
  # Padding predictions point at [CLS], which must stay.
  assert np.any(f["masked_lm_weights"] == 0)
  assert np.all(disc_labels[:, 0] == 0)


@pytest.mark.parametrize("mode", ["hp_loss", "hp_dist"])
def test_sampling_loss_does_not_reach_the_discriminator(models, features,
                                                        mode):
  model = models[mode]
  disc_only = _disc_only_variables(model)
  head = model.generator.sampling_head.trainable_variables
  mlm_head = model.generator.mlm_head.trainable_variables
  assert len(disc_only) > 30 and len(head) == 5
  with tf.GradientTape(persistent=True) as tape:
    out = model(features, training=True)
  for variable, grad in zip(disc_only,
                            tape.gradient(out["sampling_loss"], disc_only)):
    assert _is_zero(grad), variable.name
  for variable, grad in zip(mlm_head,
                            tape.gradient(out["sampling_loss"], mlm_head)):
    assert _is_zero(grad), variable.name
  for variable, grad in zip(head, tape.gradient(out["sampling_loss"], head)):
    assert not _is_zero(grad), variable.name
  # The check is not vacuous: D's own loss does reach these variables.
  reached = [not _is_zero(g)
             for g in tape.gradient(out["disc_loss"], disc_only)]
  assert all(reached)


def _expected_importance_weighted_disc_loss(out, features, clip):
  """D's loss with p_G/p_S self-normalised, clipped, at masked positions."""
  f = {k: v.numpy() for k, v in features.items()}
  real = f["masked_lm_weights"]
  ratio = np.exp(out["generator_log_prob"].numpy() -
                 out["sample_log_prob"].numpy()) * real
  ratio /= ratio.sum() / real.sum()
  clipped = np.minimum(ratio, clip)
  token_weights = f["input_mask"].astype(np.float64)
  for b, p in np.ndindex(real.shape):
    if real[b, p] > 0:
      token_weights[b, f["masked_lm_positions"][b, p]] = clipped[b, p]
  per_token = out["disc_loss_per_token"].numpy()
  return (per_token * token_weights).sum() / token_weights.sum(), ratio


@pytest.mark.parametrize("clip", [10.0, 1.2])
def test_disc_importance_weighting_reweights_masked_positions(features, clip):
  model = _build(_config("hp_dist", disc_importance_weighting=True,
                         disc_importance_weight_clip=clip), features)
  # A moderate bias: p_S spread over many tokens, so p_G / p_S varies.
  _set_sampling_bias(model, seed=1, scale=1.0)
  # Spread D's per-token losses (all ~log 2 at init) so weights matter.
  logit = model.discriminator.head.logit.kernel
  logit.assign(tf.random.stateless_normal(logit.shape, [5, 6], stddev=3.0))
  out = model(features, training=False)
  expected, ratio = _expected_importance_weighted_disc_loss(out, features,
                                                            clip)
  assert out["disc_loss"].numpy() == pytest.approx(expected, rel=1e-5)
  mask = features["input_mask"].numpy()
  per_token = out["disc_loss_per_token"].numpy()
  unweighted = (per_token * mask).sum() / mask.sum()
  assert abs(expected - unweighted) > 1e-4
  real = features["masked_lm_weights"].numpy() > 0
  assert ratio.max() > 1.5 * ratio[real].min()
  if clip < 10:
    # The clip binds: unclipped weights would give another loss.
    unclipped, _ = _expected_importance_weighted_disc_loss(out, features,
                                                           np.inf)
    assert ratio.max() > clip and abs(expected - unclipped) > 1e-4


def test_both_importance_weights_are_clipped_by_the_shared_function(
    features, clip_spy):
  model = _build(_config("hp_dist", disc_importance_weighting=True,
                         hp_dist_weight_clip=7.0,
                         disc_importance_weight_clip=3.0), features)
  del clip_spy.calls[:]  # Building called it too.
  model(features, training=False)
  assert sorted(clip_spy.calls) == [3.0, 7.0]


def test_sampling_warmup_draws_from_p_g_then_p_s(features):
  model = _build(_config("hp_loss", sampling_warmup_steps=5), features)
  _set_sampling_bias(model, seed=2)
  reference_pg = model(features, training=False,
                       sampler=samplers.GeneratorSampler())
  reference_ps = model(features, training=False,
                       sampler=samplers.HPLossSampler())
  for step in (0, 4, tf.constant(4, tf.int64)):
    warm = model(features, training=False, step=step)
    np.testing.assert_array_equal(warm["sampled_tokens"].numpy(),
                                  reference_pg["sampled_tokens"].numpy())
    np.testing.assert_allclose(warm["sample_log_prob"].numpy(),
                               warm["generator_log_prob"].numpy(), atol=1e-6)
    # The sampling head trains during warmup.
    assert warm["sampling_loss"].numpy() > 0
  for step in (5, tf.constant(100)):
    after = model(features, training=False, step=step)
    np.testing.assert_array_equal(after["sampled_tokens"].numpy(),
                                  reference_ps["sampled_tokens"].numpy())
  assert not np.array_equal(reference_pg["sampled_tokens"].numpy(),
                            reference_ps["sampled_tokens"].numpy())


def _encoder_inputs(features):
  return dict(input_ids=features["input_ids"],
              input_mask=features["input_mask"],
              segment_ids=features["segment_ids"])


def _relative_variables(layer):
  return [v for v in layer.trainable_variables if "rel_embedding" in v.name]


def test_relative_position_bias_changes_outputs_and_is_shared(models,
                                                              features):
  inputs = _encoder_inputs(features)
  plain, biased = (fx.build_discriminator_encoder(
      _config("mlm", relative_position=relative))
                   for relative in (False, True))
  plain(inputs)
  biased(inputs)
  (bias,) = _relative_variables(biased)
  assert bias.shape == (32, 2)
  assert not _relative_variables(plain)
  others = [v for v in biased.weights if v is not bias]
  assert len(others) == len(plain.weights)
  for target, source in zip(others, plain.weights):
    assert target.shape == source.shape
    target.assign(source)
  bias.assign(tf.zeros_like(bias))
  zero_bias = biased(inputs, training=False).numpy()
  np.testing.assert_allclose(zero_bias, plain(inputs, training=False).numpy(),
                             atol=1e-5)
  bias.assign(tf.random.stateless_normal(bias.shape, [3, 4]))
  with_bias = biased(inputs, training=False).numpy()
  assert np.abs(with_bias - zero_bias).max() > 1e-2
  # In the model: one set per encoder (D's and the untied G's).
  hp_model = models["hp_loss"]
  assert len(_relative_variables(hp_model.discriminator.encoder)) == 1
  assert len(_relative_variables(hp_model.generator.encoder)) == 1
  assert len(_relative_variables(hp_model)) == 2


def test_padding_tokens_do_not_change_real_outputs(models, features):
  encoder = models["hp_loss"].discriminator.encoder
  inputs = _encoder_inputs(features)
  mask = features["input_mask"].numpy()
  assert np.any(mask == 0)
  noisy = dict(inputs)
  noisy["input_ids"] = tf.where(mask > 0, inputs["input_ids"], 17)
  first = encoder(inputs, training=False).numpy()
  second = encoder(noisy, training=False).numpy()
  np.testing.assert_allclose(first[mask > 0], second[mask > 0], atol=1e-5)


def test_checkpoint_restores_the_discriminator_alone(models, features,
                                                     tmp_path):
  model = models["hp_dist"]
  prefix = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
  inputs = _encoder_inputs(features)
  encoder = fx.build_discriminator_encoder(_config("hp_dist"))
  before = encoder(inputs, training=False).numpy()
  expected = model.discriminator.encoder(inputs, training=False).numpy()
  assert np.abs(before - expected).max() > 1e-3
  assert checkpoints.restore_discriminator(encoder, prefix) == prefix
  np.testing.assert_allclose(encoder(inputs, training=False).numpy(),
                             expected, atol=1e-6)
  # A directory resolves to its latest checkpoint.
  assert checkpoints.restore_discriminator(encoder, str(tmp_path)) == prefix

  wider = fx.build_discriminator_encoder(
      _config("hp_dist", model_hparam_overrides=dict(
          fx.TINY_MODEL, hidden_size=48)))
  wider(inputs)
  with pytest.raises(UserError, match="does not match"):
    checkpoints.restore_discriminator(wider, prefix)
  with pytest.raises(UserError, match="not found"):
    checkpoints.restore_discriminator(encoder, str(tmp_path / "missing"))
  # relative_position must match the pre-training either way.
  no_bias = fx.build_discriminator_encoder(
      _config("hp_dist", relative_position=False))
  no_bias(inputs)
  with pytest.raises(UserError, match="relative_position"):
    checkpoints.restore_discriminator(no_bias, prefix)
  plain_prefix = tf.train.Checkpoint(model=models["mlm"]).save(
      str(tmp_path / "plain" / "ckpt"))
  with pytest.raises(UserError, match="does not match"):
    checkpoints.restore_discriminator(encoder, plain_prefix)


def _tokens_absent_from(features):
  """Ids of the vocabulary that the batch (original or masked) never uses."""
  present = set(features["masked_input_ids"].numpy().ravel()) | set(
      features["input_ids"].numpy().ravel())
  absent = sorted(set(range(VOCAB)) - present)
  assert absent, "the fixture batch uses every token"
  return absent


@pytest.mark.parametrize("untied", [False, True])
def test_untied_mlm_output_keeps_unseen_tokens_input_embeddings_still(
    features, untied):
  """The MLM softmax pushes every vocabulary entry; untied, that push goes
  to the head's own table, and the input embedding of a token absent from
  the batch gets no gradient."""
  config = _config("mlm", electra_objective=False, untied_generator=False,
                   generator_hidden_size=1.0, untied_mlm_output=untied)
  model = _build(config, features)
  absent = _tokens_absent_from(features)
  table = model.generator.encoder.embeddings.embedding_table
  own = model.generator.mlm_head.output_embeddings
  assert (own is not None) == untied
  with tf.GradientTape(persistent=True) as tape:
    loss = model(features, training=True)["total_loss"]
  grad = tf.convert_to_tensor(tape.gradient(loss, table)).numpy()
  assert _is_zero(grad[absent]) == untied
  if untied:
    assert own.shape == (VOCAB, config.embedding_size)
    assert not _is_zero(tape.gradient(loss, own)[absent[0]])


@pytest.mark.parametrize("mode", ["hp_loss", "hp_dist"])
@pytest.mark.parametrize("untied", [False, True])
def test_untied_mlm_output_also_unties_the_sampling_head(features, mode,
                                                         untied):
  """The sampling loss pushes every vocabulary entry too; untied, that push
  goes to the sampling head's own table, and the input embedding of a token
  absent from the batch gets no gradient from it. (Tokens in the batch still
  get one through G's body, which the sampling head shares.)"""
  config = _config(mode, untied_mlm_output=untied)
  model = _build(config, features)
  _set_sampling_bias(model, seed=3, scale=1.0)
  absent = _tokens_absent_from(features)
  table = model.generator.encoder.embeddings.embedding_table
  own = model.generator.sampling_head.output_embeddings
  with tf.GradientTape(persistent=True) as tape:
    loss = model(features, training=True)["sampling_loss"]
  grad = tf.convert_to_tensor(tape.gradient(loss, table)).numpy()
  assert _is_zero(grad[absent]) == untied
  assert (own is not None) == untied
  if untied:
    assert own is not model.generator.mlm_head.output_embeddings
    own_grad = tf.convert_to_tensor(tape.gradient(loss, own)).numpy()
    assert not _is_zero(own_grad[absent])


def test_generator_lr_multiplier_scales_only_what_the_generator_owns(
    models, features):
  model = models["hp_loss"]
  assert builders.generator_lr_multipliers(model, 1.0) == {}
  factors = builders.generator_lr_multipliers(model, 10.0)
  gen_only = [v for v in model.generator.trainable_variables
              if v.name in factors]
  # G's own transformer and both heads; never D's (nor the shared embeddings).
  for head in (model.generator.mlm_head, model.generator.sampling_head):
    assert {v.name for v in head.trainable_variables} <= set(factors)
  assert any("generator_encoder" in v.name for v in gen_only)
  assert not {v.name for v in model.discriminator.trainable_variables} & set(
      factors)
  assert set(factors.values()) == {10.0}
  # One AdamW step (no warmup, no decay, no weight decay): Adam's first step
  # moves every variable by about lr, so G's own move about 10x as far.
  from training import optimization  # pylint: disable=g-import-not-at-top
  table = model.generator.mlm_head.dense.kernel
  word = model.discriminator.encoder.embeddings.word_embeddings.embeddings
  before = [table.numpy(), word.numpy()]
  optimizer = optimization.create_optimizer(1e-3, 100, 0, 0.0,
                                            lr_multipliers=factors)
  grads = [tf.ones_like(v) for v in (table, word)]
  optimizer.apply_gradients(zip(grads, (table, word)))
  moved = [np.abs(v.numpy() - b).max() for v, b in zip((table, word), before)]
  np.testing.assert_allclose(moved[0] / moved[1], 10.0, rtol=1e-3)
  table.assign(before[0])
  word.assign(before[1])


@pytest.mark.parametrize("own_generator_table", [False, True])
def test_embedding_lr_multiplier_scales_the_word_tables(features,
                                                        own_generator_table):
  model = _build(_config("mlm", untied_generator_embeddings=(
      own_generator_table)), features)
  disc = model.discriminator.encoder.embeddings.word_embeddings.embeddings
  gen = model.generator.encoder.embeddings.word_embeddings.embeddings
  assert (gen is not disc) == own_generator_table
  assert builders.learning_rate_multipliers(model, 1.0, 1.0) == {}
  factors = builders.learning_rate_multipliers(model, 10.0, 0.5)
  assert factors[disc.name] == 0.5
  # A table only G has gets G's factor too.
  assert factors[gen.name] == (5.0 if own_generator_table else 0.5)
  head = model.generator.mlm_head.dense.kernel
  assert factors[head.name] == 10.0


def test_gen_weight_is_electra_s_own_weight_in_method_md():
  # Issue 30: docs/method.md called gen_weight a knob the original lacks;
  # ELECTRA's TF1 code has it (total_loss = gen_weight * mlm_loss + ...).
  # test_forward_backward_shapes_and_total_loss checks the code's use of it.
  objective = paths.method_section(11)
  assert "extra knob" not in objective
  assert "`gen_weight` is ELECTRA's own weight on `L_MLM`" in objective
