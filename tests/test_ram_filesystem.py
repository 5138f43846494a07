"""Pre-training and fine-tuning with the data directory on `ram://`.

`ram://` is TensorFlow's in-memory filesystem: a path that works there goes
through `tf.io.gfile` and would work on `gs://` too. It lives inside the
process that made it, so the entry points' `main` functions are called here,
in one process: the same sequence (pre-train 4 steps, resume to 6 with
evaluation, fine-tune from the checkpoint, export to Hugging Face) on disk
and on `ram://` must give the same losses and the same exported bytes.

The vocabulary is the data directory's own (`<data-dir>/vocab.txt`), read
through gfile too.
"""

import json
import os
import posixpath
import re
import uuid

import numpy as np
import pytest
import tensorflow as tf

import export_model
import run_finetuning
import run_pretraining
from tests import finetune_fixtures
from tests import pretrain_fixtures

MODEL = "m"
PRETRAIN = dict(pretrain_fixtures.RUNNER_HPARAMS, num_eval_steps=1)
_LOSS = re.compile(r"step (\d+)/\d+ .*\| loss ([0-9.]+) mlm ([0-9.]+)")


def _copy_tree(source, target):
  """Copies the directory `source` to `target` (any gfile paths)."""
  for directory, _, names in tf.io.gfile.walk(source):
    relative = os.path.relpath(directory, source)
    out = target if relative == "." else posixpath.join(target, relative)
    tf.io.gfile.makedirs(out)
    for name in names:
      tf.io.gfile.copy(os.path.join(directory, name),
                       posixpath.join(out, name), overwrite=True)


def _run_everything(data_dir, vocab_file, capsys):
  """Pre-trains (with a resume and an eval) and fine-tunes under `data_dir`;
  returns the logged losses and the results files' contents."""
  capsys.readouterr()
  common = dict(PRETRAIN, vocab_file=vocab_file)
  for hparams in (dict(common, num_train_steps=4, do_eval=False),
                  dict(common, num_train_steps=6, do_eval=True)):
    assert run_pretraining.main(["--data-dir", data_dir, "--model-name",
                                 MODEL, "--hparams", json.dumps(hparams)]) == 0
  log = capsys.readouterr().out
  assert "Restored" in log and "ckpt-4" in log  # the second run resumed
  # The runner's vocabulary has no word of the SST fixture: all [UNK],
  # which this test of filesystems accepts (max_unk_fraction 1).
  finetune = dict(
      task_names=["sst"], vocab_file=vocab_file, vocab_size=45,
      max_unk_fraction=1,
      max_seq_length=32, train_batch_size=8, eval_batch_size=8,
      num_train_epochs=1.0, log_every=2,
      model_hparam_overrides=PRETRAIN["model_hparam_overrides"],
      embedding_size=PRETRAIN["embedding_size"])
  run_finetuning.main(["--data-dir", data_dir, "--model-name", MODEL,
                       "--hparams", json.dumps(finetune)])
  export_dir = posixpath.join(data_dir, "export", "hf")
  assert export_model.main(["--data-dir", data_dir, "--model-name", MODEL,
                            "--format", "hf", "--output", export_dir]) == 0
  model_dir = posixpath.join(data_dir, "models", MODEL)
  with tf.io.gfile.GFile(posixpath.join(model_dir, "results",
                                        "pretrain_eval.json")) as f:
    pretrain_eval = json.load(f)
  with tf.io.gfile.GFile(posixpath.join(model_dir, "results",
                                        "sst_results.json")) as f:
    finetune_record = json.load(f)
  return dict(
      losses=[tuple(float(v) for v in m.groups()) for m in _LOSS.finditer(log)],
      pretrain_eval=pretrain_eval, finetune=finetune_record,
      files=sorted(tf.io.gfile.listdir(model_dir)),
      exported={role: tf.io.gfile.GFile(posixpath.join(
          export_dir, role, "model.safetensors"), "rb").read()
                for role in ("discriminator", "generator")},
      plot=tf.io.gfile.exists(posixpath.join(
          model_dir, "results", "gen_max_prob_histogram.png")))


def _numbers(record, prefix=""):
  """{dotted key: float} of every number in a JSON record (times left out)."""
  if isinstance(record, dict):
    out = {}
    for key, value in record.items():
      if "second" not in key and key not in ("elapsed", "time"):
        out.update(_numbers(value, "%s%s." % (prefix, key)))
    return out
  if isinstance(record, list):
    out = {}
    for index, value in enumerate(record):
      out.update(_numbers(value, "%s%d." % (prefix, index)))
    return out
  if isinstance(record, (int, float)) and not isinstance(record, bool):
    return {prefix.rstrip("."): float(record)}
  return {}


@pytest.mark.slow
def test_data_dir_on_ram_filesystem_gives_the_losses_of_disk(tmp_path,
                                                             capsys):
  local = pretrain_fixtures.make_data_dir(tmp_path / "disk")
  _copy_tree(os.path.join(finetune_fixtures.FIXTURE_DIR, "finetuning_data",
                          "sst"),
             os.path.join(local, "finetuning_data", "sst"))
  ram = "ram://electra-%s/data" % uuid.uuid4().hex
  _copy_tree(local, ram)
  disk_run = _run_everything(local, posixpath.join(local, "vocab.txt"),
                             capsys)
  ram_run = _run_everything(ram, posixpath.join(ram, "vocab.txt"), capsys)
  # Nothing under ram:// leaked onto the local disk.
  assert not os.path.exists("ram:")
  assert ram_run["files"] == disk_run["files"]
  assert {"checkpoints", "config.json", "results", "train"} <= set(
      ram_run["files"])
  assert ram_run["plot"] and disk_run["plot"]
  # The HF export of the same weights has the same bytes.
  assert ram_run["exported"] == disk_run["exported"]
  assert [row[0] for row in ram_run["losses"]] == [2, 4, 6]
  np.testing.assert_allclose(ram_run["losses"], disk_run["losses"],
                             rtol=1e-5)
  for name in ("pretrain_eval", "finetune"):
    ram_numbers, disk_numbers = (_numbers(ram_run[name]),
                                 _numbers(disk_run[name]))
    assert sorted(ram_numbers) == sorted(disk_numbers)
    assert len(ram_numbers) > 5
    for key, value in disk_numbers.items():
      np.testing.assert_allclose(ram_numbers[key], value, rtol=1e-5,
                                 atol=1e-6, err_msg="%s %s" % (name, key))
