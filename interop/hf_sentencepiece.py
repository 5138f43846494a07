"""A SentencePiece model as a Hugging Face fast tokenizer (`tokenizer.json`).

transformers' `AutoTokenizer.from_pretrained` loads the folder as a
`PreTrainedTokenizerFast` that gives the ids of our SentencePieceTokenizer:
`[CLS] pieces [SEP]` (and `[CLS] A [SEP] B [SEP]` with segment 1 for B).
The file is written here as plain JSON in the `tokenizers` format, so the
export needs neither `tokenizers` nor transformers, and mirrors what
transformers' own SentencePiece converter (`SpmConverter`) builds:

  * normalizer: the model's precompiled character map (its NFKC, case
    folding...), then SentencePiece's removal of extra spaces (runs of
    spaces become one, none at either end);
  * pre-tokenizer: "▁" for spaces and before the text, a word per piece
    boundary at each space, as SentencePiece's split_by_whitespace does;
  * model: Unigram (the pieces and their scores) or BPE (merges in the
    order of the merged pieces' scores), with byte fallback if the model
    has it; the model's unknown piece becomes [UNK], as in our tokenizer;
  * the special tokens and the model's other user-defined pieces as added
    tokens, matched before normalization.

One difference stays: around a special token written in the text itself
(e.g. "a [MASK] b"), SentencePiece may keep a lone "▁" piece that the fast
tokenizer drops. Raw text does not hold them.
"""

import base64

from text.tokenization import SPECIAL_TOKENS
from text.tokenization import SentencePieceTokenizer
from util import io_utils
from util.errors import UserError

_SPACE = "\u2581"
# sentencepiece_model.proto's piece types and model types.
_NORMAL, _USER_DEFINED, _BYTE = 1, 4, 6
_UNIGRAM, _BPE = 1, 2


def load_checked(model_file, vocab_size):
  """Our tokenizer of `model_file`; UserError unless it holds the special
  pieces and exactly `vocab_size` pieces (the model's embedding rows)."""
  tokenizer = SentencePieceTokenizer(model_file)
  if tokenizer.vocab_size != vocab_size:
    raise UserError("sentencepiece model %s has %d pieces but the model has "
                    "vocab_size %d; give the SentencePiece model its data "
                    "was built with." % (model_file, tokenizer.vocab_size,
                                         vocab_size))
  return tokenizer


def model_proto(model_file):
  """The parsed ModelProto of a SentencePiece model file."""
  from sentencepiece import sentencepiece_model_pb2  # pylint: disable=g-import-not-at-top
  proto = sentencepiece_model_pb2.ModelProto()
  proto.ParseFromString(io_utils.read_bytes(model_file))
  return proto


def _normalizer(proto):
  spec = proto.normalizer_spec
  steps = []
  if spec.precompiled_charsmap:
    steps.append({"type": "Precompiled", "precompiled_charsmap":
                  base64.b64encode(spec.precompiled_charsmap).decode("ascii")})
  if spec.remove_extra_whitespaces:
    steps += [{"type": "Replace", "pattern": {"Regex": " {2,}"},
               "content": " "},
              {"type": "Replace", "pattern": {"Regex": "\\A | \\z"},
               "content": ""}]
  return {"type": "Sequence", "normalizers": steps}


def _metaspace(proto):
  return {"type": "Metaspace", "replacement": _SPACE,
          "prepend_scheme": ("always" if proto.normalizer_spec.add_dummy_prefix
                             else "never"),
          "split": proto.trainer_spec.split_by_whitespace}


def bpe_merges(proto):
  """The merges of a SentencePiece BPE model, first merged first.

  SentencePiece merges the adjacent pair whose joined piece scores
  highest; so every split of a normal piece into two normal pieces is a
  merge, ranked by the joined piece's score (as transformers'
  SentencePieceExtractor ranks them), the splits of one piece by the
  length of their left part, then by the parts' ids.
  """
  normal = {p.piece: i for i, p in enumerate(proto.pieces)
            if p.type == _NORMAL}
  merges = []
  for piece, i in normal.items():
    for cut in range(1, len(piece)):
      left, right = piece[:cut], piece[cut:]
      if left in normal and right in normal:
        merges.append((-proto.pieces[i].score, len(left), len(right),
                       normal[left], normal[right], left, right))
  merges.sort()
  return [[m[5], m[6]] for m in merges]


def _model(proto, tokenizer):
  byte_fallback = proto.trainer_spec.byte_fallback
  unk = tokenizer.inv_vocab[tokenizer.unk_id]
  if proto.trainer_spec.model_type == _UNIGRAM:
    return {"type": "Unigram", "unk_id": tokenizer.unk_id,
            "vocab": [[p.piece, p.score] for p in proto.pieces],
            "byte_fallback": byte_fallback}
  if proto.trainer_spec.model_type == _BPE:
    return {"type": "BPE", "dropout": None, "unk_token": unk,
            "continuing_subword_prefix": None, "end_of_word_suffix": None,
            "fuse_unk": True, "byte_fallback": byte_fallback,
            "ignore_merges": False,
            "vocab": {p.piece: i for i, p in enumerate(proto.pieces)},
            "merges": bpe_merges(proto)}
  raise UserError("sentencepiece model %s is of type %d; the Hugging Face "
                  "export handles unigram (1) and bpe (2) models." % (
                      tokenizer.model_file, proto.trainer_spec.model_type))


def _added_tokens(proto, tokenizer):
  ids = sorted({tokenizer.vocab[t] for t in SPECIAL_TOKENS} | {
      i for i, p in enumerate(proto.pieces) if p.type == _USER_DEFINED})
  return [{"id": i, "content": tokenizer.inv_vocab[i], "single_word": False,
           "lstrip": False, "rstrip": False, "normalized": False,
           "special": tokenizer.inv_vocab[i] in SPECIAL_TOKENS} for i in ids]


def _post_processor(tokenizer):
  def special(token, type_id):
    return {"SpecialToken": {"id": token, "type_id": type_id}}

  def sequence(name, type_id):
    return {"Sequence": {"id": name, "type_id": type_id}}
  return {
      "type": "TemplateProcessing",
      "single": [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)],
      "pair": [special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0),
               sequence("B", 1), special("[SEP]", 1)],
      "special_tokens": {t: {"id": t, "ids": [tokenizer.vocab[t]],
                             "tokens": [t]} for t in ("[CLS]", "[SEP]")}}


def tokenizer_json(tokenizer):
  """The `tokenizer.json` dict of a SentencePieceTokenizer's model."""
  proto = model_proto(tokenizer.model_file)
  return {
      "version": "1.0", "truncation": None, "padding": None,
      "added_tokens": _added_tokens(proto, tokenizer),
      "normalizer": _normalizer(proto),
      "pre_tokenizer": _metaspace(proto),
      "post_processor": _post_processor(tokenizer),
      "decoder": {"type": "Sequence", "decoders": [
          {"type": "ByteFallback"}, {"type": "Fuse"}, _metaspace(proto)]},
      "model": _model(proto, tokenizer)}
