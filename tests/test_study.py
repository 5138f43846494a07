"""study.py end to end on the smoke study (studies/configs/smoke.json): 2
variants, 1 seed, 20 steps from scratch and 10 continued from the exported
scratch ELECTRA model on a fixture task's text, one fine-tuning epoch on a
fixture; RESULTS.md, resume, --dry-run and bad configs."""

import glob
import json
import os
import socket
import subprocess
import sys

import pytest

import study as study_cli
from studies import config as config_lib
from studies import plan as plan_lib
from studies import report
from studies import runner
from studies import statistics
from tests.paths import REPO
from util.errors import UserError


def _config(tmp_path, **changes):
  with open(os.path.join(REPO, "studies", "configs", "smoke.json")) as f:
    config = json.load(f)
  config.update(work_dir=str(tmp_path / "work"),
                results=str(tmp_path / "results" / config["name"]), **changes)
  path = tmp_path / "study.json"
  path.write_text(json.dumps(config))
  return str(path)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("study")
  notes = tmp / "notes.md"
  notes.write_text("## What we chose\n\nThe notes of this study.\n")
  config = _config(tmp, notes=str(notes))
  output = str(tmp / "docs" / "RESULTS.md")
  assert study_cli.main(["--config", config, "--output", output]) == 0
  return config, output, tmp


def test_the_repository_studies_write_their_outputs_under_results():
  """Each study of studies/configs/ writes its figures (and its archive) under
  results/ and its report in docs/; without a "results" key a study's go to
  results/<name>."""
  assert plan_lib.results_dir({"name": "x"}) == os.path.join(
      REPO, "results", "x")
  assert plan_lib.results_dir({"name": "x", "results": "../y"}) == (
      os.path.join(os.path.dirname(REPO), "y"))
  configs = sorted(glob.glob(os.path.join(REPO, "studies", "configs",
                                          "*.json")))
  assert len(configs) >= 5
  for path in configs:
    with open(path) as f:
      study = json.load(f)
    results = os.path.relpath(plan_lib.results_dir(study), REPO)
    assert results == os.path.join("results", os.path.basename(path)[:-5]) or (
        "results" not in study and results == os.path.join(
            "results", study["name"])), (path, results)
    if "archive" in study:
      archive = os.path.relpath(plan_lib.repo_path(study["archive"]), REPO)
      assert archive.startswith(results + os.sep), (path, archive)
      assert os.path.isdir(os.path.join(REPO, archive)), archive
    assert report.default_output(study).startswith("docs" + os.sep), path


def test_the_command_names_output_only_when_it_is_not_the_default(smoke):
  config = smoke[0]
  study = config_lib.load_study(config)
  default = os.path.join(REPO, "docs", "RESULTS.md")
  assert report.provenance(study, default)[0] == (
      "- command: `python study.py --config %s`" % os.path.relpath(
          config, REPO))
  assert report.provenance(study, "/tmp/R.md")[0].endswith(
      " --output %s`" % os.path.relpath("/tmp/R.md", REPO))


def test_the_smoke_study_writes_results_with_every_run(smoke):
  config, output, tmp = smoke
  text = open(output).read()
  for row in ("| scratch / electra |", "| scratch / hp_loss_focal |",
              "| continued / hp_loss_focal |",
              "| scratch/electra |", "| continued/electra |", "| random_init |",
              "| scratch-hp_loss_focal-s1 | 1 | 20 |",
              "| continued-electra-s1 | 1 | 10 |"):
    assert row in text, row
  assert "## What we chose\n\nThe notes of this study." in text
  # Where it comes from: the command, the date, the machine, the time.
  assert "- command: `python study.py --config " in text
  assert " --output %s`" % os.path.relpath(output, REPO) in text
  assert "- written: 20" in text and "- machine: " in text
  assert "- wall time of the 10 runs done (of 10), summed over runs: " in text
  assert "- elapsed: " in text and "of 10 timed runs' start" in text
  assert "at most 1 at a time" in text  # One worker.
  # One seed: no separation can be claimed.
  assert "n/a (fewer than 2 runs)" in text
  # The figures go to the config's results directory, linked from the
  # report in docs/.
  figures = tmp / "results" / "smoke"
  for name in ("gen_max_prob.png", "curves.png", "hardness.png"):
    assert (figures / name).stat().st_size > 1000, name
    assert "](../results/smoke/%s)" % name in text
  assert (figures / "summary.json").exists()
  assert not (tmp / "docs" / "results_smoke").exists()
  timings = json.loads((tmp / "work" / "timings.json").read_text())
  # 4 pre-trainings, 1 export, 5 fine-tunings.
  assert len(timings) == 10 and all(t > 0 for t in timings.values())
  # The eval history has both evaluations (eval_every 10 of 20 steps).
  history = json.loads((tmp / "work" / "data" / "models" /
                        "scratch-electra-s1" / "results" /
                        "pretrain_eval_history.json").read_text())
  assert [h["step"] for h in history] == [10, 20]


