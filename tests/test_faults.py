"""The fault table: bad inputs and faults of every entry script, each run as
a user runs it (a subprocess), each promised to end with exit code 2, one
`error:` line naming the cause, no traceback, and nothing lost.

Other modules test faults that need their own set-up (a killed save, a full
disk, Ctrl-C, the vocabulary checks); this one is the list a user reads.
"""

import ctypes
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys

import pytest

from tests import finetune_fixtures as ff
from tests import paths


def run(*argv, cwd=paths.REPO):
  """(exit code, stderr) of `python argv...` from the repository."""
  proc = subprocess.run(
      [sys.executable] + list(argv), cwd=cwd, capture_output=True,
      text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                                       CUDA_VISIBLE_DEVICES=""))
  return proc.returncode, proc.stderr


def assert_refused(code, stderr, *fragments):
  """Exit 2, exactly one `error:` line holding every fragment, and no
  traceback."""
  errors = [line for line in stderr.splitlines() if line.startswith("error:")]
  assert code == 2, stderr[-3000:]
  assert len(errors) == 1, stderr[-3000:]
  for fragment in fragments:
    assert fragment in errors[0], (fragment, errors[0])
  assert "Traceback" not in stderr, stderr[-3000:]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
  """A data directory with the fine-tuning fixtures' vocabulary and SST."""
  root = tmp_path_factory.mktemp("faults")
  data = root / "data"
  shutil.copytree(os.path.join(ff.FIXTURE_DIR, "finetuning_data", "sst"),
                  data / "finetuning_data" / "sst")
  shutil.copy(ff.VOCAB_FILE, data / "vocab.txt")
  return data


@pytest.fixture(scope="module")
def garbage_checkpoint(tmp_path_factory):
  """A directory whose `checkpoint` file names a prefix of random bytes."""
  folder = tmp_path_factory.mktemp("garbage")
  (folder / "checkpoint").write_text(
      'model_checkpoint_path: "ckpt-1"\n'
      'all_model_checkpoint_paths: "ckpt-1"\n')
  rng = __import__("random").Random(0)
  for name in ("ckpt-1.index", "ckpt-1.data-00000-of-00001"):
    (folder / name).write_bytes(bytes(rng.randrange(256) for _ in range(300)))
  return folder


@pytest.mark.parametrize("script,hparams,fragment", [
    ("run_pretraining.py", {"mask_prob": float("nan")},
     "hparam 'mask_prob' must be a finite number, got nan"),
    ("run_finetuning.py", {"task_names": ["sst"],
                           "learning_rate": -float("inf")},
     "hparam 'learning_rate' must be a finite number, got -inf"),
], ids=["pretrain-mask-nan", "finetune-lr-inf"])
def test_non_finite_hparams(data_dir, script, hparams, fragment):
  # Every float field of both configs: tests/test_configure.py.
  code, err = run(script, "--data-dir", str(data_dir), "--model-name",
                  "nan", "--hparams", json.dumps(hparams))
  assert_refused(code, err, fragment)
  assert not (data_dir / "models" / "nan").exists()


@pytest.mark.parametrize("script", ["run_pretraining.py", "run_finetuning.py",
                                    "export_model.py"])
def test_a_garbage_checkpoint(data_dir, garbage_checkpoint, script):
  if script == "export_model.py":
    argv = ["--checkpoint", str(garbage_checkpoint), "--format", "hf",
            "--output", str(data_dir / "export_garbage")]
  else:
    hparams = {"init_checkpoint": str(garbage_checkpoint)}
    if script == "run_finetuning.py":
      hparams["task_names"] = ["sst"]
    argv = ["--data-dir", str(data_dir), "--model-name", "g", "--hparams",
            json.dumps(hparams)]
  code, err = run(script, *argv)
  assert_refused(code, err, "checkpoint %s cannot be read" % (
      garbage_checkpoint / "ckpt-1"), "not a TensorFlow checkpoint")


def test_a_second_run_on_a_model_directory_in_use(data_dir):
  """A live run's lock stops a second run at once, naming its pid and
  host; a lock whose process is dead on this host is taken over."""
  model_dir = data_dir / "models" / "busy"
  model_dir.mkdir(parents=True)
  holder = subprocess.Popen([sys.executable, "-c",
                             "import time; time.sleep(120)"])
  try:
    (model_dir / ".lock").write_text("%d %s" % (holder.pid,
                                                socket.gethostname()))
    hparams = dict(ff.tiny_hparams(model_dir, debug=True),
                   task_names=["sst"])
    del hparams["model_dir"], hparams["vocab_file"]
    code, err = run("run_finetuning.py", "--data-dir", str(data_dir),
                    "--model-name", "busy", "--hparams", json.dumps(hparams))
    assert_refused(code, err, "model directory %s is in use by another run "
                   "(pid %d on host %s" % (model_dir, holder.pid,
                                           socket.gethostname()))
  finally:
    holder.kill()
    holder.wait()
  # The holder is gone: its lock is stale and taken over; the run trains.
  code, err = run("run_finetuning.py", "--data-dir", str(data_dir),
                  "--model-name", "busy", "--hparams", json.dumps(hparams))
  assert code == 0, err[-3000:]
  assert not (model_dir / ".lock").exists()  # Released at exit.


