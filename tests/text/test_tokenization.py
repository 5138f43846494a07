"""Tokenizers: parity with BERT's FullTokenizer, special tokens, SentencePiece,
and the vocabulary builder."""

import os
import random
import shutil

import pytest

import configure_specs
from text import tokenization
from util.errors import UserError
from tests import finetune_fixtures as ff
from tests import paths

FIXTURES = paths.FIXTURES
VOCAB = os.path.join(FIXTURES, "tokenization", "vocab.txt")
CORPUS = os.path.join(FIXTURES, "pretraining_dataset")

HARD_STRINGS = [
    "UNwant\u00e9d,running",
    "H\u00e9llo, W\u00f6rld! na\u00efve caf\u00e9 r\u00e9sum\u00e9 "
    "\u00c0\u00c9\u00ce\u00d5\u00dc",
    "e\u0301 combining \u0301 alone",
    "\u4e2d\u6587\u5b57 and \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 "
    "\ud55c\uad6d\uc5b4",
    "ctrl\x00chars\x01here\x7f and\ttabs\r\nnew\u200blines \ufeffbom \ufffd",
    "\u00a0nbsp\u2003emspace\u3000ideographic\u2028sep",
    "don't stop-believing!!! (really) [sic] {x} <y> @#$%^&*_+=~`|\\/",
    "\u201csmart\u201d \u2014 dash \u2018single\u2019 \u2026 \u00a3100",
    "\ufb01ne \u00df stra\u00dfe \u0130stanbul \u03a3\u0391\u03a3 "
    "\u03c2 \u01c5",
    "\u216b \u2460 \u00bd \u00b2 emoji \U0001F600\U0001F44D\U0001F3FD",
    "x" * 150, "y" * 201, "ab" * 100, "M\u00fcller" * 40,
    # Words of 67-200 characters but over 200 bytes: BERT splits them.
    "\u0436" * 150, "\u0436" * 201, "ok \u044f" * 3 + "\u044f" * 120 + ".",
    "[MASK] [CLS] [SEP] [UNK] [PAD]", "", "   ", "\n\n",
    "Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man who,",
]


def _random_strings(count, seed=0):
  """Strings mixing ASCII, accents, CJK, controls, spaces and punctuation."""
  pool = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
          "     .,;:!?'\"()-[]" "\u00e9\u00ef\u00e0\u00c9\u00df\u0301\u0308"
          "\u4e2d\u6587\u00a0\u3000\u200b\x00\x07\t\ufffd\u2014\u2019\u00a3"
          "\u0391\u03a3\u0416\u05d0\u0627\u0e01\U0001F600")
  rng = random.Random(seed)
  return ["".join(rng.choice(pool) for _ in range(rng.randint(0, 80)))
          for _ in range(count)]


def _fixture_lines():
  lines = []
  for root, _, names in sorted(os.walk(CORPUS)):
    for name in sorted(names):
      with open(os.path.join(root, name), encoding="utf-8") as f:
        lines.extend(f.read().split("\n"))
  return lines


@pytest.fixture(scope="module")
def tokenizer():
  return tokenization.WordPieceTokenizer(VOCAB)


def _reference(do_lower_case):
  from official.nlp.tools import tokenization as bert  # pylint: disable=g-import-not-at-top
  ref = bert.FullTokenizer(VOCAB, do_lower_case=do_lower_case)
  # The original BERT gives [UNK] for words over 200 characters (tf-models'
  # copy raised the limit to 400).
  ref.wordpiece_tokenizer.max_input_chars_per_word = 200
  return ref


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_parity_with_bert_full_tokenizer(do_lower_case):
  ours = tokenization.WordPieceTokenizer(VOCAB, do_lower_case=do_lower_case)
  ref = _reference(do_lower_case)
  texts = HARD_STRINGS + _random_strings(300) + _fixture_lines()
  got = ours.encode_batch(texts)
  mismatches = []
  for text, ids in zip(texts, got):
    want = ref.convert_tokens_to_ids(ref.tokenize(text))
    if ids != want:
      mismatches.append((text, ours.convert_ids_to_tokens(ids),
                         ref.convert_ids_to_tokens(want)))
  assert not mismatches, mismatches[:3]


