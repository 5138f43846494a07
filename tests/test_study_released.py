"""study.py from a released model folder (a study config's `start`): a tiny
Hugging Face BertModel folder with its own 100-token vocab.txt, continued for
4 steps on a fixture task's text as ELECTRA (1 seed), then the released
folder, the continued model and random initialisation each fine-tuned with
2 seeds; the plan (with an HP variant too), the vocabulary, RESULTS.md and
summary.json, and bad configs."""

import collections
import json
import os
import re
import subprocess
import sys

import pytest

import study as study_cli
from studies import comparisons
from studies import config as config_lib
from studies import plan as plan_lib
from studies import runner
from tests.paths import FIXTURES
from tests.paths import REPO
from util.errors import UserError

TASK_DIR = os.path.join(FIXTURES, "finetune", "finetuning_data", "sst")
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB_SIZE = 100
BERT = dict(vocab_size=VOCAB_SIZE, hidden_size=32, num_hidden_layers=2,
            num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=64, type_vocab_size=2, hidden_act="gelu")


def _write_vocab(path):
  """The special tokens, the fixture task's most frequent tokens, then
  filler: VOCAB_SIZE lines."""
  text = ""
  for split in ("train", "dev"):
    with open(os.path.join(TASK_DIR, split + ".tsv")) as f:
      text += f.read().lower()
  counts = collections.Counter(re.findall(r"[a-z]+|[.,!?']", text))
  words = [w for w, _ in counts.most_common(VOCAB_SIZE - len(SPECIAL))]
  words += ["w%d" % i for i in range(VOCAB_SIZE - len(SPECIAL) - len(words))]
  with open(path, "w") as f:
    f.write("\n".join(SPECIAL + words) + "\n")


@pytest.fixture(scope="module")
def released_folder(tmp_path_factory):
  """A random tiny BertModel saved by transformers, with a vocab.txt.
  transformers runs in its own process (tests/hf_reference.py): torch and
  TensorFlow clash in one."""
  tmp = tmp_path_factory.mktemp("released")
  folder = tmp / "tiny-bert"
  jobs = tmp / "jobs.json"
  jobs.write_text(json.dumps([dict(op="make", **{"class": "BertModel"},
                                   config=BERT, folder=str(folder), seed=0)]))
  subprocess.run([sys.executable, os.path.join(REPO, "tests",
                                               "hf_reference.py"), str(jobs)],
                 check=True, timeout=600,
                 env=dict(os.environ, CUDA_VISIBLE_DEVICES="",
                          OMP_NUM_THREADS="2"))
  _write_vocab(folder / "vocab.txt")
  return str(folder)


def _study(folder, tmp_path, change=None):
  """Writes a tiny study config starting from `folder`; returns its path.
  `change(config)` edits the config first."""
  config = dict(
      name="released_test", work_dir=str(tmp_path / "work"),
      results=str(tmp_path / "results" / "released_test"),
      start=dict(name="released", source=folder),
      data=dict(max_seq_length=64, heldout_fraction=0.05, num_shards=2),
      pretraining=dict(
          hparams=dict(num_train_steps=4, num_warmup_steps=1,
                       train_batch_size=4, eval_batch_size=4,
                       num_eval_steps=1, iterations_per_loop=2, log_every=2,
                       save_checkpoints_steps=4, learning_rate=1e-3),
          regimes={"continued": {"init_from": "released",
                                 "corpus_task": "sst_fixture"}},
          variants={"electra": {"sampling": "mlm", "focal_gamma": 0.0},
                    "hp_loss_focal": {"sampling": "hp_loss",
                                      "focal_gamma": 1.0}},
          seeds=[1]),
      finetuning=dict(
          hparams=dict(max_seq_length=32, train_batch_size=8,
                       eval_batch_size=8, num_train_epochs=1.0,
                       learning_rate=1e-3, log_every=4),
          seeds=[1, 2],
          tasks=[dict(name="sst_fixture", type="classification",
                      source=TASK_DIR, text_column="sentence",
                      label_column="label")]))
  if change:
    change(config)
  path = tmp_path / "study.json"
  path.write_text(json.dumps(config))
  return str(path)