def test_lock_files_are_exclusive_and_stale_ones_taken_over(tmp_path):
  from util import run_lock  # pylint: disable=g-import-not-at-top
  path = str(tmp_path / "x.lock")
  assert run_lock.try_acquire(path)
  assert not run_lock.try_acquire(path)  # Ours, and we are alive.
  run_lock.release(path)
  assert not os.path.exists(path)
  with open(path, "w") as f:
    f.write("1 some-other-host")  # Cannot be checked from here: held.
  assert not run_lock.try_acquire(path)


class _TinyPretraining:
  """run_pretraining.py of model "m" with RUNNER_HPARAMS (no eval;
  `hparams` override) on fresh data under `root`, run as a user runs it."""

  def __init__(self, root, **hparams):
    from tests import pretrain_fixtures  # pylint: disable=g-import-not-at-top
    self.data = pretrain_fixtures.make_data_dir(root / "D", heldout=False)
    self.hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, do_eval=False,
                        **hparams)
    self.env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                    CUDA_VISIBLE_DEVICES="")
    self.model_dir = os.path.join(self.data, "models", "m")
    self.checkpoints = os.path.join(self.model_dir, "checkpoints")

  def argv(self, num_train_steps):
    return [sys.executable, "run_pretraining.py", "--data-dir", self.data,
            "--model-name", "m", "--hparams", json.dumps(dict(
                self.hparams, num_train_steps=num_train_steps))]

  def run(self, num_train_steps, **kwargs):
    """The finished CompletedProcess of a run to `num_train_steps`."""
    return subprocess.run(self.argv(num_train_steps), cwd=paths.REPO,
                          env=self.env, text=True, capture_output=True,
                          timeout=300, **kwargs)


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130),
                                         (signal.SIGTERM, 143),
                                         (signal.SIGHUP, 129)])
def test_a_stop_signal_saves_the_step_reached_and_resumes(tmp_path, signum,
                                                          code):
  """Ctrl-C, SIGTERM (preemption) or SIGHUP during pre-training: a
  checkpoint of the step reached, one line saying how to resume, exit 128 +
  the signal's number; the same command resumes there (run after SIGTERM,
  a preemption's signal: the resume does not depend on which it was)."""
  pretraining = _TinyPretraining(tmp_path, save_checkpoints_steps=100000)
  proc = subprocess.Popen(pretraining.argv(100000), cwd=paths.REPO,
                          env=pretraining.env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  try:
    for line in proc.stdout:  # Wait for training to be under way.
      if line.startswith("step 6/"):
        break
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=300)
  finally:
    proc.kill()
  lines = [line for line in err.splitlines() if line.startswith("stopped:")]
  assert proc.returncode == code, err[-3000:]
  assert len(lines) == 1 and "Re-run the same command to resume" in lines[0]
  assert "Traceback" not in err, err[-3000:]
  step = int(lines[0].split("interrupted at step ")[1].split()[0])
  assert step >= 6
  checkpoints = pretraining.checkpoints
  assert os.path.exists(os.path.join(checkpoints, "ckpt-%d.index" % step))
  assert not [f for f in os.listdir(checkpoints) if "temp" in f]
  assert not os.path.exists(os.path.join(pretraining.model_dir, ".lock"))
  if signum != signal.SIGTERM:
    return
  resumed = pretraining.run(step + 2)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "Training steps %d -> %d" % (step, step + 2) in resumed.stdout


def _file_size_limit(limit):
  """A preexec_fn: files of the child cannot grow past `limit` bytes (a
  full disk, as a write sees it: EFBIG; Python ignores SIGXFSZ)."""
  def set_limit():
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
  return set_limit


