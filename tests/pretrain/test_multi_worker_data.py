"""Multi-worker data sharding of the pre-training input (pretrain_data.py).

In one process with two `tf.distribute.InputContext`s (fast), and with two
real MultiWorkerMirroredStrategy worker processes
(tests/multi_worker_count_check.py): across two network namespaces joined by
a veth pair where `ip netns` can run (root, iproute2), else on localhost.
"""

import collections
import contextlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests import pretrain_fixtures
from tests import paths
from tests.pretrain.test_pretrain_data import make_config
from tests.pretrain.test_pretrain_data import make_data
from tests.pretrain.test_pretrain_data import unbatch
from tests.pretrain.test_run_pretraining import _free_ports
from util.errors import UserError

REPO = paths.REPO
STEPS = 5
GLOBAL_BATCH = 8
HPARAMS = dict(max_seq_length=32, train_batch_size=GLOBAL_BATCH,
               shuffle_buffer=32)


def _context(pipeline_id, pipelines=2, replicas_per_pipeline=1):
  return tf.distribute.InputContext(
      num_input_pipelines=pipelines, input_pipeline_id=pipeline_id,
      num_replicas_in_sync=pipelines * replicas_per_pipeline)


def _file_of_example(shard_paths):
  """{input_ids tuple: index of the shard holding it}."""
  owner = {}
  for index, path in enumerate(shard_paths):
    for record in tf.data.TFRecordDataset(path):
      ids = tf.train.Example.FromString(record.numpy()).features.feature[
          "input_ids"].int64_list.value
      owner[tuple(ids)] = index
  return owner


def test_fewer_training_files_than_workers_says_how_many_shards_to_build(
    tmp_path):
  make_data(tmp_path, num_files=3)
  fn = pretrain_fixtures.input_fn(make_config(tmp_path, train_batch_size=4),
                                  True)
  with pytest.raises(UserError, match=r"4 input pipelines .* only 3 .*"
                     r"build_pretraining_dataset.py --num-shards 4"):
    fn(_context(0, pipelines=4))


def test_two_input_contexts_read_disjoint_files_a_global_batch_per_step(
    tmp_path):
  make_data(tmp_path, num_files=4, per_file=12)
  fn = pretrain_fixtures.input_fn(make_config(tmp_path), True)
  owner = _file_of_example(fn.files)
  for replicas_per_pipeline in (1, 2):
    files_read, examples = [], 0
    for pipeline in range(2):
      dataset = fn(_context(
          pipeline, replicas_per_pipeline=replicas_per_pipeline))
      # One step takes a per-replica batch for each local replica.
      batches = STEPS * replicas_per_pipeline
      rows = unbatch(dataset, num_batches=batches)
      examples += len(rows)
      files_read.append({owner[tuple(r["input_ids"])] for r in rows})
    assert files_read == [{0, 2}, {1, 3}]
    # The examples a run of STEPS steps consumes do not depend on how the
    # global batch is split.
    assert examples == STEPS * GLOBAL_BATCH


