"""A released model's tokenizer: its vocabulary and its own settings.

`tokenizer_of(folders)` reads what a Hugging Face folder (or the folder of
a TF1 checkpoint) says about its tokenizer, in transformers' order of
precedence:
  * `tokenizer_config.json`: `do_lower_case`, `strip_accents`,
    `tokenize_chinese_chars`, `model_max_length` and the special tokens;
  * `tokenizer.json`: its BertNormalizer's `lowercase` and `strip_accents`,
    and its WordPiece vocabulary when there is no `vocab.txt`;
  * `special_tokens_map.json`: the special tokens.
A folder with no casing setting at all gets the casing its vocabulary
implies (text/casing.py), and a note says so. The vocabulary is the
folder's `vocab.txt` (or our exports' `sentencepiece.model`), else
`tokenizer.json`'s (written once to a `vocab.txt` under the temporary
directory, named by its content), else a `vocab.txt` in the folder above
(packages that ship several models beside one vocabulary do that), with a
note.
"""

import hashlib
import posixpath
import tempfile

from text import casing
from text import vocab_fingerprint
from text import vocab_layout
from util import io_utils
from util.errors import UserError

CONFIG = "tokenizer_config.json"
FAST = "tokenizer.json"
SPECIAL_MAP = "special_tokens_map.json"
# The special tokens this project's WordPiece vocabularies use.
SPECIAL = dict(unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
               cls_token="[CLS]", mask_token="[MASK]")


class TokenizerFacts(object):
  """What a source says about its tokenizer.

  Attributes:
    vocab_file: its vocabulary file (vocab.txt or sentencepiece.model), or
      None.
    do_lower_case: True/False, or None when there is no vocabulary to read.
    strip_accents: True/False, or None ("as do_lower_case").
    model_max_length: int or None.
    notes: lines for the user (where a setting came from when it was not
      written down, ignored settings).
  """

  def __init__(self, vocab_file=None, do_lower_case=None, strip_accents=None,
               model_max_length=None, notes=()):
    self.vocab_file = vocab_file
    self.do_lower_case = do_lower_case
    self.strip_accents = strip_accents
    self.model_max_length = model_max_length
    self.notes = list(notes)


def _read_json(folder, name):
  path = posixpath.join(folder, name)
  if not io_utils.is_file(path):
    return None
  try:
    value = io_utils.read_json(path)
  except ValueError as e:
    raise UserError("%s is not valid JSON: %s" % (path, e))
  return value if isinstance(value, dict) else None


def _bert_normalizer(fast):
  """The BertNormalizer dict of a tokenizer.json (or of its Sequence)."""
  normalizer = (fast or {}).get("normalizer") or {}
  parts = normalizer.get("normalizers", [normalizer])
  for part in parts:
    if isinstance(part, dict) and part.get("type") == "BertNormalizer":
      return part
  return None


def _casing(folder, config, fast):
  """(do_lower_case, strip_accents, where) written in the folder's files,
  (None, None, None) when neither file sets the casing."""
  if isinstance((config or {}).get("do_lower_case"), bool):
    strip = config.get("strip_accents")
    return (config["do_lower_case"],
            strip if isinstance(strip, bool) else None,
            posixpath.join(folder, CONFIG))
  normalizer = _bert_normalizer(fast)
  if normalizer is not None and isinstance(normalizer.get("lowercase"), bool):
    strip = normalizer.get("strip_accents")
    return (normalizer["lowercase"],
            strip if isinstance(strip, bool) else None,
            posixpath.join(folder, FAST))
  return None, None, None


def _check_special_tokens(folder, config, special_map):
  """UserError when the folder names special tokens other than ours."""
  named = dict(special_map or {})
  named.update({k: v for k, v in (config or {}).items() if k in SPECIAL})
  other = []
  for key, ours in sorted(SPECIAL.items()):
    value = named.get(key)
    if isinstance(value, dict):  # An AddedToken written out.
      value = value.get("content")
    if value is not None and value != ours:
      other.append("%s %r (ours %s)" % (key, value, ours))
  if other:
    raise UserError("%s names other special tokens than this project's "
                    "WordPiece vocabularies use: %s. Only BERT-style "
                    "vocabularies with [PAD] [UNK] [CLS] [SEP] [MASK] load." %
                    (folder, ", ".join(other)))