def _hparams(run):
  return json.loads(run.argv[run.argv.index("--hparams") + 1])


def test_the_plan_fine_tunes_the_folder_and_loads_it_without_an_export(
    released_folder, tmp_path):
  study = config_lib.load_study(_study(released_folder, tmp_path))
  config_lib.check_hparams(study)
  runs = plan_lib.plan(study)
  assert not [r for r in runs if r.kind == "export"]
  # The reference points first: they need no pre-training.
  assert [r.id for r in runs[:2]] == ["finetune sst_fixture from released",
                                      "finetune sst_fixture from random_init"]
  by_id = {r.id: r for r in runs}
  assert len(runs) == 2 + 2 + 2  # Two references, 2 pre-trainings, 2 more.
  released = _hparams(by_id["finetune sst_fixture from released"])
  assert released["init_checkpoint"] == released_folder
  assert released["num_trials"] == 2 and "model_hparam_overrides" not in (
      released)  # run_finetuning.py takes the folder's sizes itself.
  pretrain = by_id["pretrain continued/electra/seed1"]
  assert _hparams(pretrain)["init_checkpoint"] == released_folder
  assert pretrain.needs == ()
  # Random initialisation has the folder's shape.
  shape = dict(vocab_size=VOCAB_SIZE, embedding_size=32,
               model_hparam_overrides=dict(
                   hidden_size=32, num_hidden_layers=2,
                   num_attention_heads=2, intermediate_size=64,
                   max_position_embeddings=64, type_vocab_size=2,
                   hidden_act="gelu_exact"))
  random_init = _hparams(by_id["finetune sst_fixture from random_init"])
  assert random_init["init_checkpoint"] == "none"
  assert {k: random_init[k] for k in shape} == shape
  continued = by_id["finetune sst_fixture from continued-electra-s1"]
  assert continued.needs == (pretrain.id,)
  # run_finetuning.py takes the continued model's sizes from its config.json.
  assert not set(shape) & set(_hparams(continued))


def _fewer_finetunings(config):
  config["pretraining"]["seeds"] = [1, 2]
  config["finetuning"]["seeds"] = [1, 2, 3]
  config["finetuning"]["trials_per_pretrained_model"] = 1
  config["finetuning"]["tasks"].append(dict(
      config["finetuning"]["tasks"][0], name="sst_full",
      rows=["released", "continued/electra"]))


def test_a_study_can_fine_tune_fewer_seeds_and_rows(released_folder,
                                                     tmp_path):
  study = config_lib.load_study(_study(released_folder, tmp_path,
                                       _fewer_finetunings))
  config_lib.check_hparams(study)
  finetunings = {r.id: _hparams(r) for r in plan_lib.plan(study)
                 if r.kind == "finetune"}
  # The reference rows keep every seed; a pre-trained model takes the first.
  trials = {i: (h["seed"], h["num_trials"]) for i, h in finetunings.items()}
  assert trials["finetune sst_fixture from released"] == (1, 3)
  assert trials["finetune sst_fixture from random_init"] == (1, 3)
  assert trials["finetune sst_fixture from continued-electra-s2"] == (1, 1)
  assert trials["finetune sst_fixture from continued-hp_loss_focal-s1"] == (
      1, 1)
  # The reference points of every task first: they need no pre-training.
  assert [r.id for r in plan_lib.plan(study)[:3]] == [
      "finetune sst_fixture from released",
      "finetune sst_fixture from random_init",
      "finetune sst_full from released"]
  # A one-trial fine-tuning takes a third of a three-trial run's time.
  runs = plan_lib.plan(study)
  one = next(r for r in runs
             if r.id == "finetune sst_fixture from continued-electra-s1")
  assert runner.estimate_seconds(
      one, runs, {"finetune sst_fixture from released": 300.0}) == 100.0
  # sst_full only for its rows: the start and both ELECTRA seeds.
  assert sorted(i for i in finetunings if "sst_full" in i) == [
      "finetune sst_full from continued-electra-s1",
      "finetune sst_full from continued-electra-s2",
      "finetune sst_full from released"]