def test_a_finished_study_resumes_with_nothing_to_run(smoke, capsys):
  config, output, _ = smoke
  capsys.readouterr()
  assert study_cli.main(["--config", config, "--output", output]) == 0
  assert "10 runs, 10 done, 0 to run" in capsys.readouterr().out
  assert study_cli.main(["--config", config, "--dry-run"]) == 0
  out = capsys.readouterr().out
  assert out.count("done ") == 10 and "0 to do" in out


def test_the_continued_regime_starts_from_the_exported_model(smoke):
  _, _, tmp = smoke
  data = tmp / "work" / "data"
  log = (tmp / "work" / "logs" /
         "pretrain_continued_hp_loss_focal_seed1.log").read_text()
  # D and G come from the HF export of the scratch ELECTRA model; the
  # sampling head, which ELECTRA has not, starts fresh.
  assert str(tmp / "work" / "exports" / "scratch-electra-s1") in log
  assert "initialised fresh" in log and "sampling" in log
  config = json.loads((data / "models" / "continued-electra-s1" /
                       "config.json").read_text())
  assert config["pretrain_tfrecords"].startswith(
      str(data / "regimes" / "continued" / "pretrain_tfrecords"))
  corpus = (data / "regimes" / "continued" / "corpus" /
            "sst_fixture.txt").read_text().splitlines()
  with open(os.path.join(REPO, "tests", "fixtures", "finetune",
                         "finetuning_data", "sst", "train.tsv")) as f:
    sentences = [line.split("\t")[0].strip() for line in f][1:]
  assert [line for line in corpus if line] == sentences


def test_separation_is_welchs_t_test_at_p_005():
  # Gap 1.0, standard error 0.0816: far apart.
  assert statistics.separation([1.0, 1.1, 0.9], [2.0, 2.1, 1.9]) == (
      "separated")
  assert statistics.versus([1.0, 1.1, 0.9], [2.0, 2.1, 1.9]) == (
      "-1.0000 ± 0.0816 (p<0.001): separated")
  assert statistics.difference([1.0, 1.1, 0.9], [2.0, 2.1, 1.9]) == (
      "-1.0000 ± 0.0816 (p<0.001)")
  # A gap of 1.5 standard errors is not enough with 3 values a row.
  close = [1.0, 1.1, 0.9], [1.1225, 1.2225, 1.0225]
  diff, se, p = statistics.welch(*close)
  assert abs(diff / se + 1.5) < 1e-3 and 0.05 < p < 0.5, (diff, se, p)
  assert statistics.separation(*close) == "not separated"
  assert statistics.separation([1.0, 1.5, 0.5], [1.2, 1.7, 0.7]) == (
      "not separated")
  assert statistics.separation([1.0], [2.0]).startswith("n/a")
  assert statistics.versus([1.0], [2.0]).startswith("n/a")
  assert statistics.welch([1.0, 1.0], [1.0, 1.0])[2] == 1.0


def test_elapsed_time_counts_overlapping_runs_once():
  runs = [plan_lib.Run(name, "finetune", [], "", "", 0, 1, ())
          for name in "abcd"]
  # a and b overlap (two workers), then c alone; d has no span.
  spans = {"a": [1000.0, 1600.0], "b": [1200.0, 1900.0],
           "c": [1900.0, 2200.0]}
  (line,) = report.elapsed_lines(spans, runs)
  assert line.startswith("- elapsed: 20m00s from the first of 3 timed runs' "
                         "start (1970-01-01 00:16 UTC)"), line
  assert line.endswith("at most 2 at a time"), line
  assert report.elapsed_lines({}, runs) == []


