"""The data layout's rule for vocabularies: one per directory.

A data directory holds a WordPiece `vocab.txt` or a SentencePiece
`sentencepiece.model`, never both: token ids mean the tokens of one
vocabulary, and with two in one place nothing says which one the shards
were built with. build_vocab.py refuses to write the second one, and the
dataset builder refuses to read either from a directory that holds both.
"""

import posixpath

from util import io_utils
from util.errors import UserError

WORDPIECE_FILE = "vocab.txt"
SENTENCEPIECE_FILE = "sentencepiece.model"
_OTHER = {WORDPIECE_FILE: SENTENCEPIECE_FILE,
          SENTENCEPIECE_FILE: WORDPIECE_FILE}


def is_sentencepiece(path):
  """Whether `path` names a SentencePiece model (ends in `.model`), the rule
  util/vocab_fingerprint.py fingerprints by."""
  return path.endswith(".model")


def check_one_vocabulary(path, flag):
  """Refuses `path` (a vocabulary to write or read) when it is `vocab.txt`
  or `sentencepiece.model` and the other one is beside it.

  Args:
    path: the vocabulary file.
    flag: the command-line flag that gave it, for the message.
  Raises:
    UserError: naming both files.
  """
  directory, name = posixpath.split(path)
  other = _OTHER.get(name)
  if other is None:
    return
  other_path = posixpath.join(directory, other)
  if io_utils.exists(other_path):
    raise UserError(
        "%s %s: %s is beside it; a directory holds one vocabulary, a "
        "WordPiece %s or a SentencePiece %s, never both (nothing would say "
        "which one token ids mean). Move or remove one of them." % (
            flag, path, other_path, WORDPIECE_FILE, SENTENCEPIECE_FILE))