def test_a_relative_work_dir_may_leave_the_repository():
  assert plan_lib.repo_path("../runs/study_x") == os.path.join(
      os.path.dirname(REPO), "runs", "study_x")
  assert plan_lib.repo_path("/abs/x/../y") == "/abs/y"


@pytest.fixture(scope="module")
def finished(released_folder, tmp_path_factory):
  tmp = tmp_path_factory.mktemp("study")
  # ELECTRA alone, to keep it short: the comparisons of an HP row are
  # tested on made-up scores below.
  config = _study(released_folder, tmp,
                  lambda c: c["pretraining"]["variants"].pop("hp_loss_focal"))
  output = str(tmp / "docs" / "RESULTS.md")
  assert study_cli.main(["--config", config, "--output", output]) == 0
  return config, output, tmp


@pytest.mark.slow
def test_the_study_takes_the_folders_vocabulary(released_folder, finished):
  _, _, tmp = finished
  data = tmp / "work" / "data"
  with open(os.path.join(released_folder, "vocab.txt")) as f:
    assert (data / "vocab.txt").read_text() == f.read()
  # Only the regime's records: no corpus_dir, no records of one.
  assert not (data / "pretrain_tfrecords").exists()
  manifest = json.loads((data / "regimes" / "continued" /
                         "pretrain_tfrecords" / "manifest.json").read_text())
  assert manifest["settings"]["vocab_file"] == str(data / "vocab.txt")
  assert manifest["settings"]["vocab_size"] == VOCAB_SIZE
  log = (tmp / "work" / "logs" /
         "pretrain_continued_electra_seed1.log").read_text()
  assert released_folder in log


@pytest.mark.slow
def test_the_report_compares_with_the_released_row(finished, capsys):
  config, output, tmp = finished
  text = open(output).read()
  assert "| initialisation | accuracy | vs released | vs random init | " \
         "vs electra |" in text
  for row in ("| released |", "| continued/electra |", "| random_init |",
              "| continued / electra |"):
    assert row in text, row
  figures = tmp / "results" / "released_test"
  for name in ("gen_max_prob.png", "curves.png", "hardness.png"):
    assert (figures / name).stat().st_size > 1000, name
  summary = json.loads((figures / "summary.json").read_text())
  fields = {"task", "row", "baseline", "diff", "se", "p", "n_row",
            "n_baseline"}
  assert all(fields <= set(entry) for entry in summary), summary
  pairs = {(e["row"], e["baseline"]): e for e in summary}
  assert set(pairs) == {
      ("continued/electra", "released"), ("continued/electra", "random_init"),
      ("random_init", "released")}
  # A pre-trained row's unit is each model's mean (1 model here); the
  # released folder's and random initialisation's are fine-tuning seeds.
  electra = pairs[("continued/electra", "released")]
  assert (electra["n_row"], electra["n_baseline"]) == (1, 2)
  assert electra["p"] is None and isinstance(electra["diff"], float)
  random_init = pairs[("random_init", "released")]
  assert (random_init["n_row"], random_init["n_baseline"]) == (2, 2)
  assert random_init["task"] == "sst_fixture"
  # Done: a second call runs nothing; --dry-run lists every run as done.
  capsys.readouterr()
  assert study_cli.main(["--config", config, "--dry-run"]) == 0
  out = capsys.readouterr().out
  assert "4 runs, 0 to do" in out and "finetune sst_fixture from released" in (
      out) and "export" not in out


