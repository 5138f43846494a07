"""The HF export of a model of a SentencePiece vocabulary, against
transformers: AutoTokenizer loads the exported tokenizer.json and gives our
ids on multilingual text (accented Latin, Cyrillic, CJK, emoji, characters
only byte fallback spells), and ElectraForPreTraining our logits on them.

Models: build_vocab.py's unigram and BPE models of a corpus the test
writes (tests/sentencepiece_fixtures.py); a tiny pre-training model
directory of each, exported by export_model.py as a user would.
"""

import json
import os

import numpy as np
import pytest

import export_model
from interop import convert
from interop import hf_sentencepiece
from text import tokenization
from tests import interop_fixtures as ix
from tests import sentencepiece_fixtures as spf
from util.errors import UserError

TOL = 1e-4
SEQ_LEN = 32
MODEL_TYPES = ("unigram", "bpe")


def _hparams(vocab_size):
  return dict(model_hparam_overrides=dict(ix.pf.TINY_MODEL),
              embedding_size=ix.pf.TINY_EMBEDDING_SIZE, vocab_size=vocab_size,
              max_seq_length=SEQ_LEN)


def _export(root, model_type):
  """A pre-trained model dir of a SentencePiece model, exported as hf.

  Returns dict: tokenizer (ours), model, folder (the discriminator's).
  """
  sp_model = spf.train(root, model_type)
  tokenizer = tokenization.SentencePieceTokenizer(sp_model)
  data = root / ("data_" + model_type)
  data.mkdir()
  data, model = ix.pretrained_dir(data, _hparams(tokenizer.vocab_size))
  out = root / ("hf_" + model_type)
  assert export_model.main([
      "--data-dir", data, "--model-name", "M", "--format", "hf", "--output",
      str(out), "--sentencepiece-model", sp_model]) == 0
  return dict(tokenizer=tokenizer, model=model,
              folder=str(out / "discriminator"))


def _features(tokenizer, texts):
  """Our ids of `texts`, [CLS] pieces [SEP] padded, as the model's input."""
  rows = [[tokenizer.cls_id] + tokenizer.encode(t) + [tokenizer.sep_id]
          for t in texts]
  ids = np.zeros([len(rows), SEQ_LEN], np.int32)
  for i, row in enumerate(rows):
    ids[i, :len(row)] = row
  return rows, dict(input_ids=ids, input_mask=(ids > 0).astype(np.int32),
                    segment_ids=np.zeros_like(ids))


@pytest.mark.slow
def test_hf_export_of_sentencepiece_models_round_trips(tmp_path):
  jobs, expected = [], {}
  for model_type in MODEL_TYPES:
    exported = _export(tmp_path, model_type)
    rows, feats = _features(exported["tokenizer"], spf.TEXTS)
    assert all(len(r) <= SEQ_LEN for r in rows)
    assert exported["tokenizer"].unk_id not in sum(rows, [])
    folder = exported["folder"]
    assert sorted(os.listdir(folder)) == [
        "config.json", "model.safetensors", "sentencepiece.model",
        "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]
    # init_checkpoint from the folder finds its vocabulary (adoption).
    assert convert.describe(folder)["vocab_file"] == os.path.join(
        folder, "sentencepiece.model")
    tokenized = str(tmp_path / ("%s_tokens.json" % model_type))
    outputs = str(tmp_path / ("%s_out.npz" % model_type))
    jobs += [{"op": "tokenize", "folder": folder, "texts": list(spf.TEXTS),
              "outputs": tokenized},
             ix.run_job("ElectraForPreTraining", folder, ix.save_inputs(
                 tmp_path / ("%s_in.npz" % model_type), feats), outputs)]
    logits = exported["model"].discriminator(feats).numpy()
    expected[model_type] = (rows, tokenized, outputs, logits)
  ref = ix.reference(jobs, tmp_path)
  for model_type, (rows, tokenized, outputs, logits) in expected.items():
    with open(tokenized) as f:
      theirs = json.load(f)
    assert theirs["class"] == "PreTrainedTokenizerFast"
    for text, ours, hf_ids in zip(spf.TEXTS, rows, theirs["input_ids"]):
      assert hf_ids == ours, (model_type, text)
    assert ix.loaded_cleanly(ref[outputs])
    assert ix.max_diff(logits, ref[outputs]["logits"]) < TOL, model_type


def test_bpe_merges_follow_the_pieces_scores(tmp_path):
  tokenizer = tokenization.SentencePieceTokenizer(spf.train(tmp_path, "bpe"))
  spec = hf_sentencepiece.tokenizer_json(tokenizer)
  merges = spec["model"]["merges"]
  scores = {p.piece: p.score for p in hf_sentencepiece.model_proto(
      tokenizer.model_file).pieces}
  joined = [scores[a + b] for a, b in merges]
  assert merges and joined == sorted(joined, reverse=True)
  assert all(a + b in tokenizer.vocab for a, b in merges)
  added = {t["content"]: t["special"] for t in spec["added_tokens"]}
  assert added == {t: True for t in tokenization.SPECIAL_TOKENS}


def test_export_errors(tmp_path, capsys):
  sp_model = spf.train(tmp_path, "unigram")
  data = tmp_path / "data"
  data.mkdir()
  data, _ = ix.pretrained_dir(data, _hparams(ix.VOCAB_SIZE))
  base = ["--data-dir", data, "--model-name", "M", "--output",
          str(tmp_path / "out"), "--sentencepiece-model", sp_model]
  line = spf.one_error_line(capsys, export_model.main,
                            base + ["--format", "hf"])
  assert "has 400 pieces but the model has vocab_size 40" in line
  line = spf.one_error_line(capsys, export_model.main,
                            base + ["--format", "tf1"])
  assert "--sentencepiece-model applies to" in line
  garbage = tmp_path / "garbage.model"
  garbage.write_bytes(b"not a model")
  line = spf.one_error_line(capsys, export_model.main, base[:-1] + [
      str(garbage), "--format", "hf"])
  assert "cannot load sentencepiece model %s" % garbage in line
  assert not (tmp_path / "out").exists()
  with pytest.raises(UserError, match="lacks the special token"):
    hf_sentencepiece.load_checked(spf.plain_model(tmp_path)[1], 100)
