"""get_config/from_config of every layer, network and model round-trip.

For each class: the config names every constructor argument, a clone made
by `from_config` has the same config, and with the same weights it computes
the same outputs. Layers with plain-value configs also round-trip through
Keras' JSON serialisation (they are registered). Networks and models hold
their sub-networks as objects (tf-models-official's convention), so a
clone shares them.
"""

import inspect
import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from model import samplers
from model.layers.attention import BiasedSelfAttention
from model.layers.attention import padding_bias
from model.layers.embeddings import ElectraEmbeddings
from model.layers.replaced_token_head import ReplacedTokenHead
from model.layers.vocabulary_head import VocabularyHead
from model.models.discriminator import Discriminator
from model.models.generator import HardnessPredictionGenerator
from model.models.generator import MaskedLMGenerator
from model.models.pretrainer import ElectraPretrainer
from model.networks.encoder import ElectraEncoder
from tests import pretrain_fixtures as fx

BATCH, SEQ_LEN, PREDS, VOCAB, EMB, HIDDEN = 2, 8, 3, 30, 16, 24


def _constructor_arguments(cls):
  return {name for name in inspect.signature(cls.__init__).parameters
          if name not in ("self", "kwargs")}


def _without(config, keys):
  return {k: v for k, v in config.items() if k not in keys}


def _round_trip(obj, ignore=()):
  """The clone `from_config` makes; checks the config on the way."""
  config = obj.get_config()
  assert _constructor_arguments(type(obj)) <= set(config)
  clone = type(obj).from_config(config)
  assert _without(clone.get_config(), ignore) == _without(config, ignore)
  return clone


def _assert_same_outputs(obj, clone, *args, **kwargs):
  expected = obj(*args, **kwargs)
  clone(*args, **kwargs)  # creates the clone's variables
  own = [v for v in clone.weights if all(v is not w for w in obj.weights)]
  if own:
    clone.set_weights(obj.get_weights())
  tf.nest.map_structure(
      lambda a, b: np.testing.assert_array_equal(a.numpy(), b.numpy()),
      expected, clone(*args, **kwargs))


def _json_round_trip(layer, ignore=()):
  text = json.dumps(tf_keras.layers.serialize(layer))
  clone = tf_keras.layers.deserialize(json.loads(text))
  assert type(clone) is type(layer)
  assert _without(clone.get_config(), ignore) == _without(
      layer.get_config(), ignore)
  return clone


@pytest.fixture(scope="module")
def ids():
  rng = np.random.default_rng(0)
  return tf.constant(rng.integers(0, VOCAB, [BATCH, SEQ_LEN]), tf.int32)


def _embeddings():
  return ElectraEmbeddings(VOCAB, EMB, max_position_embeddings=16,
                           type_vocab_size=2, dropout_rate=0.1,
                           initializer_range=0.05)


def _encoder(relative_position=True):
  return ElectraEncoder(
      _embeddings(), hidden_size=HIDDEN, num_hidden_layers=2,
      num_attention_heads=2, intermediate_size=48, hidden_act="gelu_exact",
      hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.0,
      initializer_range=0.03, relative_position=relative_position,
      relative_num_buckets=8, relative_max_distance=20)


def _encoder_inputs(ids):
  mask = tf.sequence_mask([SEQ_LEN, SEQ_LEN - 3], SEQ_LEN, tf.int32)
  return dict(input_ids=ids, input_mask=mask, segment_ids=tf.zeros_like(ids))


def test_embeddings(ids):
  layer = _embeddings()
  for clone in (_round_trip(layer), _json_round_trip(layer)):
    _assert_same_outputs(layer, clone, ids, tf.zeros_like(ids),
                         training=False)


def test_biased_self_attention():
  layer = BiasedSelfAttention(num_heads=2, key_dim=4, dropout=0.0)
  x = tf.random.stateless_normal([BATCH, SEQ_LEN, 8], [1, 2])
  bias = padding_bias(tf.sequence_mask([SEQ_LEN, 5], SEQ_LEN))
  # tf_keras' MultiHeadAttention lists these in get_config only after
  # from_config made it (None for an unbuilt original).
  shapes = ("query_shape", "key_shape", "value_shape")
  for clone in (_round_trip(layer, shapes), _json_round_trip(layer, shapes)):
    _assert_same_outputs(layer, clone, x, x, attention_mask=bias)


