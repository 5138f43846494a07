"""End-to-end tests of run_pretraining.py on a tiny data directory.

Every run is a subprocess (run_pretraining.py, or tests/runner_harness.py
for a kill, a NaN or a weight dump; tests/mirrored_step_check.py for the
2-replica comparison), so TensorFlow's process-wide state (logical CPU
devices, TF_CONFIG, seeds) is fresh each time. Independent runs go in
parallel; runs are shared between tests where one run answers several
questions.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from pretrain import eval_metrics
from tests import pretrain_fixtures
from tests import paths

REPO = paths.REPO
TIMEOUT = 600

# Resume test: HP-Loss (the most state: sampling head, estimator) with eval.
RESUME_HPARAMS = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=8,
                      sampling="hp_loss", seed=7)


class Run(object):
  """A finished subprocess: returncode, stdout, stderr."""

  def __init__(self, args, proc, stdout, stderr):
    self.args, self.returncode = args, proc.returncode
    self.stdout, self.stderr = stdout, stderr

  def __repr__(self):
    return "Run(%s) rc=%s\n--- stdout\n%s\n--- stderr\n%s" % (
        " ".join(self.args), self.returncode, self.stdout[-3000:],
        self.stderr[-3000:])


def _start(args, **env):
  environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                     TF_ENABLE_ONEDNN_OPTS="0")
  environment.pop("TF_CONFIG", None)
  environment.update(env)
  proc = subprocess.Popen([sys.executable] + args, cwd=REPO, env=environment,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
  proc.args_list = args
  return proc


def _finish(*procs):
  """Waits for all `procs`; kills them all if one runs out of time."""
  runs = []
  try:
    for proc in procs:
      stdout, stderr = proc.communicate(timeout=TIMEOUT)
      runs.append(Run(proc.args_list, proc, stdout, stderr))
  finally:
    for proc in procs:
      if proc.poll() is None:
        proc.kill()
        proc.communicate()
  return runs if len(runs) > 1 else runs[0]


def _run_args(data_dir, model_name, hparams):
  return ["--data-dir", str(data_dir), "--model-name", model_name,
          "--hparams", json.dumps(hparams)]


def _pretrain(data_dir, model_name, hparams, **env):
  return _start(["run_pretraining.py"] + _run_args(data_dir, model_name,
                                                   hparams), **env)


def _harness(flags, data_dir, model_name, hparams, **env):
  return _start(["-m", "tests.runner_harness"] + flags +
                ["--"] + _run_args(data_dir, model_name, hparams), **env)


def _trainer(config, log):
  """A PretrainingTrainer in this process, set up as run_pretraining.py does."""
  from util import process_setup  # pylint: disable=g-import-not-at-top
  process_setup.set_up_process(config.mixed_precision, config.seed,
                               checkpointed_dropout=True)
  return pretrain_fixtures.trainer(config, log=log)


def _checkpoint_dir(data_dir, model_name):
  return os.path.join(str(data_dir), "models", model_name, "checkpoints")


def _tensors(checkpoint):
  """{key: array} of a checkpoint, without the iterator and object graph."""
  reader = tf.train.load_checkpoint(checkpoint)
  dtypes = reader.get_variable_to_dtype_map()
  return {k: reader.get_tensor(k) for k, dtype in dtypes.items()
          if dtype not in (tf.variant, tf.string)}


def _real_tokens(shard, num_examples):
  mask = [tf.train.Example.FromString(r.numpy()).features.feature[
      "input_mask"].int64_list.value
          for r in tf.data.TFRecordDataset(shard).take(num_examples)]
  return int(np.sum(mask))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
  return pretrain_fixtures.make_data_dir(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def resume_runs(data_dir):
  """Run A: 8 steps straight, then eval. Run B: the same training SIGKILLed
  right after its step-4 checkpoint (B1), re-run (B2), re-run again (B3)."""
  straight = _pretrain(data_dir, "straight", dict(RESUME_HPARAMS,
                                                  do_eval=True))
  killed = _harness(["--kill-after-checkpoint"], data_dir, "resumed",
                    RESUME_HPARAMS)
  runs = dict(zip(("straight", "killed"), _finish(straight, killed)))
  runs["resumed"] = _finish(_pretrain(data_dir, "resumed", RESUME_HPARAMS))
  runs["rerun"] = _finish(_pretrain(data_dir, "resumed", RESUME_HPARAMS))
  return runs


def test_resume_after_kill_gives_the_uninterrupted_parameters(data_dir,
                                                              resume_runs):
  killed, resumed = resume_runs["killed"], resume_runs["resumed"]
  assert killed.returncode == -9, killed
  assert tf.train.latest_checkpoint(_checkpoint_dir(
      data_dir, "resumed")).endswith("ckpt-8"), resumed
  assert resumed.returncode == 0, resumed
  assert "(step 4)" in resumed.stdout and "steps 4 -> 8" in resumed.stdout
  assert resume_runs["straight"].returncode == 0, resume_runs["straight"]

  straight = _tensors(os.path.join(_checkpoint_dir(data_dir, "straight"),
                                   "ckpt-8"))
  resumed = _tensors(os.path.join(_checkpoint_dir(data_dir, "resumed"),
                                  "ckpt-8"))
  assert sorted(straight) == sorted(resumed)
  # One device: the input iterator's position is in the checkpoint.
  assert "iterator/.ATTRIBUTES/ITERATOR_STATE" in tf.train.load_checkpoint(
      os.path.join(_checkpoint_dir(data_dir, "resumed"),
                   "ckpt-4")).get_variable_to_shape_map()
  assert straight["step/.ATTRIBUTES/VARIABLE_VALUE"] == 8
  # Model, optimizer slots and iterations, dropout RNG states.
  assert any(k.startswith("dropout_rng/") for k in straight)
  for key in straight:
    np.testing.assert_allclose(resumed[key], straight[key], rtol=0,
                               atol=1e-6, err_msg=key)


def test_rerun_of_finished_run_says_so_and_exits_0(data_dir, resume_runs):
  rerun = resume_runs["rerun"]
  assert rerun.returncode == 0, rerun
  assert "Training already finished: step 8 of 8" in rerun.stdout, rerun
  assert "Saved checkpoint" not in rerun.stdout
  assert sorted(os.listdir(_checkpoint_dir(data_dir, "resumed"))) == [
      "checkpoint", "ckpt-4.data-00000-of-00001", "ckpt-4.index",
      "ckpt-8.data-00000-of-00001", "ckpt-8.index"]


def test_eval_writes_every_metric(data_dir, resume_runs):
  assert resume_runs["straight"].returncode == 0, resume_runs["straight"]
  results_dir = os.path.join(str(data_dir), "models", "straight", "results")
  with open(os.path.join(results_dir, "pretrain_eval.json")) as f:
    results = json.load(f)
  # hp_loss: all of ELECTRA's metrics, the estimator and p_G / p_S analyses
  # (D's accuracy under uniform draws is a uniform run's).
  expected = [k for k in eval_metrics.MAIN_METRICS if "_uniform_" not in k]
  missing = [k for k in expected if k not in results]
  assert not missing, results
  assert not any("_uniform_" in k for k in results), results
  # Precision is undefined (None, with a note) if D calls nothing replaced.
  undefined = [k for k in expected if results[k] is None]
  assert set(undefined) <= {"disc_precision"}, results
  assert all(isinstance(results[k], (int, float)) for k in
             expected if k not in undefined), results
  assert results["step"] == 8 and results["sampling"] == "hp_loss"
  # 2 eval batches of 8 held-out examples.
  assert results["num_tokens"] == _real_tokens(os.path.join(
      str(data_dir), "pretrain_tfrecords",
      "heldout_data.tfrecord-00000-of-00001"), 16)
  assert sum(results["gen_max_prob_histogram"]["counts"]) == (
      results["num_masked"])
  with open(os.path.join(results_dir, "pretrain_eval.txt")) as f:
    text = f.read()
  assert all(k in text for k in expected), text
  with open(os.path.join(results_dir, "gen_max_prob_histogram.png"),
            "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_plain_mlm_trains_and_evaluates(data_dir):
  """electra_objective false (BERT, G sharing D's transformer) with do_eval."""
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=2,
                 electra_objective=False, untied_generator=False,
                 generator_hidden_size=1.0, do_eval=True)
  run = _finish(_pretrain(data_dir, "plain_mlm", hparams))
  assert run.returncode == 0, run
  with open(os.path.join(str(data_dir), "models", "plain_mlm", "results",
                         "pretrain_eval.json")) as f:
    results = json.load(f)
  assert 0.0 <= results["masked_lm_accuracy"] <= 1.0, results
  assert results["masked_lm_loss"] > 0.0, results
  assert "disc_loss" not in results, results
  assert sum(results["gen_max_prob_histogram"]["counts"]) == (
      results["num_masked"])


