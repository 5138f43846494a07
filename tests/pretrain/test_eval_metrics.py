"""Tests of pretrain/eval_metrics.py: hand examples and brute force."""

import json

import numpy as np
import pytest

from pretrain import eval_metrics as em
from tests import paths
from util import state_geometry


def _random_batch(rng, batch=6, preds=5, length=12, vocab=7):
  """One eval batch with every key, padding in both masks, ties in scores."""
  weights = (rng.random((batch, preds)) < 0.8).astype(np.float32)
  input_mask = (rng.random((batch, length)) < 0.85).astype(np.int32)
  return dict(
      masked_lm_preds=rng.integers(0, vocab, (batch, preds)),
      masked_lm_ids=rng.integers(0, vocab, (batch, preds)),
      masked_lm_weights=weights,
      mlm_loss_per_pos=rng.random((batch, preds)) * 5,
      mlm_focal_loss_per_pos=rng.random((batch, preds)) * 2,
      gen_max_prob=rng.random((batch, preds)),
      sampled_tokens=rng.integers(0, vocab, (batch, preds)),
      est_log_disc_loss=np.round(rng.random((batch, preds)), 1),
      actual_log_disc_loss=rng.random((batch, preds)),
      disc_probs=np.round(rng.random((batch, length)), 1).astype(np.float32),
      disc_labels=rng.integers(0, 2, (batch, length)),
      input_mask=input_mask,
      disc_loss_per_token=rng.random((batch, length)),
      masked_position_mask=rng.integers(0, 2, (batch, length)),
      input_ids=rng.integers(0, vocab, (batch, length)),
      disc_correct_pG=rng.integers(0, 2, (batch, length)),
      disc_correct_pS=rng.integers(0, 2, (batch, length)),
      disc_correct_uniform=rng.integers(0, 2, (batch, length)),
      disc_states=rng.normal(size=(batch, length, 4)))


def _result(**batch):
  acc = em.PretrainEvalAccumulator()
  acc.update(batch)
  return acc.result()


def test_disc_accuracy_precision_recall_hand_example():
  # Last token is padding (would be a false positive if counted); 0.5 is
  # "original".
  r = _result(disc_probs=np.array([[0.9, 0.2, 0.6, 0.5, 0.1, 0.99]]),
              disc_labels=np.array([[1, 1, 0, 1, 0, 0]]),
              input_mask=np.array([[1, 1, 1, 1, 1, 0]]))
  # preds on real tokens: 1 0 1 0 0; labels 1 1 0 1 0 -> TP 1, FP 1, FN 2, TN 1.
  assert r["num_tokens"] == 5
  assert r["disc_accuracy"] == pytest.approx(2 / 5)
  assert r["disc_precision"] == pytest.approx(1 / 2)
  assert r["disc_recall"] == pytest.approx(1 / 3)
  # Positives 0.9, 0.2, 0.5 vs negatives 0.6, 0.1: 2 + 1 + 1 wins of 6 pairs.
  assert r["disc_auc"] == pytest.approx(4 / 6)


def test_masked_lm_metrics_respect_weights():
  r = _result(masked_lm_preds=np.array([[3, 4, 5, 6]]),
              masked_lm_ids=np.array([[3, 9, 5, 6]]),
              sampled_tokens=np.array([[3, 4, 1, 6]]),
              mlm_loss_per_pos=np.array([[1.0, 2.0, 3.0, np.nan]]),
              mlm_focal_loss_per_pos=np.array([[0.5, 1.0, 0.0, np.nan]]),
              masked_lm_weights=np.array([[1.0, 1.0, 1.0, 0.0]]))
  assert r["num_masked"] == 3
  # The padded hit is not counted, the NaN at padding is ignored.
  assert r["masked_lm_accuracy"] == pytest.approx(2 / 3)
  assert r["masked_lm_loss"] == pytest.approx(2.0)
  assert r["masked_lm_focal_loss"] == pytest.approx(0.5)
  assert "masked_lm_focal_loss" not in _result(
      mlm_loss_per_pos=np.array([[1.0]]), masked_lm_weights=np.array([[1.0]]))
  assert r["sampled_masked_lm_accuracy"] == pytest.approx(1 / 3)
  assert r["replacement_rate"] == pytest.approx(2 / 3)