def test_known_tokenizations(tokenizer):
  # BERT's own test case.
  assert tokenizer.tokenize("UNwant\u00e9d,running") == [
      "un", "##want", "##ed", ",", "runn", "##ing"]
  assert tokenizer.tokenize("Sir Walter, of Kellynch Hall.") == [
      "sir", "walter", ",", "of", "kellynch", "hall", "."]
  # Control characters are deleted (joining the words), odd spaces split.
  assert tokenizer.tokenize("wa\x00nt\u00a0un") == ["want", "un"]
  assert tokenizer.tokenize("\u4e2d\u6587") == ["\u4e2d", "\u6587"]
  assert tokenizer.tokenize("\u2603 " + "a" * 201) == ["[UNK]", "[UNK]"]
  assert tokenizer.tokenize("\u0416" * 150) == ["\u0436"] + ["##\u0436"] * 149
  ids = tokenizer.encode("want un")
  assert ids == [tokenizer.vocab["want"], tokenizer.vocab["un"]]
  assert tokenizer.convert_ids_to_tokens(ids) == ["want", "un"]
  assert tokenizer.convert_tokens_to_ids(["un", "nope"]) == [
      tokenizer.vocab["un"], tokenizer.unk_id]


def test_special_ids_and_attributes(tokenizer):
  assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id,
          tokenizer.sep_id, tokenizer.mask_id) == (0, 1, 2, 3, 4)
  assert tokenizer.vocab_size == len(tokenizer.vocab) == 403
  assert tokenizer.inv_vocab[tokenizer.vocab["want"]] == "want"


def test_encode_batch_matches_encode(tokenizer):
  # A batch with a line break and non-ASCII text takes the per-text path,
  # an ASCII batch the one-pass path: both must agree with encode().
  for texts in (["Hello there.", "", "wa\nnt", "caf\u00e9 un"],
                ["Hello there.", "", "want un", "x\x01y"]):
    assert tokenizer.encode_batch(texts) == [tokenizer.encode(t)
                                             for t in texts]
  ids, splits = tokenizer.encode_ragged(["want un", "", "un"])
  assert splits.tolist() == [0, 2, 2, 3]
  assert ids.tolist() == [tokenizer.vocab["want"], tokenizer.vocab["un"],
                          tokenizer.vocab["un"]]


def test_case_and_accent_options():
  cased = tokenization.WordPieceTokenizer(VOCAB, do_lower_case=False)
  assert cased.tokenize("Un caf\u00e9") == ["U", "##n", "c", "##a", "##f",
                                           "##\u00e9"]
  kept_accents = tokenization.WordPieceTokenizer(VOCAB, strip_accents=False)
  assert kept_accents.tokenize("CAF\u00c9") == ["c", "##a", "##f", "##\u00e9"]


def test_missing_vocab_file(tmp_path):
  path = str(tmp_path / "nope.txt")
  with pytest.raises(UserError, match="nope.txt does not exist"):
    tokenization.load_vocab(path)