def test_mirrored_on_two_cpus_matches_one_device(data_dir, tmp_path):
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, sampling="hp_loss")
  hparams["model_hparam_overrides"] = dict(
      hparams["model_hparam_overrides"], hidden_dropout_prob=0.0,
      attention_probs_dropout_prob=0.0)
  out = str(tmp_path / "first_step.npz")
  run = _finish(_start(["-m", "tests.mirrored_step_check",
                        str(data_dir), json.dumps(hparams), out]))
  assert run.returncode == 0, run
  values = np.load(out)
  names = sorted(k.split("/", 1)[1] for k in values.files
                 if k.startswith("default/"))
  assert names == sorted(k.split("/", 1)[1] for k in values.files
                         if k.startswith("mirrored/"))
  # The same global batch, the same losses (sampling noise is seeded per
  # example), the same summed gradients, the same first training step.
  np.testing.assert_array_equal(values["mirrored/ids"], values["default/ids"])
  grads = [k for k in names if k.startswith("grad/")]
  assert len(grads) > 50
  assert "loss/total_loss" in names and "step1/total_loss" in names
  for name in names:
    # The progress line's Pearson r comes from float32 one-pass sums, which
    # cancel badly while the estimates barely vary (first step).
    atol = 1e-2 if name == "step1/hp_estimator_pearson" else 1e-4
    np.testing.assert_allclose(values["mirrored/" + name],
                               values["default/" + name], rtol=1e-5,
                               atol=atol, err_msg=name)
  assert any(np.abs(values["default/" + k]).max() > 1e-3 for k in grads)