def test_a_full_disk_during_a_checkpoint_save(tmp_path):
  """The save fails cleanly: one error line naming the last good
  checkpoint, which stays registered and resumes; no partial files."""
  pretraining = _TinyPretraining(tmp_path)
  first = pretraining.run(4)
  assert first.returncode == 0, first.stderr[-3000:]
  checkpoints = pretraining.checkpoints
  good = os.path.join(checkpoints, "ckpt-4")
  size = os.path.getsize(good + ".data-00000-of-00001")
  full = pretraining.run(8, preexec_fn=_file_size_limit(size // 2))
  assert_refused(full.returncode, full.stderr, "could not save checkpoint %s"
                 % os.path.join(checkpoints, "ckpt-8"),
                 "The last good checkpoint, %s, is kept" % good)
  assert not [f for f in os.listdir(checkpoints) if "ckpt-8" in f]
  with open(os.path.join(checkpoints, "checkpoint")) as f:
    assert '"ckpt-4"' in f.read().split("\n")[0]
  resumed = pretraining.run(8)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "Training steps 4 -> 8" in resumed.stdout


def test_output_paths_under_a_file(data_dir, tmp_path):
  (tmp_path / "file").write_text("")
  under = str(tmp_path / "file" / "out")
  code, err = run("build_pretraining_dataset.py", "--corpus-dir",
                  os.path.join(paths.FIXTURES, "pretraining_dataset"),
                  "--vocab-file", str(data_dir / "vocab.txt"),
                  "--output-dir", under)
  assert_refused(code, err, "cannot write to %s" % under)
  code, err = run("build_vocab.py", "--corpus-dir", os.path.join(
      paths.FIXTURES, "pretraining_dataset"), "--output", under)
  assert_refused(code, err, "cannot write to %s" % (tmp_path / "file"))


def test_a_resumed_fine_tuning_keeps_the_trials_it_finished(data_dir, capsys):
  """A run killed in trial 2 keeps trial 1 (its results file lists it):
  the same command trains trial 2 only."""
  import run_finetuning  # pylint: disable=g-import-not-at-top
  model_dir = data_dir / "models" / "trials"
  hparams = dict(ff.tiny_hparams(model_dir, debug=True), task_names=["sst"],
                 num_trials=2)
  del hparams["model_dir"], hparams["vocab_file"]
  argv = ["--data-dir", str(data_dir), "--model-name", "trials", "--hparams",
          json.dumps(hparams)]
  first = run_finetuning.main(argv)["sst"]
  results = model_dir / "results" / "sst_results.json"
  killed = json.loads(results.read_text())
  killed["trials"] = killed["trials"][:1]  # As left by a kill in trial 2.
  results.write_text(json.dumps(killed))
  capsys.readouterr()
  again = run_finetuning.main(argv)["sst"]
  out = capsys.readouterr().out
  assert "sst trial 1/2: finished by an earlier run of this config; kept" in (
      out)
  assert "sst trial 2/2: " in out.replace(
      "sst trial 2/2: finished", "")  # Trial 2 trains again.
  assert again["trials"][0] == json.loads(json.dumps(first["trials"][0]))
  assert [t["trial"] for t in again["trials"]] == [1, 2]


def test_a_failed_pretraining_leaves_no_directory_and_keeps_its_steps(
    tmp_path):
  from tests import pretrain_fixtures  # pylint: disable=g-import-not-at-top
  data = pretrain_fixtures.make_data_dir(tmp_path / "D", heldout=False)
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=4,
                 do_eval=False, train_batch_size=7, strategy="mirrored",
                 num_cpu_devices=2)
  code, err = run("run_pretraining.py", "--data-dir", data, "--model-name",
                  "odd", "--hparams", json.dumps(hparams))
  assert_refused(code, err, "train_batch_size 7 is not divisible by the 2 "
                 "replicas")
  assert not os.path.exists(os.path.join(data, "models", "odd"))
  # A finished run asked for fewer steps than its checkpoint: refused, and
  # config.json keeps the steps the checkpoint was trained to.
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=4,
                 do_eval=False)
  code, err = run("run_pretraining.py", "--data-dir", data, "--model-name",
                  "m", "--hparams", json.dumps(hparams))
  assert code == 0, err[-3000:]
  config = os.path.join(data, "models", "m", "config.json")
  with open(config) as f:
    before = f.read()
  hparams["num_train_steps"] = 2
  code, err = run("run_pretraining.py", "--data-dir", data, "--model-name",
                  "m", "--hparams", json.dumps(hparams))
  assert_refused(code, err, "is at step 4, past num_train_steps 2")
  with open(config) as f:
    assert f.read() == before


@pytest.mark.parametrize("script", ["run_pretraining.py", "run_finetuning.py"])
def test_a_model_directory_that_cannot_be_made(tmp_path, script):
  """<data-dir>/models is a file: the model directory cannot be made
  there, which is said before any training (root ignores permissions, so a
  file stands in for a read-only directory)."""
  from tests import pretrain_fixtures  # pylint: disable=g-import-not-at-top
  data = pretrain_fixtures.make_data_dir(tmp_path / "D", heldout=False)
  shutil.copytree(os.path.join(ff.FIXTURE_DIR, "finetuning_data", "sst"),
                  os.path.join(data, "finetuning_data", "sst"))
  with open(os.path.join(data, "models"), "w") as f:
    f.write("not a directory")
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=2)
  if script == "run_finetuning.py":
    hparams = dict(task_names=["sst"], init_checkpoint="none", debug=True,
                   max_seq_length=32)
  code, err = run(script, "--data-dir", data, "--model-name", "m",
                  "--hparams", json.dumps(hparams))
  assert_refused(code, err, os.path.join(data, "models"))
  with open(os.path.join(data, "models")) as f:
    assert f.read() == "not a directory"


def _without_root_file_access():
  """A preexec_fn: a root child loses CAP_DAC_OVERRIDE and
  CAP_DAC_READ_SEARCH, so permission bits bind it as they bind a user (a
  no-op for a non-root child, which they bind already)."""
  def drop():
    if os.geteuid() == 0:
      libc = ctypes.CDLL(None, use_errno=True)
      for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
          raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
  return drop