def test_vocab_without_special_tokens(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("[PAD]\n[UNK]\n[CLS]\nthe\n", encoding="utf-8")
  with pytest.raises(UserError) as e:
    tokenization.WordPieceTokenizer(str(path))
  assert str(path) in str(e.value)
  assert "[SEP] [MASK]" in str(e.value)


def test_vocab_with_duplicate_token(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(tokenization.SPECIAL_TOKENS + ("a", "b", "a")),
                  encoding="utf-8")
  with pytest.raises(UserError, match="line 8 repeats line 6"):
    tokenization.load_vocab(str(path))


def test_create_tokenizer_needs_a_vocab():
  with pytest.raises(UserError, match="--vocab-file"):
    tokenization.create_tokenizer()
  assert isinstance(tokenization.create_tokenizer(VOCAB),
                    tokenization.WordPieceTokenizer)


def _train_sentencepiece(tmp_path, name, specials=True):
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  text = tmp_path / "text.txt"
  text.write_text("\n".join(line for line in _fixture_lines() if line.strip()),
                  encoding="utf-8")
  prefix = str(tmp_path / name)
  options = dict(input=str(text), model_prefix=prefix, vocab_size=300,
                 model_type="unigram", character_coverage=1.0,
                 bos_id=-1, eos_id=-1, minloglevel=2)
  if specials:
    options.update(pad_id=0, pad_piece="[PAD]", unk_id=1, unk_piece="[UNK]",
                   user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"])
  spm.SentencePieceTrainer.train(**options)
  return prefix + ".model"


def test_sentencepiece_tokenizer(tmp_path):
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  model = _train_sentencepiece(tmp_path, "sp")
  tok = tokenization.create_tokenizer(sentencepiece_model=model)
  assert isinstance(tok, tokenization.SentencePieceTokenizer)
  assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (
      0, 1, 2, 3, 4)
  assert tok.vocab_size == 300
  sp = spm.SentencePieceProcessor(model_file=model)
  texts = ["Sir Walter Elliot, of Kellynch Hall.", "",
           "the [MASK] was here", "Fellow-Citizens of the Senate"]
  assert tok.encode_batch(texts) == [sp.encode(t) for t in texts]
  assert tok.vocab["[MASK]"] in tok.encode("the [MASK] was here")
  assert tok.tokenize(texts[0]) == sp.encode(texts[0], out_type=str)
  # Characters the model never saw map to [UNK].
  assert tok.encode("\u2603")[-1] == tok.unk_id


def test_sentencepiece_without_special_tokens(tmp_path):
  model = _train_sentencepiece(tmp_path, "plain", specials=False)
  with pytest.raises(UserError, match=r"lacks the special token\(s\) \[PAD\]"):
    tokenization.SentencePieceTokenizer(model)
  with pytest.raises(UserError, match="does not exist"):
    tokenization.SentencePieceTokenizer(str(tmp_path / "none.model"))


def test_tokenizer_for_takes_a_file_a_data_dir_or_a_vocabulary_spec(tmp_path):
  model = _train_sentencepiece(tmp_path, "sp")
  sp_dir, wp_dir = tmp_path / "sp_data", tmp_path / "wp_data"
  sp_dir.mkdir()
  wp_dir.mkdir()
  shutil.copy(model, sp_dir / "sentencepiece.model")
  shutil.copy(VOCAB, wp_dir / "vocab.txt")
  for source in (model, str(sp_dir)):
    tok = tokenization.tokenizer_for(source)
    assert tok.kind == "sentencepiece" and tok.vocab_size == 300
  for source in (VOCAB, str(wp_dir)):
    tok = tokenization.tokenizer_for(source, do_lower_case=False)
    assert tok.kind == "wordpiece" and not tok.do_lower_case
  config = ff.tiny_config(data_dir=sp_dir, vocab_file=None, vocab_size=300)
  assert config.vocab_file == str(sp_dir / "sentencepiece.model")
  tok = tokenization.tokenizer_for(
      configure_specs.VocabularySpec.from_config(config))
  assert tok.kind == "sentencepiece" and tok.vocab_file == config.vocab_file
  # The fixtures' vocab.txt.
  tok = tokenization.tokenizer_for(
      configure_specs.VocabularySpec.from_config(ff.tiny_config()))
  assert tok.kind == "wordpiece" and tok.do_lower_case
  assert tokenization.load_vocabulary(model) == tokenization.tokenizer_for(
      model).vocab


def test_a_data_dir_with_both_vocabularies_is_refused(tmp_path):
  model = _train_sentencepiece(tmp_path, "sp")
  shutil.copy(model, tmp_path / "sentencepiece.model")
  shutil.copy(VOCAB, tmp_path / "vocab.txt")
  with pytest.raises(UserError, match="vocab.txt is beside it"):
    tokenization.tokenizer_for(str(tmp_path))