def _free_ports(n):
  sockets = [socket.socket() for _ in range(n)]
  for s in sockets:
    s.bind(("127.0.0.1", 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


@pytest.mark.slow
def test_multi_worker_mirrored_two_local_workers_agree(data_dir, tmp_path):
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=4,
                 strategy="multi_worker_mirrored", do_eval=True)
  workers = ["127.0.0.1:%d" % p for p in _free_ports(2)]
  procs = []
  for index in range(2):
    tf_config = json.dumps({"cluster": {"worker": workers},
                            "task": {"type": "worker", "index": index}})
    procs.append(_harness(["--dump-weights",
                           str(tmp_path / ("worker%d.npz" % index))],
                          data_dir, "mwms", hparams, TF_CONFIG=tf_config))
  chief, other = _finish(*procs)
  assert chief.returncode == 0, chief
  assert other.returncode == 0, other
  assert "on 2 replica(s)" in chief.stdout
  weights = [np.load(str(tmp_path / ("worker%d.npz" % i))) for i in range(2)]
  assert weights[0].files == weights[1].files
  assert weights[0]["last/total_loss"] > 0
  for key in weights[0].files:
    np.testing.assert_allclose(weights[1][key], weights[0][key], rtol=0,
                               atol=1e-6, err_msg=key)
  # Only the chief writes to the model directory; its checkpoint holds the
  # weights both workers ended with.
  model_dir = os.path.join(str(data_dir), "models", "mwms")
  assert sorted(os.listdir(model_dir)) == ["checkpoints", "config.json",
                                           "eval", "results", "train"]
  assert "Saved checkpoint" in chief.stdout
  assert "Saved checkpoint" not in other.stdout
  assert len(os.listdir(os.path.join(model_dir, "train"))) == 1
  saved = tf.train.load_checkpoint(os.path.join(model_dir, "checkpoints",
                                                "ckpt-4"))
  assert saved.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE") == 4
  # Evaluation covers the global batch, not only the chief's replica.
  with open(os.path.join(model_dir, "results", "pretrain_eval.json")) as f:
    results = json.load(f)
  assert results["num_tokens"] == _real_tokens(os.path.join(
      str(data_dir), "pretrain_tfrecords",
      "heldout_data.tfrecord-00000-of-00001"), 16)


def test_nan_loss_stops_with_step_and_keeps_last_good_checkpoint(data_dir):
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=8)
  run = _finish(_harness(["--nan-from-step", "4"], data_dir, "nan", hparams))
  assert run.returncode == 3, run
  assert "Traceback" not in run.stderr, run
  # The poisoned MLM loss makes total_loss (and mlm_loss) non-finite.
  assert re.search(r"non-finite [a-z_, ]*\btotal_loss\b[a-z_, ]* between "
                   r"steps 5 and 6", run.stderr), run
  checkpoint_dir = _checkpoint_dir(data_dir, "nan")
  latest = tf.train.latest_checkpoint(checkpoint_dir)
  assert latest.endswith("ckpt-4") and latest in run.stderr
  assert not [f for f in os.listdir(checkpoint_dir) if "ckpt-6" in f or
              "ckpt-8" in f]
  values = _tensors(latest)
  assert all(np.all(np.isfinite(v)) for v in values.values()
             if np.issubdtype(v.dtype, np.floating))


