"""The replacement curriculum: model/temperature_schedule.py and how the
pre-trainer draws at the scheduled temperature."""

import math

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from model import sampling
from model.temperature_schedule import TemperatureSchedule
from tests import pretrain_fixtures as fx

BATCH, SEQ_LEN, PREDS, VOCAB = 4, 16, 3, 40


def test_a_constant_temperature_is_a_python_float():
  schedule = TemperatureSchedule(1.5)
  assert schedule.constant
  assert schedule(tf.constant(7)) == 1.5
  assert isinstance(schedule(0), float)


@pytest.mark.parametrize("shape, middle", [("linear", 2.0),
                                           ("cosine", 2.0)])
def test_the_temperature_moves_from_initial_to_final_then_stays(shape,
                                                                middle):
  schedule = TemperatureSchedule(3.0, 1.0, 100, shape)
  assert schedule.value_at(0) == pytest.approx(3.0)
  assert schedule.value_at(50) == pytest.approx(middle)
  assert schedule.value_at(100) == pytest.approx(1.0)
  assert schedule.value_at(10 ** 6) == pytest.approx(1.0)
  steps = np.arange(0, 101, 5)
  values = [schedule.value_at(int(s)) for s in steps]
  assert all(a >= b for a, b in zip(values, values[1:]))


def test_the_cosine_is_slow_at_both_ends():
  linear = TemperatureSchedule(3.0, 1.0, 100, "linear")
  cosine = TemperatureSchedule(3.0, 1.0, 100, "cosine")
  assert cosine.value_at(10) > linear.value_at(10)
  assert cosine.value_at(90) < linear.value_at(90)
  assert cosine.value_at(10) == pytest.approx(
      2.0 + math.cos(math.pi * 0.1), rel=1e-6)


def test_no_decay_steps_is_a_step_change_to_final():
  assert TemperatureSchedule(3.0, 1.0, 0).value_at(0) == pytest.approx(1.0)


@pytest.mark.parametrize("args", [(0.0,), (1.0, -1.0), (1.0, 2.0, -1),
                                  (1.0, 2.0, 10, "exponential")])
def test_bad_arguments_are_refused(args):
  with pytest.raises(ValueError):
    TemperatureSchedule(*args)


def test_a_tensor_temperature_divides_the_logits():
  logits = tf.random.normal([2, 3, 11], seed=1)
  np.testing.assert_allclose(
      sampling.generator_log_probs(logits, tf.constant(2.0)).numpy(),
      sampling.generator_log_probs(logits, 2.0).numpy(), rtol=1e-6)


def _pretrainer(**hparams):
  tf_keras.utils.set_random_seed(1234)
  config = fx.tiny_config(VOCAB, SEQ_LEN, PREDS, **hparams)
  model = fx.build_pretrainer(config)
  return model


@pytest.mark.parametrize("mode", ["mlm", "hp_loss", "hp_dist"])
def test_the_pretrainer_draws_at_the_scheduled_temperature(mode):
  features = fx.make_features(BATCH, SEQ_LEN, PREDS, VOCAB, seed=5)
  curriculum = _pretrainer(sampling=mode, temperature=4.0,
                           temperature_final=1.0, temperature_decay_steps=100)
  curriculum(features, training=False)
  weights = curriculum.get_weights()
  at = {}
  for temperature in (4.0, 2.5, 1.0):
    constant = _pretrainer(sampling=mode, temperature=temperature)
    constant(features, training=False)
    constant.set_weights(weights)
    at[temperature] = constant(features, training=False)
  for step, temperature in ((0, 4.0), (50, 2.5), (100, 1.0), (400, 1.0)):
    got = curriculum(features, training=False, step=step)
    np.testing.assert_array_equal(got["sampled_tokens"].numpy(),
                                  at[temperature]["sampled_tokens"].numpy())
    np.testing.assert_allclose(got["gen_max_prob"].numpy(),
                               at[temperature]["gen_max_prob"].numpy(),
                               rtol=1e-5)
  # An explicit temperature overrides the schedule (evaluation's t1 pass).
  np.testing.assert_array_equal(
      curriculum(features, training=False, step=0,
                 temperature=1.0)["sampled_tokens"].numpy(),
      at[1.0]["sampled_tokens"].numpy())
  # The MLM loss is p_G's at temperature 1 whatever the schedule.
  np.testing.assert_allclose(
      curriculum(features, training=False, step=0)["mlm_loss"].numpy(),
      at[1.0]["mlm_loss"].numpy(), rtol=1e-6)


def test_the_schedule_round_trips_through_get_config():
  model = _pretrainer(temperature=3.0, temperature_final=1.5,
                      temperature_decay_steps=40,
                      temperature_schedule="cosine")
  config = model.get_config()
  clone = type(model).from_config(config)
  assert clone.temperature_at.get_config() == dict(
      initial=3.0, final=1.5, decay_steps=40, shape="cosine")


def test_decay_steps_zero_means_the_whole_run():
  model = _pretrainer(temperature=3.0, temperature_final=1.0,
                      num_train_steps=80)
  assert model.temperature_at.decay_steps == 80
  assert model.temperature_at.value_at(40) == pytest.approx(2.0)
