"""SentencePiece end to end, with no WordPiece anywhere (issue 32).

One data directory D, as a user makes it: build_vocab.py --model-type
unigram writes D/sentencepiece.model from a multilingual corpus (accented
Latin, Cyrillic, CJK, emoji; tests/sentencepiece_fixtures.py), then
build_pretraining_dataset.py, run_pretraining.py, run_finetuning.py on a
small classification task and export_model.py --task run on D without a
vocabulary flag: each finds D's sentencepiece.model (the fine-tuning and
the export through the model's config.json). The SavedModel is served on
raw text in a fresh process: its ids equal the fine-tuning pipeline's,
its probabilities the Keras model's within 1e-5, and no character the
model covers or spells as bytes becomes [UNK]. A tiny model and a few
steps, every entry point but the serving called in this process.

Mismatches are one `error:` line and exit 2 naming both files.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import build_pretraining_dataset
import configure
import export_model
import run_finetuning
import run_pretraining
from finetune import finetuned_model
from interop import convert
from interop import saved_config
from text import tokenization
from tests import interop_fixtures as ix
from tests import pretrain_fixtures as pf
from tests import sentencepiece_fixtures as spf

TOL = 1e-5
SEQ_LEN = 32
# One layer, G sharing D's transformer: the least graph to trace (tracing
# is most of the time), two steps.
PRETRAIN_HPARAMS = dict(
    pf.RUNNER_HPARAMS, max_seq_length=SEQ_LEN, num_train_steps=2,
    iterations_per_loop=2, save_checkpoints_steps=2, train_batch_size=4,
    peak_tflops=1.0, untied_generator=False, generator_hidden_size=1.0,
    model_hparam_overrides=dict(hidden_size=32, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=64))
FINETUNE_HPARAMS = dict(task_names=["sst"], max_seq_length=SEQ_LEN,
                        train_batch_size=4, eval_batch_size=4,
                        num_train_epochs=1.0, learning_rate=1e-3, log_every=4)
# The dev texts: every script of the corpus, and characters it lacks that
# byte fallback spells as bytes (tabs would split a TSV row).
DEV_TEXTS = tuple(spf.SCRIPTS.values()) + tuple(
    t for t in spf.TEXTS if "\t" not in t)


def _write_sst(data_dir):
  """D/finetuning_data/sst/{train,dev}.tsv: the corpus' lines and
  DEV_TEXTS with alternating labels."""
  directory = os.path.join(data_dir, "finetuning_data", "sst")
  os.makedirs(directory, exist_ok=True)
  train = [line for line in spf.CORPUS_LINES if line]
  for name, texts in (("train.tsv", train), ("dev.tsv", DEV_TEXTS)):
    rows = ["sentence\tlabel"] + ["%s\t%d" % (text, i % 2)
                                  for i, text in enumerate(texts)]
    with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
      f.write("\n".join(rows) + "\n")


def _args(data_dir, hparams, model_name="M"):
  return ["--data-dir", data_dir, "--model-name", model_name,
          "--hparams", json.dumps(hparams)]


def _pretrain(data_dir):
  """run_pretraining.py in this process; its checkpointed dropout (a
  process-wide setting) is switched off again after it."""
  try:
    assert run_pretraining.main(_args(data_dir, PRETRAIN_HPARAMS)) == 0
  finally:
    tf_keras.backend.experimental.disable_tf_random_generator()


def _export_and_serve(root, data_dir):
  """Exports the fine-tuned sst model (no --sentencepiece-model) and serves
  DEV_TEXTS in a fresh process; returns the served arrays."""
  out, result = str(root / "served"), str(root / "served.npz")
  assert export_model.main(_args(data_dir, {}) + [
      "--task", "sst", "--format", "saved_model", "--output", out]) == 0
  ix.serve([dict(saved_model=out, result=result,
                 inputs=dict(text=list(DEV_TEXTS)))], root / "jobs.json")
  return dict(np.load(result))


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
  root = tmp_path_factory.mktemp("sentencepiece_e2e")
  model_file = spf.train(root, "unigram")  # build_vocab.py's main.
  data_dir = os.path.dirname(model_file)
  assert build_pretraining_dataset.main([
      "--corpus-dir", str(root / "corpus"), "--sentencepiece-model",
      model_file, "--output-dir", os.path.join(data_dir, "pretrain_tfrecords"),
      "--max-seq-length", str(SEQ_LEN), "--num-shards", "1"]) == 0
  _write_sst(data_dir)
  _pretrain(data_dir)
  results = run_finetuning.main(_args(data_dir, FINETUNE_HPARAMS))
  assert "sst" in results
  served = _export_and_serve(root, data_dir)
  return dict(root=root, data_dir=data_dir, model_file=model_file,
              served=served)


def _read_json(*parts):
  with open(os.path.join(*parts), encoding="utf-8") as f:
    return json.load(f)


def test_every_stage_reads_the_data_directorys_sentencepiece_model(pipeline):
  data_dir, model_file = pipeline["data_dir"], pipeline["model_file"]
  model_dir = os.path.join(data_dir, "models", "M")
  manifest = _read_json(data_dir, "pretrain_tfrecords", "manifest.json")
  for config in (_read_json(model_dir, "config.json"),
                 _read_json(model_dir, "finetuning_models", "sst",
                            "config.json")):
    assert config["vocab_file"] == model_file
    assert config["vocab_kind"] == "sentencepiece"
    assert config["vocab_size"] == 400
    assert config["vocab_fingerprint"] == (
        manifest["settings"]["vocab_fingerprint"])
  assert not os.path.exists(os.path.join(data_dir, "vocab.txt"))
  # The pre-trained model's exports find it in its config.json too.
  config = convert.pretraining_config("M", data_dir, saved_config.saved_hparams(
      _read_json(model_dir, "config.json"), configure.PRETRAIN_FIELDS))
  assert export_model.sentencepiece_model_of(None, config) == model_file


def test_served_ids_and_outputs_equal_the_finetuning_pipelines(pipeline):
  data_dir, served = pipeline["data_dir"], pipeline["served"]
  model, task, _ = finetuned_model.load_finetuned(
      os.path.join(data_dir, "models", "M"), data_dir, "sst",
      log=lambda _: None)
  dev = task.load("dev")
  assert [e.text_a for e in dev.examples] == list(DEV_TEXTS)
  for key in ("input_ids", "input_mask", "segment_ids"):
    np.testing.assert_array_equal(served[key], dev.features[key],
                                  err_msg=key)
  logits = model(dev.features, training=False)["logits"]
  want = tf.nn.softmax(logits).numpy()
  assert np.abs(served["probabilities"] - want).max() < TOL
  np.testing.assert_array_equal(served["label_id"], np.argmax(want, -1))


def test_no_unk_and_a_piece_of_every_script(pipeline):
  ids = pipeline["served"]["input_ids"]
  tokenizer = tokenization.tokenizer_for(pipeline["data_dir"])
  assert tokenizer.unk_id not in ids
  for row, script in enumerate(spf.SCRIPTS):
    pieces = tokenizer.convert_ids_to_tokens(ids[row][ids[row] > 0])
    assert any(not p.startswith("<0x") and p.strip("\u2581") and
               p not in tokenization.SPECIAL_TOKENS for p in pieces), script
  # Greek and "ƒ" are not in the corpus: byte pieces, never [UNK].
  greek = tokenizer.convert_ids_to_tokens(ids[DEV_TEXTS.index(spf.TEXTS[4])])
  assert "<0xCE>" in greek


def _other_data_dir(pipeline, name, vocabulary):
  """A data directory holding `vocabulary` (copied) and the sst task."""
  data_dir = str(pipeline["root"] / name)
  os.makedirs(data_dir)
  shutil.copy(vocabulary, os.path.join(data_dir, os.path.basename(
      vocabulary)))
  _write_sst(data_dir)
  return data_dir


@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece"])
def test_finetuning_with_another_vocabulary_is_refused(pipeline, capsys,
                                                       kind):
  if kind == "wordpiece":
    vocabulary = str(pipeline["root"] / "vocab.txt")
    ix.write_vocab(vocabulary)
  else:
    vocabulary = spf.train(pipeline["root"] / "bpe", "bpe")
  data_dir = _other_data_dir(pipeline, "other_" + kind, vocabulary)
  source = os.path.join(pipeline["data_dir"], "models", "M")
  line = spf.one_error_line(capsys, run_finetuning.main, _args(
      data_dir, dict(FINETUNE_HPARAMS, init_checkpoint=source)))
  assert os.path.join(data_dir, os.path.basename(vocabulary)) in line
  assert pipeline["model_file"] in line


def test_pretraining_on_shards_of_another_model_is_refused(pipeline, capsys):
  other = spf.train(pipeline["root"] / "bpe_shards", "bpe")
  data_dir = _other_data_dir(pipeline, "other_shards", other)
  shutil.copytree(os.path.join(pipeline["data_dir"], "pretrain_tfrecords"),
                  os.path.join(data_dir, "pretrain_tfrecords"))
  line = spf.one_error_line(capsys, run_pretraining.main,
                            _args(data_dir, PRETRAIN_HPARAMS))
  assert "manifest.json" in line and pipeline["model_file"] in line
  assert os.path.join(data_dir, "sentencepiece.model") in line


def test_an_export_flag_naming_another_model_is_refused(pipeline, capsys):
  other = spf.train(pipeline["root"] / "bpe_export", "bpe")
  line = spf.one_error_line(capsys, export_model.main, _args(
      pipeline["data_dir"], {}) + [
          "--format", "saved_model", "--output",
          str(pipeline["root"] / "refused"), "--sentencepiece-model", other])
  assert other in line and pipeline["model_file"] in line


@pytest.mark.parametrize("script", [run_pretraining, run_finetuning])
def test_a_data_dir_with_both_vocabularies_is_refused(pipeline, capsys,
                                                      script):
  data_dir = _other_data_dir(pipeline, "both_" + script.__name__,
                             pipeline["model_file"])
  ix.write_vocab(os.path.join(data_dir, "vocab.txt"))
  line = spf.one_error_line(capsys, script.main, _args(data_dir, {}))
  assert os.path.join(data_dir, "vocab.txt") in line
  assert os.path.join(data_dir, "sentencepiece.model") in line