def _copy_data(data_dir, target):
  shutil.copytree(str(data_dir), str(target),
                  ignore=shutil.ignore_patterns("models"))
  return str(target)


BAD_INPUTS = ("missing_data_dir", "no_shards", "vocab_size", "model_shape",
              "unknown_hparam", "corrupt_shard", "garbled_shard",
              "empty_eval_glob", "eval_seq_length")


@pytest.fixture(scope="module")
def bad_input_runs(data_dir, resume_runs, tmp_path_factory):
  """{case: (Run, words stderr must contain)}, all run in parallel."""
  root = tmp_path_factory.mktemp("bad")
  base = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=4)
  shard = os.path.join("pretrain_tfrecords",
                       "pretrain_data.tfrecord-00001-of-00002")
  cases = {}
  missing = str(root / "nowhere")
  cases["missing_data_dir"] = (missing, base, [missing, "does not exist"])

  no_shards = _copy_data(data_dir, root / "no_shards")
  for name in os.listdir(os.path.join(no_shards, "pretrain_tfrecords")):
    os.remove(os.path.join(no_shards, "pretrain_tfrecords", name))
  cases["no_shards"] = (no_shards, base, [
      "no TFRecord shards match", os.path.join(
          no_shards, "pretrain_tfrecords", "pretrain_data.tfrecord*")])

  cases["vocab_size"] = (str(data_dir), dict(base, vocab_size=50),
                         ["vocab_size is 50", "45 tokens"])

  wider = dict(RESUME_HPARAMS)
  wider["model_hparam_overrides"] = dict(
      wider["model_hparam_overrides"], hidden_size=64)
  cases["model_shape"] = (str(data_dir), wider, [
      _checkpoint_dir(data_dir, "straight"), "another shape",
      "hidden_size (32 saved, 64 now)"])

  cases["unknown_hparam"] = (str(data_dir), dict(base, learning_rat=1e-3), [
      "unknown hparam 'learning_rat'", "Did you mean 'learning_rate'"])

  corrupt = _copy_data(data_dir, root / "corrupt")
  with open(os.path.join(corrupt, shard), "wb") as f:
    f.write(b"this is not a TFRecord file" * 20)
  cases["corrupt_shard"] = (corrupt, base, [os.path.join(corrupt, shard),
                                            "corrupt"])

  # First record intact (passes the cheap check), one in the middle
  # garbled: found while training. (A shard cut short is not detectable:
  # TF's reader takes a partial last record for the end of the file.)
  garbled = _copy_data(data_dir, root / "garbled")
  path = os.path.join(garbled, shard)
  with open(path, "rb") as f:
    data = bytearray(f.read())
  data[len(data) // 2:len(data) // 2 + 16] = b"\xff" * 16
  with open(path, "wb") as f:
    f.write(bytes(data))
  cases["garbled_shard"] = (garbled, base, [path, "corrupt or truncated"])

  # Checked at start-up: no training step is spent before these errors.
  nowhere = os.path.join(str(root), "no_eval", "heldout*")
  cases["empty_eval_glob"] = (str(data_dir), dict(
      base, do_eval=True, eval_tfrecords=nowhere), [
          nowhere, "eval_tfrecords", "--heldout-fraction"])
  short = _copy_data(data_dir, root / "short_eval")
  heldout = os.path.join(short, "pretrain_tfrecords",
                         "heldout_data.tfrecord-00000-of-00001")
  pretrain_fixtures.write_shard(heldout, 4, seq_len=16)
  cases["eval_seq_length"] = (short, dict(base, do_eval=True), [
      heldout, "16 values per example", "max_seq_length is 32"])

  assert sorted(cases) == sorted(BAD_INPUTS)

  def model_name(case):
    return "straight" if case == "model_shape" else case

  procs = [_pretrain(d, model_name(case), hparams)
           for case, (d, hparams, _) in cases.items()]
  return {case: (run, words) for (case, (_, _, words)), run in
          zip(cases.items(), _finish(*procs))}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_exits_2_with_one_clear_message(bad_input_runs, case):
  run, words = bad_input_runs[case]
  assert run.returncode == 2, run
  assert "Traceback" not in run.stderr, run
  assert [line.startswith("error: ") for line in
          run.stderr.splitlines()].count(True) == 1, run
  for word in words:
    assert word in run.stderr, (word, run)
  if case in ("empty_eval_glob", "eval_seq_length"):
    assert "Training steps" not in run.stdout, run
    model_dir = os.path.join(run.args[run.args.index("--data-dir") + 1],
                             "models", case)
    assert not tf.train.latest_checkpoint(os.path.join(model_dir,
                                                       "checkpoints")), run


def test_eval_every_evaluates_mid_training_and_traces_once(data_dir):
  """`eval_every` evaluates at its steps, reusing one traced eval step."""
  import run_pretraining  # pylint: disable=g-import-not-at-top
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=4,
                 eval_every=2, num_eval_steps=1)
  config = run_pretraining.build_config(str(data_dir), "eval_every", hparams)
  lines = []
  trainer = _trainer(config, log=lines.append)
  trainer.train()
  trainer.evaluate()
  evals = [line.split(":")[0] for line in lines
           if line.startswith("Eval at step")]
  assert evals == ["Eval at step 2", "Eval at step 4"], lines
  assert trainer._eval_step.experimental_get_tracing_count() == 1  # pylint: disable=protected-access
  # The curves: the history and TensorBoard's eval folder hold D on
  # temperature-1 draws and its losses on replaced and original tokens.
  results = os.path.join(config.model_dir, "results")
  with open(os.path.join(results, "pretrain_eval_history.json")) as f:
    history = json.load(f)
  assert [h["step"] for h in history] == [2, 4]
  for key in ("disc_auc_t1", "disc_loss_replaced", "disc_loss_original",
              "replacement_log10_rank_t1", "temperature"):
    assert all(isinstance(h[key], float) for h in history), key
  # One events file (one writer) holds every evaluation's point.
  [path] = tf.io.gfile.glob(os.path.join(config.model_dir, "eval",
                                         "events*"))
  tags, auc_steps = set(), []
  for event in tf.compat.v1.train.summary_iterator(path):
    tags.update(v.tag for v in event.summary.value)
    auc_steps += [event.step for v in event.summary.value
                  if v.tag == "disc_auc_t1"]
  assert {"disc_auc_t1", "disc_loss_replaced", "disc_loss_original"} <= tags
  assert auc_steps == [2, 4]


