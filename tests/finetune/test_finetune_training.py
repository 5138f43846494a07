"""End-to-end fine-tuning of the tiny model on the fixtures."""

import collections
import json
import os
import re
import string

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import configure
from finetune import runner
from finetune import task_builder
from interop import checkpoints
from tests import finetune_fixtures as ff
from tests import paths
from tests import pretrain_fixtures as pf
from util.errors import UserError


@pytest.fixture(scope="module")
def sst_run(tmp_path_factory):
  """Two trials of 10 epochs (40 steps) on the toy sentiment fixture."""
  model_dir = tmp_path_factory.mktemp("sst_model")
  config = ff.tiny_config(model_dir=model_dir, task_names=["sst"],
                          num_trials=2, num_train_epochs=10.0,
                          write_test_outputs=True)
  return model_dir, config, runner.run_finetuning(config)["sst"]


def test_training_loss_falls(sst_run):
  _, _, record = sst_run
  for trial in record["trials"]:
    losses = [loss for _, loss in trial["losses"]]
    assert losses[0] > 0.5  # about log 2 at the start
    assert np.mean(losses[-2:]) < 0.5 * losses[0]
  assert record["summary"]["final"]["dev"]["accuracy"]["mean"] >= 75.0


def test_num_trials_reports_each_trial_mean_and_std(sst_run):
  model_dir, config, record = sst_run
  assert record["num_trials"] == 2 and record["primary_metric"] == "accuracy"
  per_trial = [t["final"]["dev"]["accuracy"] for t in record["trials"]]
  stats = record["summary"]["final"]["dev"]["accuracy"]
  assert stats["trials"] == per_trial
  assert stats["mean"] == pytest.approx(np.mean(per_trial))
  assert stats["std"] == pytest.approx(np.std(per_trial, ddof=1))
  assert [t["seed"] for t in record["trials"]] == [config.seed,
                                                   config.seed + 1]
  results_dir = os.path.join(str(model_dir), "results")
  with open(os.path.join(results_dir, "sst_results.json")) as f:
    assert json.load(f)["summary"] == json.loads(json.dumps(
        record["summary"]))
  text = open(os.path.join(results_dir, "sst_results.txt")).read()
  assert "task sst: 2 trial(s)" in text
  assert "dev accuracy: %.2f +- %.2f" % (stats["mean"], stats["std"]) in text
  assert "trial 1 (seed 42)" in text and "trial 2 (seed 43)" in text


def test_best_checkpoint_and_test_outputs(sst_run):
  model_dir, _, record = sst_run
  for k, trial in enumerate(record["trials"], 1):
    trial_dir = os.path.join(str(model_dir), "finetuning_models", "sst",
                             "trial_%d" % k)
    best = json.load(open(os.path.join(trial_dir, "best.json")))
    assert best["step"] == trial["best"]["step"]
    primary = [h["results"]["dev"]["accuracy"] for h in trial["history"]]
    assert best["results"]["dev"]["accuracy"] == max(primary)
    assert tf.train.latest_checkpoint(os.path.join(trial_dir, "best"))
    path = os.path.join(str(model_dir), "results", "test_predictions",
                        "trial_%d" % k, "SST-2.tsv")
    lines = open(path).read().splitlines()
    assert lines[0] == "index\tprediction"
    assert [line.split("\t")[0] for line in lines[1:]] == ["0", "1", "2"]
    assert {line.split("\t")[1] for line in lines[1:]} <= {"0", "1"}


def test_eval_only_reloads_the_kept_models(sst_run):
  model_dir, config, record = sst_run
  again = configure.FinetuningConfig(
      "tiny", ff.FIXTURE_DIR, **ff.tiny_hparams(
          model_dir, task_names=["sst"], num_trials=2, do_train=False))
  evaluated = runner.run_finetuning(again)["sst"]
  for before, after in zip(record["trials"], evaluated["trials"]):
    assert after["final"]["dev"]["accuracy"] == (
        before["best"]["results"]["dev"]["accuracy"])


