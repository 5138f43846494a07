"""The data layout's rule for vocabularies: one per directory.

A data directory holds a WordPiece `vocab.txt` or a SentencePiece
`sentencepiece.model`, never both: token ids mean the tokens of one
vocabulary, and with two in one place nothing says which one the shards
were built with. build_vocab.py refuses to write the second one, and the
dataset builder refuses to read either from a directory that holds both.
Pre-training, fine-tuning and the exports read the data directory's
vocabulary, whichever kind it is (`data_dir_vocabulary`), and so does
text/tokenization.py's `tokenizer_for`.
"""

import os
import posixpath

from util import io_utils
from text import vocab_fingerprint
from util.errors import UserError
from util.hparams import ConfigError

WORDPIECE_FILE = "vocab.txt"
SENTENCEPIECE_FILE = "sentencepiece.model"
_OTHER = {WORDPIECE_FILE: SENTENCEPIECE_FILE,
          SENTENCEPIECE_FILE: WORDPIECE_FILE}


def is_sentencepiece(path):
  """Whether `path` names a SentencePiece model (ends in `.model`), the rule
  text/vocab_fingerprint.py fingerprints by."""
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


def data_dir_vocabulary(data_dir):
  """The vocabulary file of a data directory, by the rule above: its
  `sentencepiece.model` when it holds one, else its `vocab.txt` (which may
  not exist yet). Both is a UserError naming them."""
  sentencepiece = posixpath.join(data_dir, SENTENCEPIECE_FILE)
  # A local path is looked at without TensorFlow, which configs (built
  # before it loads, to report bad hparams at once) must not import.
  if (os.path.exists(sentencepiece) if "://" not in data_dir else
      io_utils.exists(sentencepiece)):
    check_one_vocabulary(sentencepiece, "the data directory's vocabulary")
    return sentencepiece
  return posixpath.join(data_dir, WORDPIECE_FILE)


def kind(path):
  """"sentencepiece" or "wordpiece": the kind of vocabulary `path` is."""
  return "sentencepiece" if is_sentencepiece(path) else "wordpiece"


def sentencepiece_pieces(path):
  """The pieces of a SentencePiece model, in id order (list of str).

  Raises UserError when the file is missing or not a SentencePiece model.
  """
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  try:
    processor = spm.SentencePieceProcessor(
        model_proto=io_utils.read_bytes(path))
  except FileNotFoundError:
    raise UserError("sentencepiece model %s does not exist." % path) from None
  except (OSError, RuntimeError) as e:
    raise UserError("cannot load sentencepiece model %s: %s" %
                    (path, e)) from None
  return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def vocabulary_size(path):
  """Token ids `path` defines: the pieces of a SentencePiece model, the
  tokens of a vocab.txt (its non-blank lines)."""
  if is_sentencepiece(path):
    return len(sentencepiece_pieces(path))
  return len(vocab_fingerprint.tokens(path))


def implied_vocab_size(hparams, vocab_file):
  """{"vocab_size": tokens (or pieces) of vocab_file} unless hparams set it.

  Returns {} when the file is missing (the caller reports that) or hparams
  already hold the right size; raises ConfigError when they disagree.
  """
  if not io_utils.exists(vocab_file):
    return {}
  size = vocabulary_size(vocab_file)
  if "vocab_size" not in hparams:
    return {"vocab_size": size}
  if hparams["vocab_size"] != size:
    raise ConfigError("hparam vocab_size is %r but %s has %d tokens; set "
                      "\"vocab_size\": %d or drop it to take the vocab's." %
                      (hparams["vocab_size"], vocab_file, size, size))
  return {}


def config_vocabulary(data_dir, vocab_file=None):
  """The vocabulary a config reads: hparam `vocab_file` when set, else the
  data directory's (`data_dir_vocabulary`)."""
  return vocab_file or data_dir_vocabulary(data_dir)


def with_vocab_size(config_cls, data_dir, hparams):
  """`hparams` (a dict) with `vocab_size` set to the size of the
  vocabulary a `config_cls` (configure.py's) built from them reads, unless
  they set it (then it must match: ConfigError) or the file is missing
  (the caller reports that). Unknown keys and wrong types raise first, as
  building the config would; the config is then built once, from the
  result."""
  config_cls.check_user_values(hparams)
  vocab_file = config_vocabulary(data_dir, hparams.get("vocab_file"))
  return dict(hparams, **implied_vocab_size(hparams, vocab_file))
