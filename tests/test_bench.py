"""The benchmarks run at tiny sizes: the peer, the input pipeline, gpu.sh."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bench import compare_peer
from bench import cpu_kernels
from bench import harness
from bench import input_pipeline
from bench import matmul_floor
from bench import peer as peer_lib
from bench import profile_step
from tests import pretrain_fixtures
from tests import paths

REPO = paths.REPO
_TINY_HPARAMS = {"max_predictions_per_seq": 4}


def _tiny_config(mode="mlm", **hparams):
  return harness.make_config("tiny", mode, 2, 32, 64, "float32",
                             hparams=dict(_TINY_HPARAMS, **hparams))


def _params(model, skip=()):
  return sum(int(np.prod(v.shape)) for v in model.trainable_variables
             if not any(s in v.name for s in skip))


@pytest.fixture(scope="module")
def tiny_runners():
  """(ours in mode mlm, the peer), tiny, built once for the module."""
  config = _tiny_config()
  return harness.ours(config), harness.peer(config)


def test_peer_has_our_shapes_and_a_finite_loss(tiny_runners):
  ours, peer = tiny_runners
  config = peer.config
  batch = harness.make_batches(config, 1)[0]
  assert np.isfinite(float(peer_lib.PeerModel(config).loss(batch)))
  # Beyond ours, the peer has BERT's pooler and a next-sentence head (both
  # unused by its loss), and its generator shares only the word embeddings
  # of the discriminator (ours, as ELECTRA, shares position and token-type
  # embeddings and their LayerNorm too).
  extras = ("pooler_transform", "generator_classification_head")
  m = config.network_hparams()
  unshared = m["embedding_size"] * (m["max_position_embeddings"] +
                                    m["type_vocab_size"] + 2)
  assert _params(peer.model, extras) == _params(ours.model) + unshared


def test_step_runner_trains_the_peer(tiny_runners):
  runner = tiny_runners[1]
  before = [v.numpy().copy() for v in runner.model.trainable_variables]
  wall, cpu = runner.run(harness.make_batches(runner.config), 2)
  assert wall > 0 and cpu >= 0
  changed = [not np.array_equal(b, v.numpy()) for b, v in
             zip(before, runner.model.trainable_variables)]
  assert sum(changed) > len(changed) // 2


def test_interleaved_timing_has_one_entry_per_round(tiny_runners):
  times = harness.time_interleaved(
      tiny_runners, harness.make_batches(tiny_runners[0].config), rounds=2,
      steps=1)
  for name in ("mlm", "peer"):
    assert len(times[name]["wall"]) == 2 and min(times[name]["wall"]) > 0
    assert times[name]["device_peak"] is None  # no GPU here


def test_max_batch_search_doubles_up_to_the_limit(tiny_runners):
  runner = tiny_runners[0]
  assert harness.find_max_batch(runner, 2, 8, 600) == (8, "limit")
  assert harness.find_max_batch(runner, 2, 8, 0) == (None, "time cap")


def test_report_table_shows_rows_and_skipped_configurations(tmp_path):
  row = dict(model="hp_loss", size="small", seq_len=128, batch_size=16,
             dtype="float32", jit=False, s_per_step=1.25, spread=3.0,
             seq_per_s=12.8, vs_peer=1.2, mfu_probe=30.0, mfu_published=None,
             memory_mib=900.0, max_batch=64, max_batch_stop="time cap",
             device="cpu x2", tf_version="2.20.0")
  skipped = dict(size="base", seq_len=512, batch_size=32, dtype="float32",
                 jit=False, skipped="time budget spent")
  path = tmp_path / "r.jsonl"
  path.write_text(json.dumps(row) + "\n" + json.dumps(skipped) + "\n")
  table = compare_peer.format_table(compare_peer._read_report(str(path)))
  header, line = table.splitlines()[:2]
  assert header.split()[:3] == ["model", "size", "seq"]
  assert "1.2500" in line and "1.20x" in line and ">=64" in line
  assert "skipped: base seq 512 batch 32 float32: time budget spent" in table


def test_report_of_a_bad_file_is_a_user_error(tmp_path):
  path = tmp_path / "r.jsonl"
  path.write_text("not json\n")
  with pytest.raises(compare_peer.UserError, match="line 1 is not JSON"):
    compare_peer._read_report(str(path))


def test_input_pipeline_rate_and_feed_ratio(tmp_path, capsys):
  data = pretrain_fixtures.make_data_dir(tmp_path, num_examples=40)
  per_second, per_cpu = input_pipeline.time_input_fn(data, 32, 8, 3, 1)
  assert per_second > 0 and per_cpu > 0
  assert input_pipeline.main(["--data-dir", data, "--seq-len", "32",
                              "--batch-size", "8", "--batches", "3",
                              "--step-seconds", "2", "--step-batch", "4"]) == 0
  out = capsys.readouterr().out
  assert "train step: 2.0 examples/s (batch 4 at 2 s/step)" in out


def test_gpu_script_runs_tiny_on_cpu(tmp_path):
  env = dict(os.environ, BENCH_TINY="1", BENCH_DIR=str(tmp_path),
             TF_CPP_MIN_LOG_LEVEL="2", PYTHON=sys.executable)
  proc = subprocess.run(["bash", "bench/gpu.sh"], cwd=REPO, env=env,
                        capture_output=True, text=True, timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  with open(tmp_path / "gpu_bench.jsonl") as f:
    rows = [json.loads(line) for line in f]
  assert not [r for r in rows if "skipped" in r], rows
  got = {(r["model"], r["dtype"], r["jit"]) for r in rows}
  assert got == {(m, d, j) for m in ("hp_loss", "peer") for d, j in
                 (("mixed_bfloat16", True), ("float32", False))}
  for r in rows:
    assert r["seq_per_s"] > 0 and r["mfu_probe"] > 0 and r["vs_peer"] > 0
    if r["dtype"] == "mixed_bfloat16":  # the max-batch search ran
      assert r["max_batch_stop"] in ("limit", "time cap", "oom")
  assert "MFU published" in proc.stdout and "skipped" not in proc.stdout


def test_exclusive_times_subtract_nested_events():
  # a [0, 10) holds b [2, 5) and c [5, 9); c holds d [6, 7); e [10, 12) after.
  events = [("a", 0, 10), ("b", 2, 3), ("c", 5, 4), ("d", 6, 1),
            ("e", 10, 2)]
  assert dict(profile_step.exclusive_times(events)) == {
      "a": 3, "b": 3, "c": 3, "d": 1, "e": 2}


def test_op_names_are_grouped_by_part_and_type():
  assert profile_step.model_part(
      "gradient_tape/discriminator/encoder/layer_0/einsum/Einsum_1:Einsum") == (
          "D backward")
  assert profile_step.model_part("generator/mlm/Softmax:Softmax") == (
      "G forward")
  assert profile_step.model_part(
      "AdamWeightDecay/AdamWeightDecay/update_3/ResourceApplyAdam:"
      "ResourceApplyAdam") == "optimizer"
  assert profile_step.model_part("fusion.3") == "XLA-compiled (no name scope)"
  assert profile_step.op_type("a/b/Einsum_1:Einsum") == "Einsum"
  assert profile_step.op_type("iota_reduce_fusion.12.clone") == (
      "xla iota_reduce_fusion")


def test_profile_step_breaks_a_tiny_step_down(tmp_path, capsys):
  out = tmp_path / "profile.json"
  assert profile_step.main([
      "--size", "tiny", "--mode", "hp_loss", "--batch-size", "2",
      "--seq-len", "32", "--vocab-size", "64", "--steps", "2",
      "--hparams", json.dumps(_TINY_HPARAMS), "--logdir", str(tmp_path / "t"),
      "--json", str(out)]) == 0
  with open(out) as f:
    result = json.load(f)
  parts = dict(result["by_part"])
  # Every part of the step shows up, and the groupings add up to the total.
  for part in ("D forward", "D backward", "G forward", "G backward",
               "optimizer"):
    assert parts.get(part, 0) > 0, parts
  for key in ("by_part", "by_type", "by_op"):
    assert sum(ms for _, ms in result[key]) == pytest.approx(
        result["total_ms"], rel=1e-6)
  assert dict(result["by_type"]).get("Einsum", 0) > 0
  assert result["untraced_s_per_step"] > 0
  assert "by part of the step" in capsys.readouterr().out


def test_matmul_floor_counts_flops_of_each_op_kind():
  key = matmul_floor.OpKey
  assert matmul_floor.op_flops(key("MatMul", ((6, 4), (5, 4)), "float32", (
      ("transpose_a", False), ("transpose_b", True)))) == 2 * 6 * 4 * 5
  assert matmul_floor.op_flops(key("MatMul", ((4, 6), (4, 5)), "float32", (
      ("transpose_a", True), ("transpose_b", False)))) == 2 * 6 * 4 * 5
  assert matmul_floor.op_flops(key("BatchMatMulV2", ((3, 1, 6, 4), (
      7, 5, 4)), "float32", (("adj_x", False), ("adj_y", True)))) == (
          2 * 3 * 7 * 6 * 4 * 5)
  assert matmul_floor.op_flops(key("Einsum", ((2, 8, 4, 16), (2, 8, 4, 16)),
                                   "bfloat16", (("equation",
                                                 "aecd,abcd->acbe"),))) == (
                                                     2 * 2 * 8 * 4 * 16 * 8)
  assert matmul_floor.op_flops(key("Einsum", ((3, 2, 8, 4), (4, 5)),
                                   "float32", (("equation",
                                                "...d,de->...e"),))) == (
                                                    2 * 3 * 2 * 8 * 4 * 5)


@pytest.mark.parametrize("mode", ["mlm", "hp_loss", "hp_dist", "peer"])
def test_matmul_floor_finds_the_flops_pretrain_flops_counts(mode):
  """The matmuls of the traced step add up to pretrain/flops.py's count
  (the rest: the one-hot segment embedding and the RTD head's last dense
  layer, under 1%). The vocabulary is large enough that a head's backward
  pass (two products the size of its forward one) counted or not (HP-Loss's
  scores have none) is over 5% of the total."""
  config = harness.make_config("tiny", "mlm" if mode == "peer" else mode, 2,
                               32, 2000, "float32", hparams=_TINY_HPARAMS)
  runner = (harness.peer if mode == "peer" else harness.ours)(config)
  graph = runner.step.get_concrete_function(
      harness.make_batches(config, 1)[0]).graph
  counted = sum(count * matmul_floor.op_flops(key) for key, count in
                matmul_floor.matmul_ops(graph).items())
  analytic = pretrain_fixtures.step_flops(config)
  assert counted == pytest.approx(analytic, rel=0.01)
  head = 2 * 4 * 2 * 16 * 2000  # one [batch x P, emb] x [emb, vocab] pass
  assert 2 * head > 0.05 * analytic


def test_matmul_floor_times_a_tiny_step(tmp_path, capsys):
  out = tmp_path / "floor.json"
  assert matmul_floor.main([
      "--size", "tiny", "--mode", "hp_loss", "--batch-size", "2",
      "--seq-len", "32", "--vocab-size", "64", "--calls", "2", "--rounds",
      "2", "--step-rounds", "1", "--probe-tflops", "0.5", "--read-gbs",
      "2", "--top", "3", "--json", str(out)]) == 0
  result = json.loads(out.read_text())
  rows = result["rows"]
  assert len(rows) == result["distinct_ops"]
  assert sum(r["count"] for r in rows) == result["ops"] > 0
  assert sum(r["total_ms"] for r in rows) == pytest.approx(
      1e3 * result["floor_s"])
  assert all(r["min_ms"] <= r["median_ms"] <= r["max_ms"] for r in rows)
  assert all(r["best_ms"] == min(r["median_ms"], r["side_by_side_ms"])
             for r in rows)
  assert result["floor_s"] <= result["in_a_row_s"]
  assert result["floor_s"] > 0 and result["step_s"] > 0
  assert result["mfu_ceiling"] == pytest.approx(
      100 * result["analytic_flops"] / result["floor_s"] / 0.5e12)
  params = _params(harness.ours(harness.make_config(
      "tiny", "hp_loss", 2, 32, 64, "float32")).model)
  assert result["update_bytes"] == 4 * 7 * params
  assert result["update_floor_s"] == pytest.approx(
      result["update_bytes"] / 2e9)
  assert result["mfu_ceiling_with_update"] == pytest.approx(
      100 * result["analytic_flops"] /
      (result["floor_s"] + result["update_floor_s"]) / 0.5e12)
  assert result["mfu_ceiling_with_update"] < result["mfu_ceiling"]
  printed = capsys.readouterr().out
  assert "MFU ceiling" in printed and "update floor" in printed


def test_update_bytes_count_each_variable_at_its_width():
  variables = [tf.Variable(tf.zeros([3, 4])),
               tf.Variable(tf.zeros([5], tf.float64))]
  assert matmul_floor.update_bytes(variables) == (12 * 4 + 5 * 8) * 7


@pytest.mark.parametrize("flag", ["--read-gbs", "--probe-tflops"])
def test_matmul_floor_refuses_a_rate_of_zero(flag):
  with pytest.raises(matmul_floor.UserError, match=flag):
    matmul_floor.main([flag, "0"])


def test_matmul_floor_times_each_call_of_an_op():
  """Per call, 8 calls take about what 2 do, in a row and side by side:
  none is merged with or pruned for another. A matmul of 8x the
  FLOPs takes longer: the call's own overhead is taken out, not the op."""
  key = matmul_floor.OpKey
  small = key("MatMul", ((128, 128), (128, 128)), "float32", ())
  large = key("MatMul", ((256, 256), (256, 256)), "float32", ())
  for side_by_side in (False, True):
    two, eight = (np.median(matmul_floor.time_op(large, calls, 7,
                                                 side_by_side))
                  for calls in (2, 8))
    assert 0.4 < eight / two < 2.5, side_by_side
    assert eight > np.median(matmul_floor.time_op(small, 8, 7,
                                                  side_by_side)) > 0