def test_init_checkpoint_warm_starts_electra_from_a_plain_mlm(data_dir):
  """A plain MLM's weights start an ELECTRA run; D's head starts fresh."""
  import run_pretraining  # pylint: disable=g-import-not-at-top
  shared = dict(pretrain_fixtures.RUNNER_HPARAMS, untied_generator=False,
                generator_hidden_size=1.0)
  source = _trainer(run_pretraining.build_config(
      str(data_dir), "warm_source", dict(shared, num_train_steps=4,
                                         electra_objective=False)),
                                          log=lambda line: None)
  source.train()
  source_dir = os.path.join(str(data_dir), "models", "warm_source")

  lines = []
  config = run_pretraining.build_config(
      str(data_dir), "warm_electra",
      dict(shared, num_train_steps=2, init_checkpoint=source_dir, seed=5))
  trainer = _trainer(config, log=lines.append)
  trainer.restore()
  warm = [line for line in lines if line.startswith("Warm start from")]
  assert len(warm) == 1 and "ckpt-4" in warm[0], lines
  assert "replaced_token_head" in warm[0].split("fresh:")[1], warm
  for mine, theirs in zip(trainer.model.discriminator.encoder.variables,
                          source.model.discriminator.encoder.variables):
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
  assert int(trainer.global_step.numpy()) == 0

  trainer.train()  # From step 0; its own checkpoints from then on.
  assert int(trainer.global_step.numpy()) == 2
  assert len([line for line in lines if line.startswith("Warm start")]) == 1
  assert tf.train.latest_checkpoint(_checkpoint_dir(data_dir,
                                                    "warm_electra"))
  lines.clear()
  _trainer(config, log=lines.append).restore()
  assert any(line.startswith("Restored") for line in lines), lines
  assert not any(line.startswith("Warm start") for line in lines), lines


