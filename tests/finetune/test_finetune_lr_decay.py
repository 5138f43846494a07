"""Layer-wise learning-rate decay: the multiplier of every variable, and the
update the optimizer really applies with it."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from finetune import layerwise_decay
from finetune.model import FinetuningModel
from training import optimization
from tests import finetune_fixtures as ff
from tests import pretrain_fixtures as pf

DECAY = 0.8


def _model(seed=0, **overrides):
  # embedding_size 16 != hidden 32, so the encoder has a projection. Seeded:
  # which weights get a clear first gradient depends on the draw (it made
  # this test depend on the tests run before it in the same process).
  tf_keras.utils.set_random_seed(seed)
  tf_keras.mixed_precision.set_global_policy("float32")  # Whatever ran before.
  config = ff.tiny_config(embedding_size=16, max_seq_length=16, **overrides)
  tokenizer = ff.build_tokenizer(config)
  task = ff.get_task(config, "sst", tokenizer)
  model = FinetuningModel(pf.build_discriminator_encoder(config),
                          task.build_head())
  features = task.load("train").features
  model({k: v[:8] for k, v in features.items()}, training=False)
  return model, task, features


# The exponent is TOP - depth, depth 0 for the input side and i + 1 for
# layer i. ELECTRA's `_get_layer_lrs` (google-research/electra,
# model/optimization.py) gives lr * d^(n + 2 - depth), the head at depth n + 2.
TOP = {"default": lambda n: n, "electra": lambda n: n + 2}


def _expected_factor(model, variable, rule="default"):
  """The rate of the rule: top layer 1 (default) or d^2 (electra)."""
  encoder = model.encoder
  top = TOP[rule](len(encoder.transformer_layers))
  owners = [(encoder.embeddings, 0)]
  if encoder.embedding_projection is not None:
    owners.append((encoder.embedding_projection, 0))
  if encoder.relative_position_bias is not None:
    owners.append((encoder.relative_position_bias, 0))
  owners += [(layer, i + 1)
             for i, layer in enumerate(encoder.transformer_layers)]
  for layer, depth in owners:
    if any(variable is v for v in layer.trainable_variables):
      return DECAY ** (top - depth)
  return None  # not in the encoder: a head variable, base rate


# Spelled out for 2 layers and d = 0.8.
SPELLED_OUT = {
    "default": dict(layer_1=1.0, layer_0=0.8, input_side=0.64),
    "electra": dict(layer_1=0.64, layer_0=0.512, input_side=0.4096)}


@pytest.mark.parametrize("rule", ["default", "electra"])
@pytest.mark.parametrize("relative_position", [False, True])
def test_multiplier_of_every_variable(relative_position, rule):
  model, _, _ = _model(relative_position=relative_position)
  multipliers = layerwise_decay.layerwise_lr_multipliers(model.encoder, DECAY,
                                                         rule)
  encoder_ids = {id(v) for v in model.encoder.trainable_variables}
  assert len(multipliers) == len(encoder_ids)
  for variable in model.trainable_variables:
    expected = _expected_factor(model, variable, rule)
    if id(variable) in encoder_ids:
      assert multipliers[variable.name] == pytest.approx(expected), (
          variable.name)
    else:
      assert expected is None and variable.name not in multipliers
  by_name = {}
  for part in ("layer_1", "layer_0", "embeddings", "embedding_projection",
               "relative_position_bias"):
    factors = {f for name, f in multipliers.items() if part in name.split("/")}
    if factors:
      assert len(factors) == 1, part
      by_name[part] = factors.pop()
  spelled = SPELLED_OUT[rule]
  assert by_name["layer_1"] == pytest.approx(spelled["layer_1"])
  assert by_name["layer_0"] == pytest.approx(spelled["layer_0"])
  for part in ("embeddings", "embedding_projection") + (
      ("relative_position_bias",) if relative_position else ()):
    assert by_name[part] == pytest.approx(spelled["input_side"]), part


def test_default_rule_and_unknown_rule():
  model, _, _ = _model()
  assert layerwise_decay.layerwise_lr_multipliers(model.encoder, DECAY) == (
      layerwise_decay.layerwise_lr_multipliers(model.encoder, DECAY,
                                               "default"))
  with pytest.raises(ValueError, match="rule"):
    layerwise_decay.layerwise_lr_multipliers(model.encoder, DECAY, "bert")


def test_optimizer_applies_the_multipliers():
  model, task, features = _model()
  multipliers = layerwise_decay.layerwise_lr_multipliers(model.encoder, DECAY)
  lr = 1e-3
  optimizer = optimization.create_optimizer(
      lr, num_train_steps=10, num_warmup_steps=0, weight_decay_rate=0.0,
      epsilon=1e-12, lr_multipliers=multipliers)
  variables = model.trainable_variables
  before = [v.numpy().copy() for v in variables]
  batch = {k: tf.constant(v[:8]) for k, v in features.items()}
  with tf.GradientTape() as tape:
    loss = tf.reduce_mean(task.compute_losses(model(batch, training=False),
                                              batch))
  grads = tape.gradient(loss, variables)
  optimization.apply_clipped_gradients(optimizer, grads, variables, 0.0)
  # Adam's first step moves each weight by lr * g / |g| (bias-corrected):
  # the change of every weight with a clear gradient is its learning rate.
  # (Attention query/key weights of a random model get gradients near 0.)
  checked = []
  for variable, old, grad in zip(variables, before, grads):
    grad = np.abs(tf.convert_to_tensor(grad).numpy())
    clear = grad > 1e-5
    if not clear.any():
      continue
    change = np.abs(variable.numpy() - old)[clear]
    expected = lr * multipliers.get(variable.name, 1.0)
    np.testing.assert_allclose(change, expected, rtol=1e-3,
                               err_msg=variable.name)
    checked.append(variable.name)
  assert len(checked) >= 0.75 * len(variables)
  for part in ("word_embeddings", "layer_0/output/kernel",
               "layer_1/output/kernel", "sst_head"):
    assert any(part in name for name in checked), part


def test_replica_copies_get_the_factor_of_their_variable():
  # MirroredStrategy names replica k's copy of "w:0" "w/replica_k:0"; the
  # optimizer must scale both alike or the replicas drift apart.
  lr = 1e-3
  optimizer = optimization.create_optimizer(
      lr, num_train_steps=10, num_warmup_steps=0, weight_decay_rate=0.0,
      epsilon=1e-12, lr_multipliers={"w:0": 0.5})
  primary = tf.Variable([1.0, 1.0], name="w")
  copy = tf.Variable([1.0, 1.0], name="w/replica_1")
  other = tf.Variable([1.0, 1.0], name="v")
  assert copy.name == "w/replica_1:0"
  grad = tf.constant([1.0, -1.0])
  optimizer.apply_gradients([(grad, primary), (grad, copy), (grad, other)])
  np.testing.assert_allclose(primary.numpy(), [1 - 0.5 * lr, 1 + 0.5 * lr])
  np.testing.assert_allclose(copy.numpy(), primary.numpy())
  np.testing.assert_allclose(other.numpy(), [1 - lr, 1 + lr])
