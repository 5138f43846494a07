"""bench/serving.py at a tiny size: a tiny classifier fine-tuned on the sst
fixtures, exported and served by every side (our SavedModel and TFLite
float and INT8, transformers and its dynamic INT8) on the fixture
sentences."""

import importlib.util
import json
import os

import pytest

from bench import serving
from finetune import runner
from tests import finetune_fixtures as ff
from util.errors import UserError

DEV_TSV = os.path.join(ff.FIXTURE_DIR, "finetuning_data", "sst", "dev.tsv")
_ROW_KEYS = ("batch_size", "sentences_per_s", "spread", "p50_ms", "p99_ms",
             "tokenize_ms", "model_ms", "tokenize_share", "padded_length",
             "rounds_sentences_per_s", "calls_s", "accuracy", "size_mb",
             "peak_rss_mb")
_HAS_TRANSFORMERS = all(importlib.util.find_spec(name) is not None
                        for name in ("torch", "transformers"))


def _args(model_dir, tmp_path, *extra):
  return ["--data-dir", ff.FIXTURE_DIR, "--model-name", "tiny",
          "--model-dir", str(model_dir), "--task", "sst", "--tsv", DEV_TSV,
          "--batch-sizes", "1,4", "--rounds", "1", "--threads", "1",
          "--work-dir", str(tmp_path / "work"),
          "--json", str(tmp_path / "serving.json")] + list(extra)


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
  model_dir = tmp_path_factory.mktemp("serving") / "model"
  runner.run_finetuning(ff.tiny_config(model_dir=model_dir,
                                       task_names=["sst"]))
  return model_dir


@pytest.mark.skipif(not _HAS_TRANSFORMERS, reason="needs torch and "
                    "transformers (requirements-test.txt)")
def test_serving_bench_times_both_sides_and_they_agree(finetuned, tmp_path,
                                                       capsys):
  assert serving.main(_args(finetuned, tmp_path)) == 0
  with open(tmp_path / "serving.json") as f:
    result = json.load(f)
  sentences = serving.read_sentences(DEV_TSV, "sentence")
  assert result["num_sentences"] == len(sentences) > 4
  for side in serving.SIDES:
    rows = result["rows"][side]
    assert [row["batch_size"] for row in rows] == [1, 4]
    for row in rows:
      assert set(_ROW_KEYS) <= set(row), row
      assert row["sentences_per_s"] > 0
      assert row["p99_ms"] >= row["p50_ms"] > 0
      assert 0 <= row["accuracy"] <= 1
      assert row["size_mb"] > 0 and row["peak_rss_mb"] > 0
      assert len(row["calls_s"]["e2e"]) == -(-len(sentences) //
                                             row["batch_size"])
      if side.startswith("ours_tflite"):  # the tokenizer is inside
        assert row["tokenize_ms"] is None and row["padded_length"] is None
      else:
        assert row["model_ms"] > 0 and 0 < row["tokenize_share"] < 100
  # Ours pads to max_seq_length; transformers to the longest sentence.
  assert {r["padded_length"] for r in result["rows"]["ours"]} == {32}
  assert max(r["padded_length"] for r in result["rows"]["transformers"]) < 32
  assert result["labels"]["ours"] == result["labels"]["transformers"]
  assert result["labels_agree"] == len(sentences)
  assert result["labels"]["ours_tflite"] == result["labels"]["ours"]
  assert set(result["ours_vs_transformers"]) == {"1", "4"}
  assert set(result["ratios"]) == {"/".join(p) for p in serving.RATIOS}
  assert result["versions"]["transformers"].startswith("transformers ")
  assert "qint8" in result["versions"]["transformers_int8"]
  sizes = {side: result["rows"][side][0]["size_mb"] for side in serving.SIDES}
  assert sizes["ours_tflite_int8"] < sizes["ours_tflite"]
  table = capsys.readouterr().out
  assert "| ours | 1 |" in table and "| transformers | 4 |" in table
  assert "| ours_tflite_int8 | 4 |" in table
  assert "| transformers_int8 | 1 |" in table
  assert "agree on %d of %d" % ((len(sentences),) * 2) in table
  assert os.path.isdir(tmp_path / "work" / "hf")


def test_without_transformers_it_says_how_to_install(monkeypatch):
  real = importlib.util.find_spec
  monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: (
      None if name == "torch" else real(name, *a)))
  with pytest.raises(UserError, match=r"lacks \(torch\).*pip install"):
    serving.check_transformers()


def test_bad_sentences_and_flags_are_user_errors(tmp_path):
  with pytest.raises(UserError, match="no column 'text'"):
    serving.read_sentences(DEV_TSV, "text")
  with pytest.raises(UserError, match="cannot read --tsv"):
    serving.read_sentences(str(tmp_path / "missing.tsv"), "sentence")
  assert serving.read_sentences(DEV_TSV, "sentence", 2) == [
      "the film was great .", "a bad movie"]
  with pytest.raises(UserError, match="--batch-sizes"):
    serving.parse_args(["--data-dir", "d", "--model-name", "m", "--task",
                        "sst", "--batch-sizes", "1,x"])
  with pytest.raises(UserError, match="--rounds"):
    serving.parse_args(["--data-dir", "d", "--model-name", "m", "--task",
                        "sst", "--rounds", "0"])
