"""Tests of pretrain/rank_stats.py: hand values, brute force and SciPy."""

import numpy as np
import pytest

from pretrain import rank_stats


@pytest.mark.parametrize("scores,labels,expected", [
    ([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], 0.75),
    ([0.5, 0.5, 0.5, 0.9], [0, 1, 0, 1], 0.75),   # one pos ties both negs
    ([0.3, 0.3, 0.3], [1, 0, 0], 0.5),
    ([0.1, 0.2, 0.9, 0.8], [0, 0, 1, 1], 1.0),
    ([0.9, 0.8, 0.1, 0.2], [0, 0, 1, 1], 0.0),
    ([0.2, 0.2, 0.7, 0.2, 0.7], [1, 0, 1, 0, 0], 3.5 / 6),
])
def test_auc_hand_values(scores, labels, expected):
  assert rank_stats.exact_auc(scores, labels) == pytest.approx(expected,
                                                              abs=1e-12)


def test_auc_matches_pairwise_count_with_ties():
  rng = np.random.default_rng(0)
  scores = np.round(rng.random(400), 2)  # many ties
  labels = rng.random(400) < 0.3
  pos, neg = scores[labels], scores[~labels]
  diff = pos[:, None] - neg[None, :]
  brute = ((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size
  assert rank_stats.exact_auc(scores, labels) == pytest.approx(brute, abs=1e-12)


def test_auc_undefined_with_one_class():
  assert rank_stats.exact_auc([0.2, 0.9], [0, 0]) is None
  assert rank_stats.exact_auc([], []) is None


def test_pearson_spearman_hand_values():
  assert rank_stats.pearson([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
  assert rank_stats.pearson([1, 2, 3, 4, 5],
                            [2, 4, 6, 8, 10]) == pytest.approx(1.0)
  # y ranks with a tie: [1, 2, 3.5, 5, 3.5] -> r = 8 / sqrt(10 * 9.5).
  assert rank_stats.spearman([1, 2, 3, 4, 5],
                             [5, 6, 7, 8, 7]) == pytest.approx(8 / np.sqrt(95))
  np.testing.assert_allclose(rank_stats.average_ranks([10, 20, 10, 5]),
                             [2.5, 4, 2.5, 1])
  assert rank_stats.pearson([1, 1, 1], [1, 2, 3]) is None
  assert rank_stats.spearman([1], [2]) is None


def test_correlations_match_scipy():
  stats = pytest.importorskip("scipy.stats")
  rng = np.random.default_rng(1)
  x = np.round(rng.random(500), 1)
  y = x + rng.normal(0, 0.3, 500)
  assert rank_stats.pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0],
                                                   abs=1e-10)
  assert rank_stats.spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0],
                                                    abs=1e-10)