def test_a_model_directory_made_read_only_between_runs(tmp_path):
  """A resume into a model directory, or its checkpoints/, that can no
  longer be written is refused before training, naming the directory; the
  checkpoint stays and resumes once the permissions are back."""
  pretraining = _TinyPretraining(tmp_path)

  def pretrain(num_train_steps):
    return pretraining.run(num_train_steps,
                           preexec_fn=_without_root_file_access())
  first = pretrain(4)
  assert first.returncode == 0, first.stderr[-3000:]
  checkpoints = pretraining.checkpoints
  before = sorted(os.listdir(checkpoints))
  for read_only in (checkpoints, pretraining.model_dir):
    os.chmod(read_only, 0o555)
    try:
      refused = pretrain(8)
    finally:
      os.chmod(read_only, 0o755)
    assert_refused(refused.returncode, refused.stderr,
                   "cannot write to %s " % read_only, "Permission denied")
    assert "step 2/" not in refused.stdout  # Refused before training.
    assert sorted(os.listdir(checkpoints)) == before
  resumed = pretrain(8)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "Training steps 4 -> 8" in resumed.stdout


def _ten_token_vocab(path):
  """A vocabulary of the special tokens and 5 words: nearly every token of
  a corpus is [UNK]."""
  path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                             "the", "a", "of", "and", "."]) + "\n")
  return str(path)


def test_a_vocabulary_that_leaves_most_tokens_unknown(tmp_path):
  """The dataset builder counts [UNK] as not covered and refuses a
  vocabulary that maps most of the corpus to it; nothing is written."""
  vocab = _ten_token_vocab(tmp_path / "vocab.txt")
  out = tmp_path / "out"
  corpus = os.path.join(paths.FIXTURES, "pretraining_dataset")
  code, err = run("build_pretraining_dataset.py", "--corpus-dir", corpus,
                  "--vocab-file", vocab, "--output-dir", str(out),
                  "--max-seq-length", "32")
  assert_refused(code, err, "are [UNK] (more than --max-unk-fraction 0.5)",
                 "the vocabulary %s does not cover this corpus" % vocab)
  assert not out.exists()
  code, err = run("build_pretraining_dataset.py", "--corpus-dir", corpus,
                  "--vocab-file", vocab, "--output-dir", str(out),
                  "--max-seq-length", "32", "--max-unk-fraction", "1")
  assert code == 0, err[-3000:]
  manifest = json.loads((out / "manifest.json").read_text())
  assert manifest["unk_tokens"] > 0.5 * manifest["tokens_written"]["total"]
  assert manifest["coverage"] < 0.5


# --- Data identity (issue 49): shards, manifest and vocabulary against the
# model that used them. ---

FIXTURE_CORPUS = os.path.join(paths.FIXTURES, "pretraining_dataset")
FIXTURE_VOCAB = os.path.join(paths.FIXTURES, "tokenization", "vocab.txt")


def _run_builder(data, *flags):
  """(exit code, stderr) of build_pretraining_dataset.py of the fixture
  corpus into data/pretrain_tfrecords with data/vocab.txt (2 shards of 32
  tokens)."""
  return run("build_pretraining_dataset.py", "--corpus-dir", FIXTURE_CORPUS,
             "--vocab-file", str(data / "vocab.txt"), "--output-dir",
             str(data / "pretrain_tfrecords"), "--max-seq-length", "32",
             "--num-shards", "2", *flags)


def _build_shards(data, *flags):
  """`_run_builder`, which must succeed."""
  code, err = _run_builder(data, *flags)
  assert code == 0, err[-3000:]


@pytest.fixture(scope="module")
def built_data(tmp_path_factory):
  """A data directory of the fixture vocabulary and shards the builder
  wrote from the fixture corpus (with their manifest.json)."""
  data = tmp_path_factory.mktemp("built") / "D"
  data.mkdir()
  shutil.copy(os.path.join(paths.FIXTURES, "tokenization", "vocab.txt"),
              data / "vocab.txt")
  _build_shards(data)
  return data


def _pretrain(data, num_train_steps, **hparams):
  """run_pretraining.py of model "m" on `data`: (exit code, stdout,
  stderr)."""
  from tests import pretrain_fixtures  # pylint: disable=g-import-not-at-top
  values = dict(pretrain_fixtures.RUNNER_HPARAMS, do_eval=False,
                num_train_steps=num_train_steps, **hparams)
  proc = subprocess.run(
      [sys.executable, "run_pretraining.py", "--data-dir", str(data),
       "--model-name", "m", "--hparams", json.dumps(values)],
      cwd=paths.REPO, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES=""))
  return proc.returncode, proc.stdout, proc.stderr


