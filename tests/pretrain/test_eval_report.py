"""Tests of pretrain/eval_report.py: results files, the table, the plot."""

import json
import os

import numpy as np
import pytest

from pretrain import eval_report as er
from tests.pretrain.test_eval_metrics import _random_batch
from tests.pretrain.test_eval_metrics import _result


def test_write_results_json_and_text(tmp_path):
  rng = np.random.default_rng(4)
  r = _result(**_random_batch(rng))
  paths = er.write_results(r, str(tmp_path / "results"), name="ev", step=1234)
  with open(paths["json"]) as f:
    loaded = json.load(f)
  assert loaded["step"] == 1234
  assert loaded["disc_auc"] == pytest.approx(r["disc_auc"])
  assert (loaded["gen_max_prob_histogram"]["counts"]
          == r["gen_max_prob_histogram"]["counts"])
  text = open(paths["txt"]).read()
  assert text.startswith("ev (step 1234)")
  assert "disc_auc" in text and "%.4f" % r["disc_auc"] in text
  assert "[0.9, 1.0]" in text
  assert sorted(os.listdir(tmp_path / "results")) == ["ev.json", "ev.txt"]


def test_plot_is_a_png(tmp_path):
  path = str(tmp_path / "hist.png")
  er.plot_max_prob_histogram({"mlm": [0.05] * 5 + [0.05, 0.05, 0.1, 0.1, 0.45],
                              "hp_loss": {"fractions": [0.1] * 10}}, path)
  data = open(path, "rb").read()
  assert data[:8] == b"\x89PNG\r\n\x1a\n"
  assert len(data) > 1000
  with pytest.raises(ValueError, match="bins"):
    er.plot_max_prob_histogram({"bad": [0.5, 0.5]}, path)


def test_log_scale_plot_takes_empty_bins(tmp_path):
  linear, log = str(tmp_path / "linear.png"), str(tmp_path / "log.png")
  fractions = {"mlm": [0.97, 0.02, 0.01] + [0.0] * 7}
  er.plot_max_prob_histogram(fractions, linear)
  er.plot_max_prob_histogram(fractions, log, log_scale=True)
  data = open(log, "rb").read()
  assert data[:8] == b"\x89PNG\r\n\x1a\n"
  assert data != open(linear, "rb").read()


def test_format_results_table():
  a = {"masked_lm_accuracy": 0.5, "disc_auc": 0.91234,
       "gen_max_prob_histogram": {"fractions": [0.0] * 9 + [0.75]}}
  b = {"masked_lm_accuracy": 0.25, "estimator_pearson": None}
  table = er.format_results_table({"mlm": a, "hp_loss": b})
  lines = table.splitlines()
  assert [c.strip() for c in lines[0].split("|")[1:4]] == [
      "metric", "mlm", "hp_loss"]
  assert len(set(len(line) for line in lines)) == 1  # columns aligned
  cells = [[c.strip() for c in line.split("|")[1:4]] for line in lines[2:]]
  row = {c[0]: c[1:] for c in cells}
  assert row["masked_lm_accuracy"] == ["0.5000", "0.2500"]
  assert row["disc_auc"] == ["0.9123", "-"]
  assert row["estimator_pearson"] == ["-", "n/a"]
  assert row["max_prob_in_[0.9,1]"] == ["0.7500", "-"]


def test_discriminator_warning_only_below_the_prior_auc():
  assert "disc_auc 0.550" in er.discriminator_warning({"disc_auc": 0.55})
  assert er.discriminator_warning({"disc_auc": 0.93}) is None
  # An AUC on easy draws does not hide a D that ignores context.
  warning = er.discriminator_warning({"disc_auc": 0.93, "disc_auc_t1": 0.61})
  assert "disc_auc_t1 0.610 < 0.7" in warning
  assert er.discriminator_warning({"disc_auc": 0.5,
                                   "disc_auc_t1": 0.75}) is None
  assert er.what_it_is_good_for({"disc_auc_t1": 0.61}).startswith("Note:")
  assert "uses context" in er.what_it_is_good_for({"disc_auc_t1": 0.81})
  # A high AUC on draws far rarer than the originals is rarity, not context.
  rare = er.what_it_is_good_for({"disc_auc_t1": 0.81,
                                 "replacement_log10_rank_t1": 3.1,
                                 "original_log10_rank_t1": 1.7})
  assert "does not show that it uses context" in rare
  assert "uses context;" in er.what_it_is_good_for(
      {"disc_auc_t1": 0.81, "replacement_log10_rank_t1": 1.8,
       "original_log10_rank_t1": 1.7})
  assert "no discriminator" in er.what_it_is_good_for(
      {"masked_lm_accuracy": 0.3})
  # A plain MLM has no discriminator; an undefined AUC gives no warning.
  assert er.discriminator_warning({"masked_lm_accuracy": 0.3}) is None
  assert er.discriminator_warning({"disc_auc": None}) is None


def test_curves_read_t1_keys_filled_in_only_for_plain_draws(tmp_path):
  recorded = [dict(step=100, disc_auc=0.8, disc_auc_t1=0.55),
              dict(step=200, disc_auc=0.7, disc_auc_t1=0.6)]
  older = [dict(step=100, disc_auc=0.51), dict(step=200)]
  assert er._curve(recorded, "disc_auc_t1") == ([100, 200], [0.55, 0.6])  # pylint: disable=protected-access
  assert er._curve(older, "disc_auc_t1") == ([], [])  # pylint: disable=protected-access
  plain = er.with_t1_keys(older, dict(sampling="mlm", temperature=1.0))
  assert er._curve(plain, "disc_auc_t1") == ([100], [0.51])  # pylint: disable=protected-access
  curriculum = dict(sampling="mlm", temperature=3.0, temperature_final=1.0)
  assert er.with_t1_keys(older, curriculum) == older
  path = er.plot_curves({"curriculum": recorded, "electra": plain},
                        str(tmp_path / "curves.png"), title="t")
  with open(path, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