class _RunnerThatFits(object):
  """A stand-in runner whose step fails above `fits` examples."""

  def __init__(self, fits, error):
    self.config, self.fits, self.error = _tiny_config(), fits, error

  def run(self, batches, unused_steps):
    if int(batches[0]["input_ids"].shape[0]) > self.fits:
      raise self.error


@pytest.mark.parametrize("error", [
    harness.tf.errors.ResourceExhaustedError(None, None, "OOM"),
    harness.tf.errors.InternalError(None, None, "RESOURCE_EXHAUSTED: xla"),
])
def test_max_batch_search_stops_at_out_of_memory(error):
  assert harness.find_max_batch(_RunnerThatFits(5, error), 1, 1024, 600) == (
      4, "oom")


def test_max_batch_search_raises_other_errors():
  error = harness.tf.errors.InternalError(None, None, "a real bug")
  with pytest.raises(harness.tf.errors.InternalError):
    harness.find_max_batch(_RunnerThatFits(5, error), 1, 1024, 600)


def test_cpu_kernels_times_every_variant(tmp_path, capsys):
  out = tmp_path / "kernels.json"
  assert cpu_kernels.main([
      "--batch-size", "2", "--seq-len", "8", "--width", "16",
      "--predictions", "3", "--vocab-size", "300", "--rounds", "2",
      "--calls", "2", "--json", str(out)]) == 0
  rows = json.loads(out.read_text())["rows"]
  both = ("xla", "tensorflow")
  assert sorted((r["case"], r["variant"]) for r in rows) == sorted(
      [(case, v) for case in ("bias grad float32", "bias grad bfloat16",
                              "vocab max", "argmax") for v in both] +
      [("draw", "inverse CDF (ours)"), ("draw", "Gumbel-max")])
  assert all(r["median_ms"] > 0 and r["spread"] >= 0 for r in rows)
  assert "inverse CDF (ours)" in capsys.readouterr().out


def test_cpu_kernels_gumbel_reference_draws_the_same_distribution():
  """The bench's Gumbel-max reference and our draw agree in distribution
  (so the bench compares two ways of one draw)."""
  from model import sampling  # pylint: disable=g-import-not-at-top
  probs = np.array([0.5, 0.3, 0.15, 0.05])
  log_probs = tf.constant(np.tile(np.log(probs), [400, 50, 1]), tf.float32)
  seeds = tf.stack([tf.range(400), tf.fill([400], 3)], axis=1)
  for draw in (cpu_kernels.gumbel_max_sample, sampling.categorical_sample):
    counts = np.bincount(draw(log_probs, seeds).numpy().ravel(), minlength=4)
    np.testing.assert_allclose(counts / counts.sum(), probs, atol=0.015)
