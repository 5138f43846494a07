"""The MFU peak: the user's figure, published GPU peaks, the cached probe."""

import json

import pytest
import tensorflow as tf

from pretrain import flops
from pretrain import peak
from pretrain import reporting


def _counting_measure(value):
  calls = []

  def measure(dtype):
    calls.append(dtype)
    return value
  return measure, calls


def test_peak_tflops_overrides_probe_and_published(tmp_path):
  measure, calls = _counting_measure(5e10)
  got = peak.peak_flops_per_second(2.5, "bfloat16",
                                   cache_path=str(tmp_path / "c.json"),
                                   measure=measure)
  assert got == (2.5e12, "peak_tflops")
  assert not calls and not (tmp_path / "c.json").exists()


def test_probe_is_measured_once_then_read_from_the_cache(tmp_path):
  path = str(tmp_path / "sub" / "peak.json")
  measure, calls = _counting_measure(1.9e11)
  first = peak.peak_flops_per_second(0.0, "float32", cache_path=path,
                                     measure=measure)
  second = peak.peak_flops_per_second(0.0, "float32", cache_path=path,
                                      measure=measure)
  assert first == (1.9e11, "float32 matmul probe")
  assert second == (1.9e11, "float32 matmul probe, cached")
  assert calls == ["float32"]
  with open(path) as f:
    cache = json.load(f)
  (key, entry), = cache.items()
  assert key == peak.cache_key(peak.cpu_name(), "float32")
  assert entry["flops_per_second"] == 1.9e11
  # Another dtype is another key: measured anew, both kept.
  peak.peak_flops_per_second(0.0, "bfloat16", cache_path=path,
                             measure=measure)
  assert calls == ["float32", "bfloat16"]
  with open(path) as f:
    assert len(json.load(f)) == 2


def test_damaged_cache_is_measured_again_and_rewritten(tmp_path):
  path = tmp_path / "peak.json"
  path.write_text("{not json")
  measure, calls = _counting_measure(3e10)
  assert peak.cached_probe_peak("float32", "dev", str(path), measure) == (
      3e10, False)
  assert calls == ["float32"]
  assert json.loads(path.read_text())[peak.cache_key("dev", "float32")][
      "flops_per_second"] == 3e10


def test_default_cache_lives_under_xdg_cache_home(tmp_path, monkeypatch):
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
  assert peak.default_cache_path() == str(
      tmp_path / "electra-hp" / "peak_flops.json")


@pytest.mark.parametrize("name,dtype,tf32,tflops", [
    ("NVIDIA H200", "bfloat16", True, 989.4),
    ("NVIDIA H200 NVL", "bfloat16", True, 835.5),
    ("NVIDIA H100 80GB HBM3", "float32", True, 494.7),
    ("NVIDIA H100 PCIe", "float16", True, 756.0),
    ("NVIDIA A100-SXM4-80GB", "float32", False, 19.5),
    ("NVIDIA A100-SXM4-80GB", "float32", True, 156.0),
    ("NVIDIA L4", "bfloat16", True, 121.0),
    ("Tesla T4", "float32", True, 8.1),   # no TF32 on Turing
    ("Tesla V100-SXM2-16GB", "float16", True, 125.0),
])
def test_published_peaks(name, dtype, tf32, tflops):
  assert peak.published_peak(name, dtype, tf32) == pytest.approx(tflops * 1e12)


@pytest.mark.parametrize("name,dtype", [
    ("Tesla T4", "bfloat16"),       # no bfloat16 tensor cores: probe instead
    ("NVIDIA L40S", "bfloat16"),    # not in the table (and not an L4)
    (None, "float32"),
])
def test_unlisted_devices_have_no_published_peak(name, dtype):
  assert peak.published_peak(name, dtype, True) is None


def test_probe_measures_a_plausible_rate():
  rate = peak.measure_matmul_peak("float32", shapes=((256, 2, 2),))
  assert 1e8 < rate < 1e15


def test_read_bandwidth_is_a_plausible_rate():
  assert 1e8 < peak.measure_read_bandwidth(megabytes=8, repeats=2) < 1e13