def _corrupt(records, case):
  """Damages the shard folder `records` as `case` says."""
  shard = records / "pretrain_data.tfrecord-00000-of-00002"
  manifest = records / "manifest.json"
  if case == "foreign-shard":  # A shard of a build of 3 shards copied in.
    shutil.copy(shard, records / "pretrain_data.tfrecord-00002-of-00003")
  elif case == "deleted-shard":
    (records / "pretrain_data.tfrecord-00001-of-00002").unlink()
  elif case == "resized-shard":  # Another build's shard of the same name.
    shutil.copy(records / "pretrain_data.tfrecord-00001-of-00002", shard)
  elif case == "truncated-manifest":
    manifest.write_text(manifest.read_text()[:200])
  elif case == "wrong-shape-manifest":
    manifest.write_text("[]")


@pytest.mark.parametrize("case,fragments", [
    ("foreign-shard", ["pretrain_data.tfrecord-00002-of-00003 is not "
                       "listed in", "comes from another build"]),
    ("deleted-shard", ["pretrain_data.tfrecord-00001-of-00002, listed in",
                       "is missing"]),
    ("resized-shard", ["pretrain_data.tfrecord-00000-of-00002 has",
                       "changed after that build"]),
    ("truncated-manifest", ["manifest.json is truncated or not JSON"]),
    ("wrong-shape-manifest", ["manifest.json is not a manifest of "
                              "build_pretraining_dataset.py"]),
])
def test_shards_that_differ_from_their_manifest(built_data, tmp_path, case,
                                                fragments):
  """Shards mixed, deleted or rewritten, a manifest cut short or of
  another shape: one line naming the file, before any training."""
  data = tmp_path / "D"
  shutil.copytree(built_data, data)
  _corrupt(data / "pretrain_tfrecords", case)
  code, out, err = _pretrain(data, 2)
  assert_refused(code, err, *fragments)
  assert "step 1/" not in out
  assert not (data / "models" / "m").exists()


def _shard_bytes(records):
  return {n: (records / n).read_bytes() for n in os.listdir(records)}


def test_a_resume_on_other_data(built_data, tmp_path):
  """The builder refuses to rebuild in place the shards a model records
  (--overwrite-used does); shards rebuilt so: a resume is refused unless
  accept_new_data (then the stream restarts, no DataLossError); a deleted
  manifest is a warning; another vocabulary of the same size (shards
  rebuilt with it) is refused naming both fingerprints, and config.json
  keeps its own."""
  from text import vocab_fingerprint  # pylint: disable=g-import-not-at-top
  data = tmp_path / "D"
  shutil.copytree(built_data, data)
  code, _, err = _pretrain(data, 2)
  assert code == 0, err[-3000:]
  records = data / "pretrain_tfrecords"
  before = _shard_bytes(records)
  code, err = _run_builder(data, "--overwrite", "--seed", "99")
  assert_refused(code, err, "the shards in %s are the training data of %s " %
                 (records, data / "models" / "m"), "pass --overwrite-used")
  assert _shard_bytes(records) == before
  _build_shards(data, "--overwrite-used", "--seed", "99")
  code, _, err = _pretrain(data, 4)
  assert_refused(code, err, "the training shards (hparam 'pretrain_tfrecords'",
                 "are not the ones the checkpoints in", "accept_new_data")
  code, out, err = _pretrain(data, 4, accept_new_data=True)
  assert code == 0, err[-3000:]
  assert "Training steps 2 -> 4" in out
  (data / "pretrain_tfrecords" / "manifest.json").unlink()
  code, out, err = _pretrain(data, 6)
  assert code == 0, err[-3000:]
  assert "no manifest.json beside the shards" in err
  config = data / "models" / "m" / "config.json"
  before = config.read_text()
  vocab = data / "vocab.txt"
  old_fingerprint = vocab_fingerprint.fingerprint(str(vocab))
  lines = vocab.read_text().split("\n")
  lines[10], lines[11] = lines[11], lines[10]
  vocab.write_text("\n".join(lines))
  _build_shards(data, "--overwrite", "--overwrite-used")
  code, _, err = _pretrain(data, 8, accept_new_data=True)
  assert_refused(code, err, "were trained with another vocabulary",
                 old_fingerprint, vocab_fingerprint.fingerprint(str(vocab)))
  assert config.read_text() == before


def test_a_rebuild_of_shards_a_model_records_by_a_relative_path(built_data,
                                                               tmp_path):
  """A model pre-trained with a relative --data-dir records a relative
  shard glob: the builder still finds it (read under the data directory
  the model sits in), and names only the models of that folder."""
  data = tmp_path / "D"
  shutil.copytree(built_data, data)
  for name, folder in (("rel", "pretrain_tfrecords"), ("other", "other")):
    (data / "models" / name).mkdir(parents=True)
    (data / "models" / name / "config.json").write_text(json.dumps(dict(
        data_dir="D", pretrain_tfrecords="D/%s/pretrain_data.tfrecord*" %
        folder, train_shards={"fingerprint": "sha256:0", "files": {}})))
  records = data / "pretrain_tfrecords"
  before = _shard_bytes(records)
  code, err = _run_builder(data, "--overwrite")
  assert_refused(code, err, "training data of %s (their" % (
      data / "models" / "rel"))
  assert _shard_bytes(records) == before