def test_resume_of_two_pipelines_continues_each_ones_stream(tmp_path):
  make_data(tmp_path, num_files=4, per_file=12)
  fn = pretrain_fixtures.input_fn(make_config(tmp_path), True)
  straight = [unbatch(fn(_context(i)), num_batches=6) for i in range(2)]
  # The trainer sets the global offset: 3 steps of the global batch.
  fn.skip_examples = 3 * GLOBAL_BATCH
  for i in range(2):
    resumed = unbatch(fn(_context(i)), num_batches=3)
    assert len(resumed) == 3 * GLOBAL_BATCH // 2
    for a, b in zip(straight[i][3 * GLOBAL_BATCH // 2:], resumed):
      for name in a:
        np.testing.assert_array_equal(a[name], b[name])


def _worker_command(data_dir, out):
  # As a module of the tests package: run as a script, tests/ would come
  # first on its path and its pretrain/ would hide the project's.
  return [sys.executable, "-m", "tests.multi_worker_count_check",
          str(data_dir), json.dumps(HPARAMS), str(STEPS), str(out)]


def _run_workers(commands, addresses, tmp_path):
  """Runs one command per worker with its TF_CONFIG; returns their npz."""
  procs = []
  for index, command in enumerate(commands):
    tf_config = json.dumps({"cluster": {"worker": addresses},
                            "task": {"type": "worker", "index": index}})
    env = dict(os.environ, TF_CONFIG=tf_config, TF_CPP_MIN_LOG_LEVEL="2")
    procs.append(subprocess.Popen(command, cwd=REPO, env=env,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True))
  try:
    outputs = [p.communicate(timeout=300)[0] for p in procs]
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.communicate()
  for p, output in zip(procs, outputs):
    assert p.returncode == 0, output[-3000:]
  return [np.load(str(tmp_path / ("worker%d.npz" % i)))
          for i in range(len(commands))]


def _check_counts(results, data_dir):
  shards = sorted(tf.io.gfile.glob(os.path.join(
      str(data_dir), "pretrain_tfrecords", "pretrain_data.tfrecord*")))
  owner = _file_of_example(shards)
  per_worker = []
  for index, result in enumerate(results):
    assert int(result["num_input_pipelines"]) == 2
    assert int(result["input_pipeline_id"]) == index
    # The all-reduced count of every step is the global batch.
    assert list(result["global_examples"]) == [GLOBAL_BATCH] * STEPS
    files = collections.Counter(owner[tuple(row)]
                                for row in result["input_ids"])
    per_worker.append(files)
  # Each worker reads half of every global batch, from its own shard file.
  assert per_worker == [{0: STEPS * GLOBAL_BATCH // 2},
                        {1: STEPS * GLOBAL_BATCH // 2}]


def _ip(*args):
  result = subprocess.run(("ip",) + args, capture_output=True, text=True)
  assert result.returncode == 0, (args, result.stderr)


@contextlib.contextmanager
def _two_namespaces():
  """Two network namespaces joined by a veth pair; yields their (names, ips)."""
  tag = "ehp%d" % (os.getpid() % 100000)
  names = [tag + "n0", tag + "n1"]
  subnet = "10.211.%d." % (os.getpid() % 250)
  ips = [subnet + "1", subnet + "2"]
  made = []
  try:
    for name in names:
      _ip("netns", "add", name)
      made.append(name)
    _ip("link", "add", tag + "v0", "type", "veth", "peer", "name", tag + "v1")
    for i, name in enumerate(names):
      veth = tag + "v%d" % i
      _ip("link", "set", veth, "netns", name)
      _ip("-n", name, "addr", "add", ips[i] + "/24", "dev", veth)
      _ip("-n", name, "link", "set", veth, "up")
      _ip("-n", name, "link", "set", "lo", "up")
    yield names, ips
  finally:
    for name in made:  # Deleting a namespace deletes its end of the veth.
      subprocess.run(("ip", "netns", "del", name), capture_output=True)


# Network namespaces need root and iproute2; elsewhere the workers talk over
# localhost. The test id says which ran.
TRANSPORT = ("netns_veth" if shutil.which("ip") and os.geteuid() == 0
             else "localhost")


@pytest.mark.slow
@pytest.mark.parametrize("transport", [TRANSPORT])
def test_two_workers_count_their_examples(tmp_path, transport):
  data_dir = pretrain_fixtures.make_data_dir(tmp_path / "data")
  outs = [tmp_path / ("worker%d.npz" % i) for i in range(2)]
  if transport == "localhost":
    commands = [_worker_command(data_dir, out) for out in outs]
    addresses = ["127.0.0.1:%d" % p for p in _free_ports(2)]
    results = _run_workers(commands, addresses, tmp_path)
  else:
    with _two_namespaces() as (names, ips):
      commands = [["ip", "netns", "exec", name] + _worker_command(data_dir,
                                                                  out)
                  for name, out in zip(names, outs)]
      results = _run_workers(commands, [ip + ":23456" for ip in ips],
                             tmp_path)
  _check_counts(results, data_dir)