def test_init_checkpoint_of_another_shape_or_missing_is_a_clear_error(
    data_dir, resume_runs):
  """Warm start from hidden 32 with hidden 48 set; from a path with
  nothing."""
  del resume_runs  # Wrote the checkpoints of model "straight".
  hparams = dict(RESUME_HPARAMS, num_train_steps=1)
  hparams["model_hparam_overrides"] = dict(hparams["model_hparam_overrides"],
                                           hidden_size=48)
  bad_shape = _pretrain(data_dir, "warm_bad_shape", dict(
      hparams, init_checkpoint=os.path.join(str(data_dir), "models",
                                            "straight")))
  missing = _pretrain(data_dir, "warm_missing", dict(
      RESUME_HPARAMS, init_checkpoint=os.path.join(str(data_dir), "nothing")))
  bad_shape, missing = _finish(bad_shape, missing)
  assert bad_shape.returncode == 2, bad_shape
  # The source's sizes are adopted: the user's other one is named.
  assert "hidden_size: 32 in the source, 48 here" in bad_shape.stderr, (
      bad_shape)
  assert missing.returncode == 2, missing
  assert "nothing" in missing.stderr and "not found" in missing.stderr, missing


def test_resume_with_another_train_batch_size_continues_the_stream(data_dir):
  """A run resumed with a smaller batch restarts its data stream at the
  example offset it had reached and trains to the end: no traceback."""
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=4)
  first = _finish(_pretrain(data_dir, "batch_change", hparams))
  assert first.returncode == 0, first
  smaller = dict(hparams, num_train_steps=8, train_batch_size=4)
  second = _finish(_pretrain(data_dir, "batch_change", smaller))
  assert second.returncode == 0, second
  assert "Traceback" not in second.stderr, second
  assert ("Resuming the data stream at example 32 (changed: train_batch_size "
          "8 -> 4)") in second.stdout, second
  assert "steps 4 -> 8" in second.stdout, second
  latest = tf.train.latest_checkpoint(_checkpoint_dir(data_dir,
                                                      "batch_change"))
  assert latest.endswith("ckpt-8")
  reader = tf.train.load_checkpoint(latest)
  assert reader.get_tensor("examples_seen/.ATTRIBUTES/VARIABLE_VALUE") == (
      4 * 8 + 4 * 4)
  # Resumed again with the same batch, the saved iterator is used as is.
  third = _finish(_pretrain(data_dir, "batch_change",
                            dict(smaller, num_train_steps=10)))
  assert third.returncode == 0, third
  assert "Resuming the data stream" not in third.stdout, third


def test_float16_overflow_steps_are_skipped_and_the_run_goes_on(data_dir):
  """A loss scale high enough to overflow float16 gradients: those steps
  are skipped and counted, the scale falls, and training reaches the end."""
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=16,
                 sampling="hp_loss", mixed_precision="float16",
                 initial_loss_scale=2.0 ** 20, save_checkpoints_steps=16)
  run = _finish(_pretrain(data_dir, "fp16_overflow", hparams))
  assert run.returncode == 0, run
  assert "steps skipped by loss scaling" in run.stdout, run
  summary = [line for line in run.stdout.splitlines()
             if "steps skipped by loss scaling (non-finite" in line]
  assert len(summary) == 1, run
  skipped = int(summary[0].split()[0])
  scale = float(summary[0].rsplit("loss scale now ", 1)[1].rstrip("."))
  # Each skipped step halves the scale; the others updated the weights.
  assert 1 <= skipped < 16, summary
  np.testing.assert_allclose(scale, 2.0 ** (20 - skipped), rtol=1e-5)
  latest = tf.train.latest_checkpoint(_checkpoint_dir(data_dir,
                                                      "fp16_overflow"))
  assert latest.endswith("ckpt-16"), run
  # good_steps counts the good steps since the last skip: all the others
  # when the skips came first, fewer when the halved scale overflowed again
  # after a good step (a matter of rounding, as where D's logit is taken).
  good = _tensors(latest)[
      "optimizer/loss_scale/good_steps/.ATTRIBUTES/VARIABLE_VALUE"]
  assert 1 <= int(good) <= 16 - skipped, run