def test_comparisons_take_each_rows_own_units(released_folder, tmp_path):
  study = config_lib.load_study(_study(released_folder, tmp_path))
  rows = {"released": {"released": [80.0, 82.0, 81.0]},
          "continued/electra": {"m1": [84.0, 86.0], "m2": [88.0, 90.0]},
          "continued/hp_loss_focal": {"h1": [86.0, 86.0], "h2": [92.0, 92.0]},
          plan_lib.RANDOM_INIT: {plan_lib.RANDOM_INIT: [50.0, 52.0]}}
  data = dict(downstream={"t": rows}, metrics={"t": "accuracy"})
  pairs = {(e["row"], e["baseline"]): e
           for e in comparisons.summary(study, data)}
  # Model means 85 and 89 against the 3 released seeds (mean 81).
  electra = pairs[("continued/electra", "released")]
  assert electra["diff"] == pytest.approx(6.0)
  assert (electra["n_row"], electra["n_baseline"]) == (2, 3)
  assert electra["se"] == pytest.approx((8.0 / 2 + 1.0 / 3) ** 0.5)
  assert 0 < electra["p"] < 1 and electra["metric"] == "accuracy"
  # An HP row against ELECTRA of its regime: model means 86, 92 vs 85, 89.
  hp = pairs[("continued/hp_loss_focal", "continued/electra")]
  assert hp["diff"] == pytest.approx(2.0)
  assert (hp["n_row"], hp["n_baseline"]) == (2, 2)
  assert pairs[("random_init", "released")]["diff"] == pytest.approx(-30.0)
  assert set(pairs) == {
      (row, base) for row in ("continued/electra", "continued/hp_loss_focal")
      for base in ("released", plan_lib.RANDOM_INIT)} | {
          ("continued/hp_loss_focal", "continued/electra"),
          (plan_lib.RANDOM_INIT, "released")}


def _drop(*keys):
  def change(config):
    node = config
    for key in keys[:-1]:
      node = node[key]
    del node[keys[-1]]
  return change


@pytest.mark.parametrize("change,message", [
    (_drop("start", "source"), r"start: key 'source' is required"),
    (lambda c: c["start"].update(source=TASK_DIR),
     r"start.source: .* is not a Hugging Face model folder"),
    (lambda c: c["start"].update(name="random_init"),
     r"start: name 'random_init' must be a model name"),
    (lambda c: c["data"].update(vocab_size=100),
     r"data.vocab_size: the study's vocabulary is the start's vocab.txt"),
    (_drop("pretraining", "regimes", "continued", "corpus_task"),
     r"data: key 'corpus_dir' is required: regime 'continued' has no "
     r"corpus_task"),
    (lambda c: c["pretraining"]["regimes"]["continued"].update(
        init_from="bert"), r"regimes.continued: init_from 'bert' is not a "
     r"model of an earlier regime or the start \(released\)"),
    (lambda c: c["pretraining"].update(seeds=[]),
     r"pretraining.seeds must be a non-empty list of integers, got \[\]"),
    (lambda c: c["finetuning"].update(trials_per_pretrained_model=3),
     r"trials_per_pretrained_model must be an integer from 1 to "
     r"len\(finetuning.seeds\) = 2, got 3"),
    (lambda c: c["finetuning"]["tasks"][0].update(rows=["continued/bert"]),
     r"tasks\[0\].rows: 'continued/bert' is not a row of the study "
     r"\(released, continued/electra, continued/hp_loss_focal, "
     r"random_init\)"),
])
def test_bad_starts_name_the_key(released_folder, tmp_path, change, message):
  with pytest.raises(UserError, match=message):
    config_lib.load_study(_study(released_folder, tmp_path, change))


def test_hparams_are_checked_with_the_folders_sizes(released_folder,
                                                    tmp_path):
  # 128 tokens do not fit the folder's 64 positions: refused before any run.
  study = config_lib.load_study(_study(
      released_folder, tmp_path,
      lambda c: c["finetuning"]["hparams"].update(max_seq_length=128)))
  with pytest.raises(UserError, match="run 'finetune sst_fixture from "
                     "released': max_seq_length 128 exceeds "
                     "max_position_embeddings 64"):
    config_lib.check_hparams(study)
  assert not (tmp_path / "work").exists()


def test_report_only_writes_the_report_of_what_finished(released_folder,
                                                       tmp_path):
  config = _study(released_folder, tmp_path)
  output = str(tmp_path / "docs" / "RESULTS.md")
  assert study_cli.main(["--config", config, "--report-only", "--output",
                         output]) == 0
  text = open(output).read()
  assert "wall time of the 0 runs done (of 6)" in text
  assert not (tmp_path / "work" / "data" / "models").exists()  # Ran none.
  summary = tmp_path / "results" / "released_test" / "summary.json"
  assert json.loads(summary.read_text()) == []