def _save_pretrained(model_dir, **model_overrides):
  """A pre-training-style model dir: config.json and a discriminator
  checkpoint at the object path pre-training writes."""
  hparams = dict(ff.TINY_MODEL, **model_overrides)
  pre = configure.PretrainingConfig(
      "tiny", str(model_dir), vocab_size=ff.VOCAB_SIZE, max_seq_length=32,
      model_dir=str(model_dir), model_hparam_overrides=hparams,
      embedding_size=32)
  pre.save()
  encoder = pf.build_discriminator_encoder(pre)
  encoder({k: tf.zeros([1, 8], tf.int32)
           for k in ("input_ids", "input_mask", "segment_ids")})
  # Shifted, so no fresh draw (under any seed) equals a pre-trained weight.
  for variable in encoder.weights:
    variable.assign_add(tf.fill(tf.shape(variable), 0.5))
  checkpoints.discriminator_checkpoint(encoder).save(
      os.path.join(checkpoints.pretrained_checkpoint_dir(str(model_dir)),
                   "ckpt"))
  return encoder


def test_starts_from_the_pretrained_discriminator(tmp_path):
  pretrained = _save_pretrained(tmp_path / "m")
  config = ff.tiny_config(model_dir=tmp_path / "m", init_checkpoint=None)
  prefix = runner.resolve_init_checkpoint(config)
  assert prefix.startswith(str(tmp_path / "m" / "checkpoints" / "ckpt"))
  tokenizer = ff.build_tokenizer(config)
  task = ff.get_task(config, "sst", tokenizer)
  trainer = ff.trainer(config, task, tf.distribute.get_strategy(),
                       str(tmp_path / "trial"), seed=1, log_prefix="t")
  trainer.build(task.load("dev").features)
  trainer.init_encoder(prefix)
  for mine, theirs in zip(trainer.model.encoder.weights, pretrained.weights):
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
  # The start's token states are measured beside a fresh encoder's.
  geometry = trainer.start_geometry
  assert 1.0 < geometry["effective_rank"] and 1.0 < geometry[
      "fresh_effective_rank"]
  assert -1.0 <= geometry["cosine"] <= 1.0
  # A model directory (with config.json and checkpoints/) works too.
  assert runner.resolve_init_checkpoint(ff.tiny_config(
      init_checkpoint=str(tmp_path / "m"))) == prefix


def test_reinit_top_layers_replaces_the_top_of_the_pretrained_encoder(
    tmp_path):
  pretrained = _save_pretrained(tmp_path / "m")
  config = ff.tiny_config(model_dir=tmp_path / "m", init_checkpoint=None,
                          reinit_top_layers=1)
  tokenizer = ff.build_tokenizer(config)
  task = ff.get_task(config, "sst", tokenizer)
  trainer = ff.trainer(config, task, tf.distribute.get_strategy(),
                       str(tmp_path / "trial"), seed=1, log_prefix="t")
  trainer.build(task.load("dev").features)
  trainer.init_encoder(runner.resolve_init_checkpoint(config))
  top = {id(v) for v in trainer.model.encoder.transformer_layers[-1].weights}
  kept = changed = 0
  for mine, theirs in zip(trainer.model.encoder.weights, pretrained.weights):
    same = np.array_equal(mine.numpy(), theirs.numpy())
    if id(mine) in top:
      changed += not same and "kernel" in mine.name
    else:
      assert same, mine.name
      kept += 1
  assert kept and changed


def test_pretrained_architecture_mismatch_is_explained(tmp_path):
  _save_pretrained(tmp_path / "m", hidden_size=64, intermediate_size=128)
  config = ff.tiny_config(model_dir=tmp_path / "m", init_checkpoint=None)
  with pytest.raises(UserError) as e:
    runner.resolve_init_checkpoint(config)
  message = str(e.value)
  assert "hidden_size, intermediate_size" in message
  hint = json.loads(message[message.index("{"):])
  assert hint["model_hparam_overrides"]["hidden_size"] == 64


def _normalize(text):
  """The official SQuAD answer normalisation, written out again."""
  text = "".join(c for c in text.lower() if c not in set(string.punctuation))
  return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def _f1(gold, pred):
  gold, pred = _normalize(gold).split(), _normalize(pred).split()
  if not gold or not pred:
    return float(gold == pred)
  same = sum((collections.Counter(gold) & collections.Counter(pred)).values())
  if not same:
    return 0.0
  p, r = same / len(pred), same / len(gold)
  return 2 * p * r / (p + r)


