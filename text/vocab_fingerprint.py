"""A vocabulary's fingerprint, recorded where token ids are written down.

The dataset builder records it in manifest.json, pre-training in the
model's config.json. Pre-training refuses shards built with another
vocabulary, and fine-tuning a model pre-trained with another one: the ids
would silently mean other tokens (a same-size vocab.txt trains without a
word; a shorter one fails deep in a gather, or not at all on a GPU).
"""

import hashlib

from util import io_utils
from util import text_encoding


def tokens(path):
  """The tokens of a WordPiece vocab.txt, one a line (blank lines and line
  endings left out); a UserError when it is not UTF-8 or starts with a
  byte-order mark (util/text_encoding.py)."""
  text = text_encoding.vocab_text(io_utils.read_bytes(path), path)
  return [line.rstrip("\r") for line in text.split("\n")
          if line.rstrip("\r")]


def fingerprint(path):
  """"sha256:<16 hex>" of a vocabulary file: of its tokens for a
  vocab.txt (so line endings do not count), of its bytes for a
  SentencePiece `.model`."""
  if path.endswith(".model"):
    data = io_utils.read_bytes(path)
  else:
    data = "\n".join(tokens(path)).encode("utf-8")
  return "sha256:" + hashlib.sha256(data).hexdigest()[:16]