def test_a_downstream_row_is_tested_on_its_models_means(tmp_path):
  study = config_lib.load_study(_config(tmp_path))
  base = plan_lib.baseline(study)
  # Two models a row, fine-tuned 3 times each: a gap that is large against
  # the spread within a model but not against the spread between models.
  data = dict(metrics={"t": "accuracy"}, per_run=[], downstream={"t": {
      "scratch/%s" % base: {"a1": [60.0, 60.1, 59.9], "a2": [70.0, 70.1,
                                                             69.9]},
      "scratch/hp": {"b1": [62.0, 62.1, 61.9], "b2": [72.0, 72.1, 71.9]},
      plan_lib.RANDOM_INIT: {plan_lib.RANDOM_INIT: [50.0, 50.2, 49.8]}}})
  text = "\n".join(report.downstream_tables(study, data))
  row = next(line for line in text.splitlines()
             if line.startswith("| scratch/hp |"))
  assert "67.000 ± 5.478 (n=6)" in row, row
  # vs ELECTRA: +2 +- 7.07 over 2 model means each (t 0.28, 2 dof).
  assert "+2.0000 ± 7.0711 (p=0.804): not separated" in row, row
  # vs random init: 2 model means against 3 fine-tuning seeds.
  assert "+17.0000 ± 5.0013" in row and ": not separated" in row, row


def test_bad_configs_name_the_key(tmp_path):
  with pytest.raises(UserError, match="unknown key 'seed'"):
    config_lib.load_study(_config(tmp_path, seed=3))
  with pytest.raises(UserError, match="data: unknown key 'corpus_dri'. "
                     "Did you mean 'corpus_dir'"):
    config = json.loads(open(_config(tmp_path)).read())
    config["data"]["corpus_dri"] = config["data"]["corpus_dir"]
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(config))
    config_lib.load_study(str(path))
  with pytest.raises(UserError, match="baseline 'bert' is not one of"):
    config = json.loads(open(_config(tmp_path)).read())
    config["pretraining"]["baseline"] = "bert"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))
    config_lib.load_study(str(path))


def test_a_bad_hparam_fails_before_any_run_and_names_it(tmp_path):
  config = json.loads(open(_config(tmp_path)).read())
  config["finetuning"]["tasks"][0]["hparams"] = {"num_train_epochs": -1}
  path = tmp_path / "bad.json"
  path.write_text(json.dumps(config))
  with pytest.raises(UserError, match="run 'finetune sst_fixture from "
                     "scratch-electra-s1': .*num_train_epochs"):
    config_lib.check_hparams(config_lib.load_study(str(path)))
  assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("key,value,message", [
    ("init_from", "continued-electra-s1", "not a model of an earlier regime"),
    ("corpus_task", "mnli", "not one of finetuning.tasks"),
])
def test_bad_regimes_name_the_key(tmp_path, key, value, message):
  config = json.loads(open(_config(tmp_path)).read())
  config["pretraining"]["regimes"]["continued"][key] = value
  path = tmp_path / "bad.json"
  path.write_text(json.dumps(config))
  with pytest.raises(UserError, match="regimes.continued: %s" % key):
    config_lib.load_study(str(path))


def test_workers_claim_runs_and_take_over_a_dead_workers_claim(tmp_path):
  study = config_lib.load_study(_config(tmp_path))
  first, second = plan_lib.plan(study)[:2]
  held = runner.claim(study, first)
  assert held and open(held).read() == "%d %s" % (os.getpid(),
                                                  socket.gethostname())
  assert runner.claim(study, first) is None  # We are alive: it stays ours.
  assert runner.claim(study, second) not in (None, held)
  dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                        capture_output=True, text=True, check=True)
  with open(held, "w") as f:
    f.write(dead.stdout.strip())  # A worker that has exited.
  assert runner.claim(study, first) == held
  assert open(held).read().split()[0] == str(os.getpid())


def test_a_worker_skips_runs_another_worker_holds(tmp_path):
  study = config_lib.load_study(_config(tmp_path))
  runs = plan_lib.plan(study)
  other = subprocess.Popen([sys.executable, "-c", "import time; "
                            "time.sleep(60)"])
  try:
    for run in runs:  # Another live worker holds every run.
      with open(runner.claim(study, run), "w") as f:
        f.write(str(other.pid))
    lines = []
    runner.run_all(study, log=lines.append)
    assert sum("another worker runs it" in line for line in lines) == len(
        runs), lines
    assert not any(runner.is_done(r) for r in runs)
  finally:
    other.kill()
    other.wait()