@pytest.mark.parametrize("sampling", [
    dict(sampling="hp_loss"),
    # Self-normalised importance weights: cross-replica means of what the
    # forward pass computes (HP-Dist's and D's), taken outside XLA.
    dict(sampling="hp_dist", disc_importance_weighting=True)],
    ids=["hp_loss", "hp_dist_disc_importance_weighting"])
def test_jit_compile_under_mirrored_matches_mirrored_without_jit(data_dir,
                                                                 sampling):
  """XLA and MirroredStrategy compose: the compiled pass holds no
  cross-replica op, and training matches the uncompiled run."""
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=4,
                 strategy="mirrored", num_cpu_devices=2, **sampling)
  hparams["model_hparam_overrides"] = dict(
      hparams["model_hparam_overrides"], hidden_dropout_prob=0.0,
      attention_probs_dropout_prob=0.0)
  name = "mirrored_%s_" % sampling["sampling"]
  runs = _finish(_pretrain(data_dir, name + "jit",
                           dict(hparams, jit_compile=True)),
                 _pretrain(data_dir, name + "nojit", hparams))
  for run in runs:
    assert run.returncode == 0, run
  _assert_same_weights(data_dir, name + "jit", name + "nojit", atol=1e-4)


def _assert_same_weights(data_dir, model_a, model_b, atol):
  """The latest checkpoints of two runs hold the same model weights."""
  a, b = [_tensors(tf.train.latest_checkpoint(_checkpoint_dir(data_dir, m)))
          for m in (model_a, model_b)]
  weights = [k for k in b if k.startswith("model/")
             and "OPTIMIZER_SLOT" not in k]
  assert len(weights) > 50 and sorted(a) == sorted(b)
  for key in weights:
    np.testing.assert_allclose(a[key], b[key], rtol=0, atol=atol,
                               err_msg=key)


def test_gradient_accumulation_gives_the_update_of_one_large_batch(data_dir):
  """2 micro-batches of 8 make the update of one batch of 16: the losses'
  denominators are the whole batch's, and masking and sampling seeds are
  per example (dropout off: its draws depend on the batch shape)."""
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=2,
                 train_batch_size=16, sampling="hp_loss", focal_gamma=1.0,
                 save_checkpoints_steps=2)
  hparams["model_hparam_overrides"] = dict(
      hparams["model_hparam_overrides"], hidden_dropout_prob=0.0,
      attention_probs_dropout_prob=0.0)
  runs = _finish(_pretrain(data_dir, "accumulate_2x8",
                           dict(hparams, gradient_accumulation_steps=2)),
                 _pretrain(data_dir, "batch_1x16", hparams))
  for run in runs:
    assert run.returncode == 0, run
  _assert_same_weights(data_dir, "accumulate_2x8", "batch_1x16", atol=1e-5)
  # The progress lines' losses and accuracies agree too (each statistic is
  # a sum over the micro-batches), to the last printed digit: summed in
  # another order, a value can round to a neighbouring 4th decimal.
  lines = [[_named_numbers(" ".join(
      part for part in line.split(" | ")
      if part.startswith(("loss ", "gen_acc "))))
            for line in run.stdout.splitlines() if " disc_acc " in line]
           for run in runs]
  assert lines[0] and len(lines[0]) == len(lines[1]), runs
  for accumulated, whole in zip(*lines):
    assert [n for n, _ in accumulated] == [n for n, _ in whole], lines
    assert "loss" in dict(accumulated) and "gen_acc" in dict(accumulated)
    np.testing.assert_allclose([v for _, v in accumulated],
                               [v for _, v in whole], rtol=0, atol=1.5e-4,
                               err_msg=str(lines))


def _named_numbers(text):
  """[(name, value)] of "name value name value ..." text."""
  words = text.split()
  return [(name, float(value)) for name, value in zip(words[::2], words[1::2])]


def test_gradient_accumulation_refuses_batch_wide_weights(data_dir):
  """HP-Dist normalises its weights over the whole batch: refused, exit 2."""
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=2,
                 sampling="hp_dist", gradient_accumulation_steps=2)
  run = _finish(_pretrain(data_dir, "accumulate_hp_dist", hparams))
  assert run.returncode == 2, run
  assert "gradient_accumulation_steps" in run.stderr, run
  assert "Traceback" not in run.stderr, run