def test_histogram_bins_and_edges():
  probs = np.array([[0.0, 0.05, 0.1, 0.35, 0.9, 0.95, 1.0, 1.0000001, 0.7]])
  weights = np.array([[1, 1, 1, 1, 1, 1, 1, 1, 0]], np.float32)
  h = _result(gen_max_prob=probs,
              masked_lm_weights=weights)["gen_max_prob_histogram"]
  assert h["counts"] == [2, 1, 0, 1, 0, 0, 0, 0, 0, 4]
  assert h["fractions"][-1] == pytest.approx(0.5)
  assert sum(h["fractions"]) == pytest.approx(1.0)
  assert h["bin_edges"][0] == 0.0 and h["bin_edges"][-1] == 1.0
  assert len(h["bin_edges"]) == 11


def test_estimator_metrics_use_real_positions_only():
  r = _result(est_log_disc_loss=np.array([[1.0, 2.0, 3.0, 100.0]]),
              actual_log_disc_loss=np.array([[1.0, 3.0, 2.0, -100.0]]),
              masked_lm_weights=np.array([[1, 1, 1, 0]], np.float32))
  assert r["num_estimator_pairs"] == 3
  assert r["estimator_pearson"] == pytest.approx(0.5)
  assert r["estimator_spearman"] == pytest.approx(0.5)


def test_hardness_accuracies():
  r = _result(disc_correct_pG=np.array([[1, 1, 1, 0, 1]]),
              disc_correct_pS=np.array([[1, 0, 0, 1, 1]]),
              masked_position_mask=np.array([[0, 1, 1, 0, 1]]),
              input_mask=np.array([[1, 1, 1, 1, 0]]))
  assert r["disc_accuracy_pG_all"] == pytest.approx(3 / 4)
  assert r["disc_accuracy_pS_all"] == pytest.approx(2 / 4)
  assert r["disc_accuracy_pG_masked"] == pytest.approx(1.0)
  assert r["disc_accuracy_pS_masked"] == pytest.approx(0.0)
  assert "disc_auc" not in r and "num_tokens" not in r


def test_batches_accumulate_like_one_big_batch():
  rng = np.random.default_rng(2)
  big = _random_batch(rng, batch=9)
  whole = em.PretrainEvalAccumulator()
  whole.update(big)
  parts = em.PretrainEvalAccumulator()
  for lo, hi in [(0, 2), (2, 7), (7, 9)]:
    parts.update({k: v[lo:hi] for k, v in big.items()})
  a, b = whole.result(), parts.result()
  assert set(a) == set(b)
  assert set(a) == set(em.MAIN_METRICS) | {"gen_max_prob_histogram"}
  assert all(a[k] is not None for k in a)
  for k in a:
    if k == "gen_max_prob_histogram":
      assert a[k] == b[k]
    else:
      assert a[k] == pytest.approx(b[k], abs=1e-12), k


def test_absent_optional_keys_give_absent_metrics():
  rng = np.random.default_rng(3)
  full = _random_batch(rng)
  hp_keys = ("est_log_disc_loss", "actual_log_disc_loss")
  hard_keys = ("disc_correct_pG", "disc_correct_pS", "disc_correct_uniform")
  r = _result(**{k: v for k, v in full.items() if k not in hp_keys + hard_keys})
  for k in ("estimator_pearson", "estimator_spearman", "num_estimator_pairs",
            "disc_accuracy_pG_all", "disc_accuracy_pS_masked",
            "disc_accuracy_uniform_all"):
    assert k not in r
  for k in ("masked_lm_accuracy", "disc_auc", "disc_loss", "replacement_rate",
            "gen_max_prob_histogram"):
    assert k in r
  assert em.PretrainEvalAccumulator().result() == {}


def test_degenerate_cases_give_none_and_notes():
  r = _result(disc_probs=np.array([[0.1, 0.2]]), disc_labels=np.array([[0, 0]]),
              input_mask=np.array([[1, 1]]),
              est_log_disc_loss=np.array([[0.7, 0.7]]),
              actual_log_disc_loss=np.array([[0.1, 0.9]]),
              masked_lm_weights=np.array([[1.0, 1.0]]))
  assert r["disc_auc"] is None and r["disc_recall"] is None
  assert r["disc_precision"] is None  # nothing predicted replaced
  assert r["disc_accuracy"] == pytest.approx(1.0)
  assert r["estimator_pearson"] is None and r["estimator_spearman"] is None
  assert len(r["notes"]) == 4
  json.dumps(r, allow_nan=False)  # no NaN anywhere