def test_a_run_waits_for_the_model_another_worker_is_still_making(
    tmp_path, monkeypatch):
  study = config_lib.load_study(_config(tmp_path))
  runs = plan_lib.plan(study)
  first = runs[0]  # Scratch ELECTRA: the export and every later regime need it.
  done, order = set(), []
  monkeypatch.setattr(runner, "is_done", lambda run: run.id in done)

  def run_one(study, run, *args):
    del study, args
    order.append(run.id)
    done.add(run.id)
    return {}

  def other_worker_finishes(seconds):
    del seconds
    order.append("(other worker done)")
    done.add(first.id)
    os.remove(held)

  monkeypatch.setattr(runner, "_run_one", run_one)
  monkeypatch.setattr(runner.time, "sleep", other_worker_finishes)
  other = subprocess.Popen([sys.executable, "-c", "import time; "
                            "time.sleep(60)"])
  try:
    held = runner.claim(study, first)
    with open(held, "w") as f:
      f.write(str(other.pid))
    lines = []
    runner.run_all(study, log=lines.append, poll_seconds=0)
  finally:
    other.kill()
    other.wait()
  by_id = {r.id: r for r in runs}

  def reads_first(run_id):
    return any(n == first.id or reads_first(n) for n in by_id[run_id].needs)

  wait = order.index("(other worker done)")
  assert any(reads_first(r) for r in by_id), "the plan has no dependency"
  assert not any(reads_first(r) for r in order[:wait]), order
  assert order[:wait], "nothing independent ran while waiting"
  assert done == set(by_id), sorted(set(by_id) - done)
  assert sum("waits for %s" % first.id in line for line in lines) == 1, lines


def test_every_run_needs_only_earlier_runs(tmp_path):
  runs = plan_lib.plan(config_lib.load_study(_config(tmp_path)))
  seen = set()
  for run in runs:
    assert set(run.needs) <= seen, (run.id, run.needs)
    seen.add(run.id)
  kinds = {r.kind: r for r in runs if r.needs}
  assert set(kinds) == {"export", "pretrain", "finetune"}, kinds


def test_a_tasks_first_estimate_scales_another_tasks_time_by_its_work(
    tmp_path):
  with open(os.path.join(REPO, "studies", "configs", "smoke.json")) as f:
    fine = json.load(f)["finetuning"]
  small = dict(fine["tasks"][0], name="small", train_subset=10,
               hparams={"num_train_epochs": 4.0})
  fine["tasks"].append(small)
  study = config_lib.load_study(_config(tmp_path, finetuning=fine))
  tasks = os.path.join(plan_lib.data_dir(study), "finetuning_data")
  for name, train, dev in (("sst_fixture", 40, 30), ("small", 10, 30)):
    os.makedirs(os.path.join(tasks, name))
    for split, rows in (("train", train), ("dev", dev)):
      with open(os.path.join(tasks, name, split + ".tsv"), "w") as f:
        f.write("sentence\tlabel\n" + "a b\t1\n" * rows)
  runs = plan_lib.plan(study)
  first = [r for r in runs if r.id.startswith("finetune sst_fixture ")]
  other = [r for r in runs if r.id.startswith("finetune small ")]
  # 1 epoch x (40 + 30/3) against 4 epochs x (10 + 30/3), one trial each.
  assert runner.finetune_work(first[0]) == 50
  assert runner.finetune_work(other[0]) == 80
  timings = {first[0].id: 100.0}
  assert runner.estimate_seconds(other[0], runs, timings) == 160.0
  # Once the task has a run of its own, that run's time is the estimate.
  timings[other[0].id] = 90.0
  assert runner.estimate_seconds(other[1], runs, timings) == 90.0
  assert runner.live_workers(study) == 1


def test_holm_adjusts_a_family_of_p_values_step_down():
  adjusted = statistics.holm([0.01, 0.04, 0.03])
  assert adjusted == pytest.approx([0.03, 0.06, 0.06])
  assert statistics.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