def _fast_vocab_file(folder, fast):
  """A vocab.txt of a tokenizer.json's WordPiece vocabulary, written once
  under the temporary directory (named by its content); None when it has
  none."""
  model = (fast or {}).get("model") or {}
  vocab = model.get("vocab")
  if model.get("type") != "WordPiece" or not isinstance(vocab, dict):
    return None
  by_id = sorted(vocab.items(), key=lambda item: item[1])
  if [i for _, i in by_id] != list(range(len(by_id))):
    raise UserError("%s: its WordPiece vocabulary's ids are not 0..%d." % (
        posixpath.join(folder, FAST), len(by_id) - 1))
  text = "".join(token + "\n" for token, _ in by_id).encode("utf-8")
  digest = hashlib.sha256(text).hexdigest()[:16]
  path = posixpath.join(tempfile.gettempdir(), "electra-hp-vocab", digest,
                        vocab_layout.WORDPIECE_FILE)
  if not io_utils.is_file(path):
    io_utils.write_bytes_atomic(path, text)
  return path


def _vocabulary(folders, fast_by_folder):
  """(vocab file, note or None): the first folder's vocab.txt or
  sentencepiece.model, else its tokenizer.json's vocabulary, else a
  vocab.txt in the folder above the first folder."""
  for folder in folders:
    for name in (vocab_layout.WORDPIECE_FILE,
                 vocab_layout.SENTENCEPIECE_FILE):
      path = posixpath.join(folder, name)
      if io_utils.is_file(path):
        return path, None
    path = _fast_vocab_file(folder, fast_by_folder.get(folder))
    if path is not None:
      return path, "vocabulary: %s has no vocab.txt; read the WordPiece " \
          "vocabulary of its tokenizer.json" % folder
  parent = posixpath.dirname(folders[0].rstrip("/"))
  path = posixpath.join(parent, vocab_layout.WORDPIECE_FILE)
  if parent and io_utils.is_file(path):
    return path, ("vocabulary: %s has none; using %s, the vocab.txt in the "
                  "folder above it" % (folders[0], path))
  return None, None


def tokenizer_of(folders):
  """The tokenizer facts of a source whose files lie in `folders`.

  Args:
    folders: the folders to read, first the source's own (an HF folder,
      the directory of a TF1 checkpoint), then its role folders.
  Returns:
    a `TokenizerFacts`.
  Raises:
    UserError: a tokenizer file is not valid JSON, names other special
      tokens, or its vocabulary's ids have gaps.
  """
  folders = [f for f in folders if io_utils.is_dir(f)]
  if not folders:
    return TokenizerFacts()
  configs = {f: _read_json(f, CONFIG) for f in folders}
  fasts = {f: _read_json(f, FAST) for f in folders}
  vocab_file, note = _vocabulary(folders, fasts)
  notes = [note] if note else []
  lower = strip = where = None
  for folder in folders:
    _check_special_tokens(folder, configs[folder],
                          _read_json(folder, SPECIAL_MAP))
    if where is None:
      lower, strip, where = _casing(folder, configs[folder], fasts[folder])
  config = next((c for c in configs.values() if c), {})
  if where is None and vocab_file and not vocab_layout.is_sentencepiece(
      vocab_file):
    lower, reason = casing.infer_lower_case(vocab_fingerprint.tokens(
        vocab_file))
    notes.append("casing: no tokenizer settings beside %s; do_lower_case=%s "
                 "because %s" % (folders[0], str(lower).lower(), reason))
  if config.get("tokenize_chinese_chars") is False:
    notes.append("tokenizer: %s sets tokenize_chinese_chars false; this "
                 "project always splits CJK characters (BERT's default)" %
                 folders[0])
  max_length = config.get("model_max_length")
  return TokenizerFacts(
      vocab_file, lower, strip,
      max_length if isinstance(max_length, int) else None, notes)