@pytest.mark.parametrize("case", ["huge-steps", "hparams-dir",
                                  "duplicate-key"])
def test_hparams_that_used_to_end_in_a_traceback(data_dir, tmp_path, case):
  if case == "huge-steps":
    hparams, fragment = json.dumps({"num_train_steps": 10**30}), (
        "hparam 'num_train_steps' must fit a 64-bit integer")
  elif case == "hparams-dir":
    hparams, fragment = str(tmp_path), "--hparams %s is a directory" % (
        tmp_path)
  else:
    hparams = str(tmp_path / "h.json")
    with open(hparams, "w") as f:
      f.write('{"learning_rate": 1e-4, "seed": 1, "learning_rate": 2e-4}')
    fragment = "%s sets key 'learning_rate' twice" % hparams
  code, err = run("run_pretraining.py", "--data-dir", str(data_dir),
                  "--model-name", "huge", "--hparams", hparams)
  assert_refused(code, err, fragment)
  assert not (data_dir / "models" / "huge").exists()


@pytest.mark.parametrize("tf_config,strategy,fragment", [
    ("[]", "default", "TF_CONFIG must be a JSON object"),
    ('{"cluster": {"worker": ["localhost:1", "localhost:2"]}, '
     '"task": {"type": "worker", "index": 5}}', "multi_worker_mirrored",
     "TF_CONFIG's task index 5 is not one of the 2 worker tasks"),
], ids=["list", "index-beyond-workers"])
def test_a_tf_config_that_names_no_task_of_its_cluster(
    data_dir, tf_config, strategy, fragment):
  from tests import pretrain_fixtures  # pylint: disable=g-import-not-at-top
  data = pretrain_fixtures.make_data_dir(data_dir.parent / ("tf_" + strategy),
                                         heldout=False)
  hparams = dict(pretrain_fixtures.RUNNER_HPARAMS, num_train_steps=2,
                 strategy=strategy)
  proc = subprocess.run(
      [sys.executable, "run_pretraining.py", "--data-dir", data,
       "--model-name", "m", "--hparams", json.dumps(hparams)],
      cwd=paths.REPO, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
               TF_CONFIG=tf_config))
  assert_refused(proc.returncode, proc.stderr, fragment)
  assert not os.path.exists(os.path.join(data, "models", "m"))


@pytest.mark.parametrize("script,name", [
    ("run_pretraining.py", "../../escape"), ("run_pretraining.py", ""),
    ("run_finetuning.py", "../../escape"), ("export_model.py", "a/b"),
    ("export_model.py", "..")])
def test_a_model_name_that_is_not_one_directory(data_dir, script, name):
  argv = ["--data-dir", str(data_dir), "--model-name", name]
  if script == "export_model.py":
    argv += ["--format", "hf", "--output", str(data_dir / "export_name")]
  elif script == "run_finetuning.py":
    argv += ["--hparams", json.dumps({"task_names": ["sst"]})]
  code, err = run(script, *argv)
  assert_refused(code, err, "--model-name %r must be one directory name" %
                 name)
  assert not (data_dir.parent / "escape").exists()
  assert not (data_dir / "models" / ".lock").exists()


def _live_process():
  return subprocess.Popen([sys.executable, "-c",
                           "import time; time.sleep(120)"])


def test_two_builders_on_one_output(tmp_path):
  """A builder holds its output (the dataset builder: the folder's .lock;
  build_vocab.py: .<name>.lock beside the file): a second one exits 2
  naming the first's pid, and leaves its files alone."""
  out = tmp_path / "records"
  out.mkdir()
  vocab_out = tmp_path / "vocab.txt"
  holder = _live_process()
  try:
    host = socket.gethostname()
    (out / ".lock").write_text("%d %s" % (holder.pid, host))
    (out / (".tmp-%d-pretrain_data.tfrecord-00000" % holder.pid)).write_text(
        "being written")
    code, err = run("build_pretraining_dataset.py", "--corpus-dir",
                    FIXTURE_CORPUS, "--vocab-file", FIXTURE_VOCAB,
                    "--output-dir", str(out), "--max-seq-length", "32")
    assert_refused(code, err, "output directory %s is in use by another run "
                   "(pid %d on host %s" % (out, holder.pid, host))
    assert sorted(os.listdir(out)) == [
        ".lock", ".tmp-%d-pretrain_data.tfrecord-00000" % holder.pid]
    (tmp_path / ".vocab.txt.lock").write_text("%d %s" % (holder.pid, host))
    code, err = run("build_vocab.py", "--corpus-dir", FIXTURE_CORPUS,
                    "--output", str(vocab_out), "--vocab-size", "200")
    assert_refused(code, err, "is in use by another run (pid %d" % holder.pid)
    assert not vocab_out.exists()
  finally:
    holder.kill()
    holder.wait()
  # The holder is gone: its temporary file is a killed build's, removed
  # with a note; the build goes on.
  code, err = run("build_pretraining_dataset.py", "--corpus-dir",
                  FIXTURE_CORPUS, "--vocab-file", FIXTURE_VOCAB,
                  "--output-dir", str(out), "--max-seq-length", "32")
  assert code == 0, err[-3000:]
  assert "note: removed 1 temporary file(s)" in err
  assert not [n for n in os.listdir(out) if n.startswith(".")]


