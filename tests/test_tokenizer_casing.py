"""One casing truth: what a vocabulary implies, what a released folder's
tokenizer files say, the shards' manifest against the model at
pre-training, and the [UNK] share of a task's training text at
fine-tuning (text/casing.py, interop/hf_tokenizer.py, run_pretraining.py,
finetune/unknown_tokens.py)."""

import json
import os
import shutil

import numpy as np
import pytest

from finetune import unknown_tokens
from interop import hf_tokenizer
from tests import finetune_fixtures as ff
from tests import paths
from tests import pretrain_fixtures as pf
from tests.test_faults import assert_refused
from tests.test_faults import run
from text import casing
from util.errors import UserError

_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.mark.parametrize("letters, lower", [
    ("ACDEFGHIKLMNPQRSTVWY", False),  # A protein model's residues.
    ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", False),
    ("abcdefghijklmnopqrstuvwxyz", True),
    ("0123456789", True)])
def test_casing_inferred_from_the_vocabulary(letters, lower):
  tokens = _SPECIAL + list(letters) + ["##" + c for c in letters]
  assert casing.infer_lower_case(tokens)[0] is lower


def _folder(tmp_path, tokens, **files):
  folder = tmp_path / "model"
  folder.mkdir()
  if tokens is not None:
    (folder / "vocab.txt").write_text("\n".join(tokens) + "\n")
  for name, value in files.items():
    (folder / (name + ".json")).write_text(json.dumps(value))
  return str(folder)


def test_tokenizer_config_then_tokenizer_json_then_the_vocabulary(tmp_path):
  cased = _SPECIAL + list("abcABC")
  folder = _folder(tmp_path, cased, tokenizer_config=dict(
      do_lower_case=True, strip_accents=False, model_max_length=64))
  facts = hf_tokenizer.tokenizer_of([folder])
  assert (facts.do_lower_case, facts.strip_accents,
          facts.model_max_length) == (True, False, 64)
  assert facts.notes == []

  shutil.rmtree(folder)
  normalizer = dict(type="BertNormalizer", lowercase=False, strip_accents=None)
  folder = _folder(tmp_path, None, tokenizer=dict(
      normalizer=dict(type="Sequence", normalizers=[normalizer]),
      model=dict(type="WordPiece", vocab={t: i for i, t in enumerate(cased)})))
  facts = hf_tokenizer.tokenizer_of([folder])
  assert facts.do_lower_case is False
  with open(facts.vocab_file) as f:
    assert f.read().split() == cased
  assert "tokenizer.json" in facts.notes[0]

  shutil.rmtree(folder)
  folder = _folder(tmp_path, cased)
  facts = hf_tokenizer.tokenizer_of([folder])
  assert facts.do_lower_case is False
  assert "both cases of 3 of its 3 lower-case letters" in facts.notes[0]


def test_a_vocabulary_in_the_folder_above_is_used_and_said(tmp_path):
  (tmp_path / "vocab.txt").write_text("\n".join(_SPECIAL + ["A", "C"]))
  (tmp_path / "model").mkdir()
  facts = hf_tokenizer.tokenizer_of([str(tmp_path / "model")])
  assert facts.vocab_file == str(tmp_path / "vocab.txt")
  assert facts.do_lower_case is False
  assert "the folder above it" in facts.notes[0]


def test_other_special_tokens_are_refused(tmp_path):
  folder = _folder(tmp_path, _SPECIAL, special_tokens_map=dict(
      cls_token="<s>", sep_token="</s>"))
  with pytest.raises(UserError, match=r"cls_token '<s>' \(ours \[CLS\]\)"):
    hf_tokenizer.tokenizer_of([folder])


def test_the_builder_names_the_casing_flag(tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(_SPECIAL + ["THE", "FILM", "IS", "GOOD"]))
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  (corpus / "a.txt").write_text("THE FILM IS GOOD\nTHE FILM\n\nIS GOOD\n")
  code, err = run("build_pretraining_dataset.py", "--corpus-dir",
                  str(corpus), "--vocab-file", str(vocab), "--output-dir",
                  str(tmp_path / "out"), "--max-seq-length", "16")
  assert_refused(code, err, "the text is lower-cased but the vocabulary is "
                 "cased", "build with --no-do-lower-case")