@pytest.mark.parametrize("tied", [True, False])
def test_vocabulary_head(tied):
  layer = VocabularyHead(EMB, VOCAB, hidden_act="relu",
                         initializer_range=0.05, tied=tied)
  hidden = tf.random.stateless_normal([BATCH, PREDS, HIDDEN], [3, 4])
  table = tf.random.stateless_normal([VOCAB, EMB], [5, 6])
  for clone in (_round_trip(layer), _json_round_trip(layer)):
    _assert_same_outputs(layer, clone, hidden, table if tied else None)


def test_replaced_token_head():
  layer = ReplacedTokenHead(HIDDEN, hidden_act="relu", initializer_range=0.03)
  hidden = tf.random.stateless_normal([BATCH, SEQ_LEN, HIDDEN], [7, 8])
  for clone in (_round_trip(layer), _json_round_trip(layer)):
    _assert_same_outputs(layer, clone, hidden)


@pytest.mark.parametrize("relative_position", [False, True])
def test_encoder(ids, relative_position):
  encoder = _encoder(relative_position)
  clone = _round_trip(encoder)
  assert clone.embeddings is encoder.embeddings
  _assert_same_outputs(encoder, clone, _encoder_inputs(ids), training=False)


def _generator_inputs(ids):
  inputs = _encoder_inputs(ids)
  inputs["masked_input_ids"] = inputs.pop("input_ids")
  inputs["masked_lm_positions"] = tf.constant([[1, 2, 3], [0, 4, 4]])
  return inputs


@pytest.mark.parametrize("cls", [MaskedLMGenerator,
                                 HardnessPredictionGenerator])
@pytest.mark.parametrize("tied", [True, False])
def test_generators(ids, cls, tied):
  generator = cls(_encoder(), EMB, VOCAB, hidden_act="gelu",
                  initializer_range=0.04, tie_output_embeddings=tied)
  clone = _round_trip(generator)
  assert clone.encoder is generator.encoder
  _assert_same_outputs(generator, clone, _generator_inputs(ids),
                       training=False)


def test_discriminator(ids):
  discriminator = Discriminator(_encoder(), HIDDEN, hidden_act="relu",
                                initializer_range=0.03)
  clone = _round_trip(discriminator)
  assert clone.encoder is discriminator.encoder
  _assert_same_outputs(discriminator, clone, _encoder_inputs(ids),
                       training=False)


@pytest.mark.parametrize("mode", samplers.NAMES)
def test_pretrainer_from_build_pretrainer(mode):
  config = fx.tiny_config(VOCAB, SEQ_LEN, PREDS, sampling=mode,
                          temperature=0.7, disc_weight=3.0,
                          sampling_warmup_steps=2)
  model = fx.build_pretrainer_with_variables(config)
  sampler_cls = samplers.sampler_class(mode)
  assert type(model.sampler) is sampler_cls
  assert isinstance(model.generator, HardnessPredictionGenerator) == (
      sampler_cls.learns)
  assert isinstance(model.generator, MaskedLMGenerator)
  config_dict = model.get_config()
  assert {k: config_dict[k] for k in ("temperature", "disc_weight",
                                      "sampling_warmup_steps")} == dict(
                                          temperature=0.7, disc_weight=3.0,
                                          sampling_warmup_steps=2)
  clone = _round_trip(model)
  assert clone.generator is model.generator
  assert clone.discriminator is model.discriminator
  features = fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=1)
  _assert_same_outputs(model, clone, features, training=False, step=3)


def test_pretrainer_keeps_a_shared_encoder_shared():
  config = fx.tiny_config(VOCAB, SEQ_LEN, PREDS, untied_generator=False,
                          generator_hidden_size=1.0)
  model = fx.build_pretrainer(config)
  assert model.generator.encoder is model.discriminator.encoder
  clone = ElectraPretrainer.from_config(model.get_config())
  assert clone.generator.encoder is clone.discriminator.encoder


def test_checkpoint_keeps_the_shared_embeddings_under_the_discriminator(
    tmp_path):
  """The pre-trainer's attribute order fixes its checkpoint layout: the
  embeddings G and D share are saved under D (where fine-tuning and older
  checkpoints have them), G's own transformer under G."""
  config = fx.tiny_config(VOCAB, SEQ_LEN, PREDS)
  model = fx.build_pretrainer_with_variables(config)
  prefix = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
  names = [name for name, _ in tf.train.list_variables(prefix)]
  table = "word_embeddings/embeddings/.ATTRIBUTES/VARIABLE_VALUE"
  assert "model/discriminator/encoder/embeddings/" + table in names
  assert not any(n.startswith("model/generator/encoder/embeddings/")
                 for n in names)
  assert any(n.startswith("model/generator/encoder/transformer_layers/")
             for n in names)