@pytest.mark.parametrize("megabytes,repeats", [(0, 2), (8, 0)])
def test_read_bandwidth_refuses_empty_probes(megabytes, repeats):
  with pytest.raises(ValueError, match="megabytes"):
    peak.measure_read_bandwidth(megabytes, repeats)


def test_flops_module_reexports_the_peak():
  assert flops.peak_flops_per_second is peak.peak_flops_per_second


def _cached(path, dtype="float32", device="dev"):
  with open(path) as f:
    return json.load(f)[peak.cache_key(device, dtype)]["flops_per_second"]


def test_a_run_raises_the_cached_probe_but_never_lowers_it(tmp_path):
  path = str(tmp_path / "peak.json")
  peak.cached_probe_peak("float32", "dev", path, lambda dtype: 1e11)
  peak.raise_cached_probe_peak("float32", "dev", 1.5e11, path)
  assert _cached(path) == 1.5e11
  peak.raise_cached_probe_peak("float32", "dev", 1.2e11, path)
  assert _cached(path) == 1.5e11
  # The next run reads the raised figure without measuring.
  assert peak.cached_probe_peak("float32", "dev", path, None) == (1.5e11,
                                                                  True)


def test_only_a_probed_peak_gets_a_raiser(tmp_path):
  path = str(tmp_path / "peak.json")
  assert peak.probe_raiser("peak_tflops", "float32", 1, path) is None
  assert peak.probe_raiser("published NVIDIA H200 bfloat16", "bfloat16", 1,
                           path) is None
  raiser = peak.probe_raiser("float32 matmul probe, cached", "float32", 2,
                             path)
  raiser(3e11)  # two replicas: one replica's share is cached
  assert _cached(path, device=peak.cpu_name()) == 1.5e11


def _window(report, steps_per_sec):
  sums = dict(total_loss=2.0, mlm_loss=1.0, gen_correct=3.0, num_masked=4.0,
              grad_norm=1.0, skipped_steps=0.0)
  report.window(1, 10, sums, 1, (steps_per_sec, 1.0, 1.0))


def test_a_window_above_a_probed_peak_raises_it_and_says_so_once():
  lines, raised = [], []
  report = reporting.ProgressReport(
      lines.append, tf.summary.create_noop_writer(), 8, 1e9, 1e9, False,
      learning_rate=lambda: 1e-3, loss_scale=lambda: 1.0,
      raise_peak=raised.append)
  _window(report, 0.5)
  assert raised == [] and lines[-1].endswith("MFU 50.00%")
  _window(report, 2.0)
  assert raised == [2e9] and lines[-1].endswith("MFU 100.00%")
  assert "above the matmul probe's 0.001" in lines[-2]
  _window(report, 3.0)
  _window(report, 1.5)
  assert raised == [2e9, 3e9] and lines[-1].endswith("MFU 50.00%")
  assert sum("above the matmul probe" in line for line in lines) == 1


def test_a_given_peak_is_kept_even_when_a_window_beats_it():
  lines = []
  report = reporting.ProgressReport(
      lines.append, tf.summary.create_noop_writer(), 8, 1e9, 1e9, False,
      learning_rate=lambda: 1e-3, loss_scale=lambda: 1.0)
  _window(report, 2.0)
  assert lines[-1].endswith("MFU 200.00%") and len(lines) == 1


def test_an_unwritable_cache_is_one_warning_never_an_error(tmp_path, capsys):
  """A read-only or missing home (here: the cache's folder is a file) runs
  without the cache, warned once."""
  (tmp_path / "home").write_text("a file, not a folder")
  path = str(tmp_path / "home" / "electra-hp" / "peak.json")
  for _ in range(2):
    flops, cached = peak.cached_probe_peak("float32", "cpu", cache_path=path,
                                           measure=lambda dtype: 2e9)
    assert (flops, cached) == (2e9, False)
  out = capsys.readouterr().out
  assert out.count("cannot be written") == 1 and path in out
