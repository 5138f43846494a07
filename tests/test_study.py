"""study.py end to end on the smoke study (study/smoke.json): 2 variants, 1
seed, 20 steps, one fine-tuning epoch on a fixture; RESULTS.md, resume,
--dry-run and a bad config."""

import json
import os

import pytest

import study as study_cli
from studies import plan as plan_lib
from studies import report
from tests.paths import REPO
from util.errors import UserError


def _config(tmp_path, **changes):
  with open(os.path.join(REPO, "study", "smoke.json")) as f:
    config = json.load(f)
  config.update(work_dir=str(tmp_path / "work"), **changes)
  path = tmp_path / "study.json"
  path.write_text(json.dumps(config))
  return str(path)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("study")
  config = _config(tmp)
  output = str(tmp / "docs" / "RESULTS.md")
  assert study_cli.main(["--config", config, "--output", output]) == 0
  return config, output, tmp


def test_the_smoke_study_writes_results_with_every_run(smoke):
  config, output, tmp = smoke
  text = open(output).read()
  for row in ("| scratch / electra |", "| scratch / hp_loss_focal |",
              "| scratch/electra |", "| random_init |",
              "| scratch-hp_loss_focal-s1 | 1 | 20 |"):
    assert row in text, row
  # One seed: no separation can be claimed.
  assert "n/a (fewer than 2 runs)" in text
  figures = tmp / "docs" / "results_smoke"
  for name in ("gen_max_prob.png", "curves.png", "hardness.png"):
    assert (figures / name).stat().st_size > 1000, name
    assert "results_smoke/" + name in text
  timings = json.loads((tmp / "work" / "timings.json").read_text())
  assert len(timings) == 5 and all(t > 0 for t in timings.values())
  # The eval history has both evaluations (eval_every 10 of 20 steps).
  history = json.loads((tmp / "work" / "data" / "models" /
                        "scratch-electra-s1" / "results" /
                        "pretrain_eval_history.json").read_text())
  assert [h["step"] for h in history] == [10, 20]


def test_a_finished_study_resumes_with_nothing_to_run(smoke, capsys):
  config, output, _ = smoke
  capsys.readouterr()
  assert study_cli.main(["--config", config, "--output", output]) == 0
  assert "5 runs, 5 done, 0 to run" in capsys.readouterr().out
  assert study_cli.main(["--config", config, "--dry-run"]) == 0
  out = capsys.readouterr().out
  assert out.count("done ") == 5 and "0 to do" in out


def test_separation_needs_the_gap_to_exceed_the_combined_error():
  assert report.separation([1.0, 1.1, 0.9], [2.0, 2.1, 1.9]) == "separated"
  assert report.separation([1.0, 1.5, 0.5], [1.2, 1.7, 0.7]) == (
      "not separated")
  assert report.separation([1.0], [2.0]).startswith("n/a")


def test_bad_configs_name_the_key(tmp_path):
  with pytest.raises(UserError, match="unknown key 'seed'"):
    plan_lib.load_study(_config(tmp_path, seed=3))
  with pytest.raises(UserError, match="baseline 'bert' is not one of"):
    config = json.loads(open(_config(tmp_path)).read())
    config["pretraining"]["baseline"] = "bert"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))
    plan_lib.load_study(str(path))