def test_bad_batches_raise():
  acc = em.PretrainEvalAccumulator()
  with pytest.raises(ValueError, match="unknown eval keys"):
    acc.update({"mlm_logits": np.zeros((1, 2))})
  with pytest.raises(ValueError, match="shape"):
    acc.update({"disc_probs": np.zeros((1, 3)), "disc_labels": np.zeros((1, 2)),
                "input_mask": np.ones((1, 2))})
  with pytest.raises(ValueError, match="masked_lm_weights"):
    acc.update({"gen_max_prob": np.zeros((1, 2))})


def test_disc_loss_is_token_weighted_and_method_md_says_so():
  # Issue 30: ELECTRA's TF1 eval averages per-example means; ours weighs
  # every real token alike, and docs/method.md must say which it is.
  per_token = np.array([[1.0, 1.0, 1.0, 1.0], [5.0, 9.0, 9.0, 9.0]])
  input_mask = np.array([[1, 1, 1, 1], [1, 0, 0, 0]])
  r = _result(disc_loss_per_token=per_token, input_mask=input_mask)
  assert r["disc_loss"] == pytest.approx((4 * 1.0 + 5.0) / 5)
  per_example = (per_token * input_mask).sum(1) / input_mask.sum(1)
  assert abs(r["disc_loss"] - per_example.mean()) > 1.0
  analyses = paths.method_section(13)
  assert "`disc_loss` is token-weighted" in analyses
  assert "averages per-example means" in analyses


def test_disc_loss_on_replaced_and_on_original_tokens_apart():
  r = _result(disc_loss_per_token=np.array([[0.5, 2.0, 0.1, 3.0, 9.0]]),
              disc_labels=np.array([[0, 1, 0, 1, 1]]),
              disc_probs=np.array([[0.1, 0.2, 0.3, 0.4, 0.5]], np.float32),
              input_mask=np.array([[1, 1, 1, 1, 0]]))
  assert r["disc_loss_replaced"] == pytest.approx((2.0 + 3.0) / 2)
  assert r["disc_loss_original"] == pytest.approx((0.5 + 0.1) / 2)
  assert r["disc_loss"] == pytest.approx(5.6 / 4)


def test_frequency_ranks_of_replacements_and_of_the_tokens_replaced():
  # Token 7 is the most frequent (rank 1), 3 second, 5 third; 9 unseen
  # ranks after every seen token (4).
  ids = np.array([[7, 7, 7, 3, 3, 5, 0]])
  r = _result(input_ids=ids, input_mask=np.array([[1, 1, 1, 1, 1, 1, 0]]),
              disc_labels=np.zeros_like(ids), disc_probs=np.zeros(
                  ids.shape, np.float32),
              sampled_tokens=np.array([[5, 9, 7, 3]]),
              masked_lm_ids=np.array([[7, 3, 7, 5]]),
              masked_lm_weights=np.array([[1.0, 1.0, 1.0, 0.0]]))
  # Replaced: (5 for 7) and (9 for 3); the third is no replacement and the
  # fourth is padding.
  assert r["replacement_log10_rank"] == pytest.approx(
      (np.log10(3) + np.log10(4)) / 2)
  assert r["original_log10_rank"] == pytest.approx(
      (np.log10(1) + np.log10(2)) / 2)


def test_disc_states_spread_counts_real_tokens_up_to_the_limit(monkeypatch):
  rng = np.random.RandomState(0)
  mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]])
  # Real tokens spread over 8 directions; padding all along one far vector.
  states = rng.normal(size=(2, 4, 8))
  states[mask == 0] = 100.0
  acc = em.PretrainEvalAccumulator()
  acc.update(dict(disc_states=states, input_mask=mask))
  spread = acc.result()
  want = state_geometry.spread(states[mask > 0])
  assert (spread["disc_state_cosine"], spread["disc_state_rank"]) == (
      pytest.approx(want, rel=1e-5))
  assert spread["disc_state_cosine"] < 0.5
  # Only the first MAX_STATE_TOKENS real tokens are kept.
  monkeypatch.setattr(em, "MAX_STATE_TOKENS", 3)
  acc = em.PretrainEvalAccumulator()
  acc.update(dict(disc_states=states, input_mask=mask))
  acc.update(dict(disc_states=states, input_mask=mask))
  assert acc.result()["disc_state_rank"] == pytest.approx(
      state_geometry.spread(states[0, :3])[1], rel=1e-5)


def test_disc_states_need_the_mask_of_their_tokens():
  with pytest.raises(ValueError, match="disc_states"):
    em.PretrainEvalAccumulator().update(dict(
        disc_states=np.zeros((2, 4, 8)), input_mask=np.ones((2, 5))))