def _cased_shards(root):
  """A data directory whose shards the builder made with
  --no-do-lower-case (its manifest records it)."""
  data = pf.make_data_dir(root)
  shutil.rmtree(os.path.join(data, "pretrain_tfrecords"))
  corpus = os.path.join(data, "corpus")
  os.makedirs(corpus)
  words = ["word%d" % i for i in range(pf.RUNNER_NUM_WORDS)]
  rng = np.random.default_rng(0)
  with open(os.path.join(corpus, "text.txt"), "w") as f:
    for _ in range(60):
      f.write(" ".join(rng.choice(words, 12)) + "\n\n")
  code, err = run("build_pretraining_dataset.py", "--corpus-dir", corpus,
                  "--vocab-file", os.path.join(data, "vocab.txt"),
                  "--output-dir", os.path.join(data, "pretrain_tfrecords"),
                  "--max-seq-length", "32", "--num-shards", "2",
                  "--no-do-lower-case")
  assert code == 0, err[-3000:]
  return data


def _pretrain(data, model_name, **hparams):
  values = dict(pf.RUNNER_HPARAMS, num_train_steps=0, **hparams)
  return run("run_pretraining.py", "--data-dir", data, "--model-name",
             model_name, "--hparams", json.dumps(values))


def test_pretraining_takes_or_checks_the_shards_casing(tmp_path):
  data = _cased_shards(tmp_path)
  code, err = _pretrain(data, "m", do_lower_case=True)
  assert_refused(code, err, "the shards were built with do_lower_case "
                 "false, strip_accents false", "do_lower_case true, "
                 "strip_accents true (hparams)", "allow_casing_mismatch")
  assert not os.path.exists(os.path.join(data, "models", "m"))

  code, err = _pretrain(data, "m")
  assert code == 0, err[-3000:]
  with open(os.path.join(data, "models", "m", "config.json")) as f:
    assert json.load(f)["do_lower_case"] is False


def _features(ids):
  ids = np.array(ids)
  return dict(input_ids=ids, input_mask=(ids != 0).astype(np.int32))


def test_unknown_share_silent_warned_refused():
  tokenizer = ff.build_tokenizer(ff.tiny_config())
  unk, word = tokenizer.unk_id, 20
  lines = []
  check = unknown_tokens.check_unknown_rate
  # 1 of 25 text tokens (4%): silent; 3 of 25 (12%): one warning line.
  assert check("t", _features([[2] + [word] * 24 + [unk, 3]]), tokenizer,
               0.5, lines.append) == pytest.approx(1 / 25.0)
  assert lines == []
  check("t", _features([[2] + [word] * 22 + [unk] * 3 + [3]]), tokenizer,
        0.5, lines.append)
  assert len(lines) == 1 and "12.0% of task t's training tokens" in lines[0]
  with pytest.raises(UserError, match="max_unk_fraction"):
    check("t", _features([[2] + [unk] * 20 + [3, 0]]), tokenizer, 0.5)


def test_finetuning_on_text_the_vocabulary_does_not_cover_stops(tmp_path):
  """The fixture SST upper-cased and read cased with the fixtures'
  lower-case vocabulary: every word is [UNK]; exit 2 before training."""
  task = tmp_path / "finetuning_data" / "sst"
  task.mkdir(parents=True)
  for name in ("train.tsv", "dev.tsv"):
    with open(os.path.join(ff.FIXTURE_DIR, "finetuning_data", "sst",
                           name)) as f:
      lines = f.read().splitlines()
    (task / name).write_text("\n".join(
        [lines[0]] + [line.upper() for line in lines[1:]]) + "\n")
  hparams = ff.tiny_hparams(tmp_path / "model", do_lower_case=False)
  code, err = run("run_finetuning.py", "--data-dir", str(tmp_path),
                  "--model-name", "m", "--hparams", json.dumps(hparams),
                  cwd=paths.REPO)
  assert_refused(code, err, "of task sst's training tokens are [UNK]",
                 "do_lower_case false", "the text keeps its case but the "
                 "vocabulary is lower case", "\"do_lower_case\": true")
  assert not (tmp_path / "model" / "finetuning_models").exists()