def test_squad_v2_and_tagging_end_to_end(tmp_path):
  config = ff.tiny_config(model_dir=tmp_path, task_names=["squadv2", "ner"],
                          num_train_epochs=3.0, train_batch_size=4,
                          eval_batch_size=4, write_test_outputs=True)
  records = runner.run_finetuning(config)
  squad = records["squadv2"]["trials"][0]
  trial_dir = tmp_path / "finetuning_models" / "squadv2" / "trial_1"
  predictions = json.load(open(str(trial_dir / "dev_predictions.json")))
  na_probs = json.load(open(str(trial_dir / "dev_na_probs.json")))
  assert set(predictions) == set(na_probs) == {"d1", "d3"}
  for qid in predictions:
    assert (predictions[qid] == "") == (na_probs[qid] > 0.5)
  dataset = json.load(open(os.path.join(
      ff.FIXTURE_DIR, "finetuning_data", "squadv2", "dev.json")))["data"]
  exact, f1 = [], []
  for qa in dataset[0]["paragraphs"][0]["qas"]:
    golds = [a["text"] for a in qa["answers"]] or [""]
    pred = predictions[qa["id"]]
    exact.append(max(float(_normalize(g) == _normalize(pred)) for g in golds))
    f1.append(max(_f1(g, pred) for g in golds))
  reported = squad["best"]["results"]["dev"]
  assert reported["exact"] == pytest.approx(100 * np.mean(exact))
  assert reported["f1"] == pytest.approx(100 * np.mean(f1))
  for name in ("best_exact", "best_f1", "HasAns_f1", "NoAns_f1"):
    assert name in reported
  ner = records["ner"]["trials"][0]["final"]["dev"]
  assert set(ner) >= {"precision", "recall", "f1", "accuracy"}
  lines = open(str(tmp_path / "results" / "test_predictions" / "trial_1" /
                   "ner_test.txt")).read().splitlines()
  assert [line.split()[0] for line in lines] == [
      "Smith", "sailed", "to", "Boston", "."]
  assert all(line.split()[1] in task_builder.TASKS["ner"].label_list
             for line in lines)
  assert os.path.isfile(str(tmp_path / "results" / "test_predictions" /
                            "trial_1" / "squadv2_test_predictions.json"))


def test_float16_loss_scaling_trains(tmp_path):
  config = ff.tiny_config(model_dir=tmp_path, task_names=["sst"],
                          mixed_precision="float16", num_train_epochs=2.0,
                          do_eval=False)
  try:
    record = runner.run_finetuning(config)["sst"]
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")
  losses = [loss for _, loss in record["trials"][0]["losses"]]
  assert losses and all(np.isfinite(losses))


def test_mirrored_on_two_cpus_matches_one_device(tmp_path):
  """The shared replica step under MirroredStrategy (2 logical CPUs) gives
  the one-device fine-tuning, weight for weight."""
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  hparams = dict(task_names=["sst"], do_eval=False, num_train_epochs=8.0)
  hparams["model_hparam_overrides"] = dict(
      ff.TINY_MODEL, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  root = paths.REPO
  proc = subprocess.run(
      [sys.executable, "-m", "tests.mirrored_finetune_check",
       str(tmp_path), json.dumps(hparams)], cwd=root, capture_output=True,
      text=True, timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert proc.returncode == 0, proc.stderr[-3000:]
  values = np.load(str(tmp_path / "weights.npz"))
  names = sorted(k.split("/", 1)[1] for k in values.files
                 if k.startswith("default/"))
  assert len(names) > 20 and "losses" in names
  for name in names:
    np.testing.assert_allclose(values["mirrored/" + name],
                               values["default/" + name], rtol=0, atol=1e-4,
                               err_msg=name)
  # Training moved the weights (the comparison is not of two untouched inits).
  assert len(values["default/losses"]) >= 2
  assert values["default/losses"][-1] < values["default/losses"][0]
