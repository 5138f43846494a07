"""finetune/start_geometry.py: how spread out a start's token states are."""

import numpy as np
import tensorflow as tf

from finetune import start_geometry
from tests import finetune_fixtures as ff
from tests import pretrain_fixtures as pf

ROWS, SEQ, WIDTH = 8, 12, 32


def _inputs(pad_from=9):
  ids = np.random.RandomState(0).randint(5, 60, (ROWS, SEQ)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[:, pad_from:] = 0
  return dict(input_ids=tf.constant(ids * mask), input_mask=tf.constant(mask),
              segment_ids=tf.zeros_like(ids))


def _fixed_states(states):
  return lambda inputs, training: tf.constant(states, tf.float32)


def test_spread_states_have_low_cosine_and_high_rank():
  states = np.random.RandomState(1).normal(size=(ROWS, SEQ, WIDTH))
  cosine, rank = start_geometry.token_state_geometry(_fixed_states(states),
                                                     _inputs())
  assert abs(cosine) < 0.05 and rank > WIDTH / 2


def test_states_along_one_direction_have_high_cosine_and_low_rank():
  rng = np.random.RandomState(2)
  common = rng.normal(size=WIDTH)
  # Varying along 2 of the WIDTH directions only.
  states = common + 0.05 * rng.normal(size=(ROWS, SEQ, 2)) @ rng.normal(
      size=(2, WIDTH))
  # Padding positions are far off and would lower the cosine if counted.
  states[:, 9:] = -common
  cosine, rank = start_geometry.token_state_geometry(_fixed_states(states),
                                                     _inputs(pad_from=9))
  assert cosine > 0.99 and rank < WIDTH / 2


def test_an_encoder_whose_states_share_one_vector_is_called_collapsed():
  config = ff.tiny_config()
  encoder = pf.build_discriminator_encoder(config)
  inputs = _inputs()
  encoder(inputs, training=False)
  # The top LayerNorm: a large shared offset, and variation left in 2 of
  # its units only.
  gamma, beta = encoder.transformer_layers[-1].weights[-2:]
  assert "gamma" in gamma.name and "beta" in beta.name
  gamma.assign(tf.reduce_sum(tf.one_hot([0, 1], gamma.shape[0]), axis=0))
  beta.assign(tf.fill(beta.shape, 3.0))
  line, measures = start_geometry.describe_start(encoder, inputs)
  assert measures["collapsed"] and "collapsed" in line, line
  assert measures["cosine"] > measures["fresh_cosine"]
