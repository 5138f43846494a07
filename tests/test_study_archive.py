"""A study's archive (studies/archive.py) on the smoke study's plan, with
fake runs: each child process is replaced by one that writes made-up
results, a checkpoint and big files where the real scripts do. Archived on
finish (small files only), restored after the work_dir is deleted with the
same report, and a pre-training whose model is gone but still read runs
again."""

import json
import os
import shutil
import zlib

import pytest

import study as study_cli
from studies import archive
from studies import config as config_lib
from studies import plan as plan_lib
from studies import report
from studies import runner
from tests.test_study import _config
from util.errors import UserError

BIG = b"\0" * 50000  # A checkpoint, exported weights, a figure.


def _value(*keys):
  """A made-up score in [0.5, 0.9) that depends on `keys`."""
  return 0.5 + zlib.crc32(repr(keys).encode()) % 4000 / 10000.0


def _write(path, data):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "wb" if isinstance(data, bytes) else "w") as f:
    f.write(data if isinstance(data, bytes) else json.dumps(data))


def _pretrain(model_dir, name, hparams):
  steps = hparams["num_train_steps"]
  metrics = {k: _value(name, k) for k in report.PRETRAIN_COLUMNS}
  fractions = [_value(name, i) for i in range(10)]
  _write(os.path.join(model_dir, "config.json"), hparams)
  _write(os.path.join(model_dir, "checkpoints", "ckpt-%d.index" % steps), "i")
  _write(os.path.join(model_dir, "checkpoints",
                      "ckpt-%d.data-00000-of-00001" % steps), BIG)
  results = os.path.join(model_dir, "results")
  _write(os.path.join(results, "gen_max_prob_histogram.png"), BIG)
  _write(os.path.join(results, "pretrain_eval_history.json"),
         [dict(metrics, step=s) for s in (steps // 2, steps)])
  _write(os.path.join(results, "pretrain_eval.txt"), "eval")
  _write(os.path.join(results, "pretrain_eval.json"), dict(
      metrics, step=steps, gen_max_prob_histogram=dict(fractions=fractions)))


def _finetune(model_dir, name, hparams):
  task = hparams["task_names"][0]
  seeds = range(hparams["seed"], hparams["seed"] + hparams["num_trials"])
  trials = [dict(trial=i + 1, seed=s, best=dict(results=dict(dev=dict(
      accuracy=100 * _value(name, task, s))))) for i, s in enumerate(seeds)]
  task_dir = os.path.join(model_dir, "finetuning_models", task)
  _write(os.path.join(task_dir, "config.json"), hparams)
  _write(os.path.join(task_dir, "trial_1", "best", "weights"), BIG)
  _write(os.path.join(model_dir, "results", task + "_results.txt"), "r")
  _write(os.path.join(model_dir, "results", task + "_results.json"), dict(
      task=task, primary_metric="accuracy", num_trials=len(trials),
      trials=trials))


class FakeRuns:
  """Stands in for the runner's child runs (util.interrupt.run_child):
  writes what each script writes, and remembers the runs (their model
  names) in `ran`; returns the exit code."""

  def __init__(self):
    self.ran = []

  def __call__(self, argv, **kwargs):
    del kwargs
    script = argv[1]

    def flag(name):
      return argv[argv.index(name) + 1]
    name = flag("--model-name")
    self.ran.append((script, name))
    if script == "export_model.py":
      output = os.path.join(flag("--output"), "discriminator")
      _write(os.path.join(output, "config.json"), {"model": name})
      _write(os.path.join(output, "model.safetensors"), BIG)
    else:
      model_dir = os.path.join(flag("--data-dir"), "models", name)
      write = _pretrain if script == "run_pretraining.py" else _finetune
      write(model_dir, name, json.loads(flag("--hparams")))
    return 0


@pytest.fixture
def fake(monkeypatch):
  runs = FakeRuns()
  monkeypatch.setattr(runner.interrupt, "run_child", runs)
  return runs


def _study(tmp_path, **changes):
  return config_lib.load_study(_config(
      tmp_path, archive=str(tmp_path / "archive"), **changes))


def _report(study, output):
  """The report's text without its date line, and its summary.json."""
  report.write_report(study, output)
  with open(output) as f:
    text = [line for line in f if not line.startswith("- written: ")]
  with open(os.path.join(report.figures_dir(study),
                         "summary.json")) as f:
    return text, json.load(f)


def test_each_run_is_archived_when_it_finishes_without_big_files(
    tmp_path, fake):
  study = _study(tmp_path)
  runs = runner.run_all(study, log=lambda line: None)
  assert len(fake.ran) == len(runs) == 10
  timings = runner.load_timings(study)
  for run in runs:
    manifest = json.loads((tmp_path / "archive" / plan_lib.file_name(run) /
                           archive.MANIFEST).read_text())
    assert manifest["seconds"] == timings[run.id] and manifest["span"]
    assert manifest["files"][-1] == os.path.relpath(
        run.done_file, plan_lib.work_dir(study))
    assert "$WORK_DIR/data" in manifest["settings"]
    assert archive.size(study, run) < 5000, run.id
  names = {n for _, _, files in os.walk(tmp_path / "archive") for n in files}
  assert names == {archive.MANIFEST, "config.json", "pretrain_eval.json",
                   "pretrain_eval.txt", "pretrain_eval_history.json",
                   "sst_fixture_results.json", "sst_fixture_results.txt"}


def test_a_deleted_work_dir_is_restored_with_the_same_report(
    tmp_path, fake, capsys):
  study = _study(tmp_path)
  runner.run_all(study, log=lambda line: None)
  output = str(tmp_path / "docs" / "RESULTS.md")
  before = _report(study, output)
  shutil.rmtree(tmp_path / "docs")
  shutil.rmtree(plan_lib.work_dir(study))
  capsys.readouterr()
  assert study_cli.main(["--config", study["path"], "--dry-run"]) == 0
  out = capsys.readouterr().out
  assert out.count("restored: from the archive") == 10, out
  assert "10 run(s) restored from %s, 0 to run again" % study["archive"] in (
      out) and "10 runs, 0 to do" in out
  shutil.rmtree(plan_lib.work_dir(study))
  assert study_cli.main(["--config", study["path"], "--report-only",
                         "--output", output]) == 0
  assert _report(study, output) == before
  ran = len(fake.ran)
  runner.run_all(study, log=lambda line: None)
  assert len(fake.ran) == ran  # Nothing left to run.


def test_a_pretraining_whose_model_is_gone_runs_again_if_it_is_needed(
    tmp_path, fake, capsys):
  study = _study(tmp_path)
  runs = {r.id: r for r in runner.run_all(study, log=lambda line: None)}
  finetune = runs["finetune sst_fixture from scratch-electra-s1"]
  shutil.rmtree(archive.run_dir(study, finetune))  # Lost with the work_dir.
  shutil.rmtree(plan_lib.work_dir(study))
  capsys.readouterr()
  runner.describe(study)
  out = capsys.readouterr().out
  assert ("rerun: its model is gone and finetune sst_fixture from "
          "scratch-electra-s1 needs it") in out
  assert "9 run(s) restored from" not in out and "8 run(s) restored" in out
  assert "1 to run again" in out and "2 to do" in out
  fake.ran = []
  runner.run_all(study, log=lambda line: None)
  # The export read it too, but the export is archived and what reads the
  # export is done: only the fine-tuning needs the model.
  assert fake.ran == [("run_pretraining.py", "scratch-electra-s1"),
                      ("run_finetuning.py", "scratch-electra-s1")]


def test_a_lost_continued_chain_reruns_back_to_its_first_model(
    tmp_path, fake):
  study = _study(tmp_path)
  runs = {r.id: r for r in runner.run_all(study, log=lambda line: None)}
  finetune = runs["finetune sst_fixture from continued-electra-s1"]
  shutil.rmtree(archive.run_dir(study, finetune))
  shutil.rmtree(plan_lib.work_dir(study))
  states = runner.restore(study)
  assert {i: s for i, (s, _) in states.items() if s != "restored"} == {
      "pretrain continued/electra/seed1": "rerun",
      "export scratch-electra-s1": "rerun",
      "pretrain scratch/electra/seed1": "rerun",
      finetune.id: "todo"}
  assert states["export scratch-electra-s1"][1] == (
      "its model is gone and pretrain continued/electra/seed1 needs it")


def test_a_done_run_whose_model_is_gone_loses_its_done_file_if_needed(
    tmp_path, fake):
  study = _study(tmp_path)
  runs = {r.id: r for r in runner.run_all(study, log=lambda line: None)}
  pretrain = runs["pretrain scratch/hp_loss_focal/seed1"]
  finetune = runs["finetune sst_fixture from scratch-hp_loss_focal-s1"]
  os.remove(finetune.done_file)
  shutil.rmtree(archive.run_dir(study, finetune))
  shutil.rmtree(os.path.join(os.path.dirname(os.path.dirname(
      pretrain.done_file)), "checkpoints"))
  assert runner.restore(study)[pretrain.id][0] == "rerun"
  assert not runner.is_done(pretrain)  # So the runner runs it again.


def test_a_run_archived_with_other_settings_is_not_restored(tmp_path, fake):
  study = _study(tmp_path)
  runner.run_all(study, log=lambda line: None)
  shutil.rmtree(plan_lib.work_dir(study))
  fine = json.loads(open(study["path"]).read())["finetuning"]
  fine["hparams"]["learning_rate"] = 2e-3
  states = runner.restore(_study(tmp_path, finetuning=fine))
  assert states["finetune sst_fixture from random_init"] == (
      "todo", "archived with other settings")
  assert states["pretrain scratch/hp_loss_focal/seed1"][0] == "rerun"


def test_runs_done_before_the_archive_was_set_are_archived_on_start(
    tmp_path, fake):
  study = config_lib.load_study(_config(tmp_path))
  runs = runner.run_all(study, log=lambda line: None)
  assert not (tmp_path / "archive").exists()
  study = _study(tmp_path)
  runner.run_all(study, log=lambda line: None)
  assert len(fake.ran) == 10
  timings = runner.load_timings(study)
  for run in runs:
    manifest, why = archive.load(study, run)
    assert why is None and manifest["seconds"] == timings[run.id]


def test_what_reads_a_model_follows_it_in_the_plan(tmp_path):
  runs = plan_lib.plan(_study(tmp_path))
  ids = [r.id for r in runs]
  for i, run in enumerate(runs):
    if run.kind == "finetune" and run.needs:
      start = ids.index(run.needs[0])
      between = runs[start + 1:i]
      assert all(r.needs == run.needs for r in between), (run.id, between)


def test_an_archive_inside_the_work_dir_is_refused(tmp_path):
  with pytest.raises(UserError, match="archive .* is inside work_dir"):
    config_lib.load_study(_config(tmp_path,
                                  archive=str(tmp_path / "work" / "a")))