def _finetuning_argv(data_dir, name, **overrides):
  hparams = dict(ff.tiny_hparams(data_dir / "models" / name, debug=True),
                 task_names=["sst"], **overrides)
  del hparams["model_dir"], hparams["vocab_file"]
  return [sys.executable, "run_finetuning.py", "--data-dir", str(data_dir),
          "--model-name", name, "--hparams", json.dumps(hparams)]


def test_a_diverging_fine_tuning_exits_3_naming_the_steps(data_dir):
  argv = _finetuning_argv(data_dir, "diverged", learning_rate=1e30)
  code, err = run(*argv[1:])
  errors = [line for line in err.splitlines() if line.startswith("error:")]
  assert code == 3, err[-3000:]
  assert len(errors) == 1 and "Traceback" not in err, err[-3000:]
  assert "sst trial 1/1: the training loss is not finite between steps" in (
      errors[0]) and "lower hparam 'learning_rate' (now 1e+30)" in errors[0]


def test_a_stop_signal_in_fine_tuning_keeps_the_finished_trials(data_dir):
  """SIGTERM in trial 2: one `stopped:` line, exit 143, trial 1's results
  kept, no lock; the loop stops between calls, not inside a step."""
  argv = _finetuning_argv(data_dir, "stopped", num_trials=2,
                          num_train_epochs=200.0, log_every=1)
  proc = subprocess.Popen(argv, cwd=paths.REPO, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  try:
    for line in proc.stdout:  # Wait for trial 2 to be under way.
      if line.startswith("sst trial 2/2: step 2/"):
        break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
  finally:
    proc.kill()
  lines = [line for line in err.splitlines() if line.startswith("stopped:")]
  assert proc.returncode == 143, err[-3000:]
  assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
  assert "sst trial 2/2: interrupted at step" in lines[0]
  model_dir = data_dir / "models" / "stopped"
  results = json.loads((model_dir / "results" / "sst_results.json")
                       .read_text())
  assert [t["trial"] for t in results["trials"]] == [1]
  assert not (model_dir / ".lock").exists()


# --- Exports: the completion marker (util/export_marker.py). ---

_EXPORT_KILLED_HALFWAY = """
import os, signal, sys
import export_model
from interop import hf
from util.cli import run_main
real, written = hf._write_folder, []
def write_then_die(*args, **kwargs):
  if written:  # discriminator/ written: killed in generator/.
    os.kill(os.getpid(), signal.SIGKILL)
  written.append(real(*args, **kwargs))
hf._write_folder = write_then_die
run_main(export_model.main, sys.argv[1:])
"""


def test_an_unfinished_export_is_refused_by_its_loaders(tmp_path):
  """A finished export ends with EXPORT_COMPLETE.json (format, time). An
  export killed halfway leaves a folder marked in progress (its temporary
  sibling here; on an object store, --output itself): --checkpoint on it,
  or on its discriminator/, is one line naming it; the TFLite runner
  refuses a folder without the marker before it loads anything."""
  from tests import interop_fixtures as ix  # pylint: disable=g-import-not-at-top
  from tests import pretrain_fixtures as pf  # pylint: disable=g-import-not-at-top
  data = tmp_path / "D"
  data.mkdir()
  ix.write_vocab(data / "vocab.txt")
  ix.pretrained_dir(data, dict(
      model_hparam_overrides=dict(pf.TINY_MODEL),
      embedding_size=pf.TINY_EMBEDDING_SIZE, vocab_size=ix.VOCAB_SIZE,
      max_seq_length=ix.SEQ_LEN))
  argv = ["--data-dir", str(data), "--model-name", "M", "--format", "hf"]
  code, err = run("export_model.py", *argv, "--output", str(tmp_path / "hf"))
  assert code == 0, err[-3000:]
  marker = json.loads((tmp_path / "hf" / "EXPORT_COMPLETE.json").read_text())
  assert marker["format"] == "hf" and marker["completed"].startswith("20")
  assert not (tmp_path / "hf" / ".export-in-progress").exists()
  killed = subprocess.run(
      [sys.executable, "-c", _EXPORT_KILLED_HALFWAY] + argv +
      ["--output", str(tmp_path / "new")], cwd=paths.REPO,
      capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert killed.returncode == -9, killed.stderr[-3000:]
  assert not (tmp_path / "new").exists()
  [half] = [tmp_path / n for n in os.listdir(tmp_path)
            if n.startswith(".new.tmp-export-")]
  assert (half / "discriminator" / "model.safetensors").exists()
  for source in (half, half / "discriminator"):
    code, err = run("export_model.py", "--checkpoint", str(source),
                    "--format", "tf1", "--output", str(tmp_path / "tf1"))
    assert_refused(code, err, "incomplete export %s: it has no "
                   "EXPORT_COMPLETE.json" % half, "re-run export_model.py")
    assert not (tmp_path / "tf1").exists()
  from export import tflite  # pylint: disable=g-import-not-at-top
  from util.errors import UserError  # pylint: disable=g-import-not-at-top
  folder = tmp_path / "tflite"
  folder.mkdir()
  (folder / tflite.MODEL_FILE).write_bytes(b"TFL3")
  (folder / tflite.META_FILE).write_text("{}")
  with pytest.raises(UserError, match="incomplete export %s: it has no "
                     "EXPORT_COMPLETE.json" % folder):
    tflite.TfliteClassifier(str(folder))


# --- Encodings: UTF-16 and UTF-32 corpus files, a vocabulary's
# byte-order mark (util/text_encoding.py). ---

_WIDE_FILES = {  # name: (encoded text, the encoding iconv is told)
    "utf16_bom.txt": ("Plain words here.\n".encode("utf-16"), "UTF-16"),
    "utf16le.txt": ("Plain words here.\n".encode("utf-16-le"), "UTF-16LE"),
    "utf32_bom.txt": ("Plain words here.\n".encode("utf-32"), "UTF-32"),
}


def test_utf16_and_utf32_corpus_files_are_named_with_the_fix(tmp_path):
  """Both builders skip a UTF-16 or UTF-32 file saying which encoding it
  looks like (by its byte-order mark, or NULs at every other byte) and the
  iconv command that converts it, in the warning and the manifest; the
  command works."""
  corpus = tmp_path / "corpus"
  shutil.copytree(FIXTURE_CORPUS, corpus)
  for name, (data, _) in _WIDE_FILES.items():
    (corpus / name).write_bytes(data)
  out = tmp_path / "records"
  code, err = run("build_pretraining_dataset.py", "--corpus-dir", str(corpus),
                  "--vocab-file", FIXTURE_VOCAB, "--output-dir", str(out),
                  "--max-seq-length", "32")
  assert code == 0, err[-3000:]
  reasons = {f["path"]: f["reason"] for f in json.loads(
      (out / "manifest.json").read_text())["files"]["skipped_files"]}
  code, vocab_err = run("build_vocab.py", "--corpus-dir", str(corpus),
                        "--output", str(tmp_path / "vocab.txt"),
                        "--vocab-size", "200")
  assert code == 0, vocab_err[-3000:]
  for name, (data, encoding) in _WIDE_FILES.items():
    path = corpus / name
    command = "iconv -f %s -t UTF-8 %s > %s.utf8" % (encoding, path, path)
    assert reasons[name].startswith("not UTF-8: looks like %s (" % encoding)
    assert command in reasons[name], reasons[name]
    for stderr in (err, vocab_err):
      assert "warning: skipping %s: %s\n" % (name, reasons[name]) in stderr
    subprocess.run(command, shell=True, check=True)
    converted = (tmp_path / "corpus" / (name + ".utf8")).read_text("utf-8")
    assert converted.lstrip("\ufeff") == "Plain words here.\n"


@pytest.mark.parametrize("case,fragments", [
    ("utf8-bom", ["starts with a UTF-8 byte-order mark",
                  "first token would read as \"\\ufeff[PAD]\"",
                  "sed -i '1s/^\\xEF\\xBB\\xBF//'"]),
    ("utf16", ["is not UTF-8: it looks like UTF-16 (it starts with a UTF-16 "
               "byte-order mark); convert it with iconv -f UTF-16"]),
])
def test_a_vocabulary_with_a_byte_order_mark(tmp_path, case, fragments):
  """A vocab.txt saved with a UTF-8 byte-order mark is refused by name
  (its first token would differ here, in transformers and in TensorFlow
  Text), with the command that removes it; one saved as UTF-16 is named
  with the iconv command. Nothing is written; the fixed file builds."""
  text = open(FIXTURE_VOCAB, encoding="utf-8").read()
  vocab = tmp_path / "vocab.txt"
  vocab.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8")
                    if case == "utf8-bom" else text.encode("utf-16"))
  out = tmp_path / "records"
  argv = ["build_pretraining_dataset.py", "--corpus-dir", FIXTURE_CORPUS,
          "--vocab-file", str(vocab), "--output-dir", str(out),
          "--max-seq-length", "32"]
  code, err = run(*argv)
  assert_refused(code, err, "vocab file %s " % vocab, *fragments)
  assert not out.exists()
  if case == "utf8-bom":
    subprocess.run(["sed", "-i", r"1s/^\xEF\xBB\xBF//", str(vocab)],
                   check=True)
    assert vocab.read_text("utf-8") == text
    code, err = run(*argv)
    assert code == 0, err[-3000:]
