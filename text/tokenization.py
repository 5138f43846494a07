"""Tokenizers: BERT WordPiece through tensorflow-text, and SentencePiece.

`tokenizer_for(vocab file, data directory or vocabulary spec)` is the one
way in: it gives the tokenizer of whichever kind of vocabulary it finds,
with one API, so callers never ask which kind it is.

`WordPieceTokenizer` reproduces the original BERT `FullTokenizer` (tokens and
ids) but runs the word splitting and WordPiece search in tensorflow-text's
`FastWordpieceTokenizer`, tens of times faster. The text normalization
(and, for the rare texts redone word by word, the word splitting) keeps
BERT's own rules, in Python: text/bert_text.py says why.

TensorFlow state (the tokenizer ops) is created lazily on the first call, so
a tokenizer built in a parent process can be used by forked workers.
"""

import numpy as np
from tensorflow_text.core.pybinds import (
    pywrap_fast_wordpiece_tokenizer_model_builder as wordpiece_builder)

from text.bert_text import BertNormalizer
from text.bert_text import bert_words
from util import io_utils
from util import text_encoding
from text import vocab_layout
from util.errors import UserError

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

# BERT's WordpieceTokenizer gives [UNK] for longer words (in characters;
# tensorflow-text counts bytes, the same for the ASCII text of the uncased
# vocab after accent stripping).
MAX_CHARS_PER_WORD = 200


def load_vocab(vocab_file):
  """Reads a BERT vocab.txt (one token per line, id = line number).

  Returns:
    dict token -> id.
  Raises:
    UserError: the file is missing or unreadable, not UTF-8 (a UTF-16 file
      is named so) or starts with a byte-order mark
      (util/text_encoding.py), has a duplicate token, or lacks one of
      SPECIAL_TOKENS.
  """
  try:
    data = io_utils.read_bytes(vocab_file)
  except FileNotFoundError:
    raise UserError("vocab file %s does not exist; build one with "
                    "`python build_vocab.py --corpus-dir DIR --output %s`."
                    % (vocab_file, vocab_file)) from None
  except OSError as e:
    raise UserError("cannot read vocab file %s: %s" % (vocab_file, e)) from None
  tokens = [line.strip() for line in
            text_encoding.vocab_text(data, vocab_file).split("\n")]
  while tokens and not tokens[-1]:
    tokens.pop()  # a trailing newline is not a token
  vocab = {}
  for i, token in enumerate(tokens):
    if token in vocab:
      raise UserError("vocab file %s: token %r on line %d repeats line %d." %
                      (vocab_file, token, i + 1, vocab[token] + 1))
    vocab[token] = i
  _check_special_tokens(vocab_file, vocab)
  return vocab


def _check_special_tokens(path, vocab, fix="build_vocab.py adds them"):
  missing = [t for t in SPECIAL_TOKENS if t not in vocab]
  if missing:
    raise UserError(
        "%s lacks the special token(s) %s; a vocabulary needs all of %s "
        "(%s)." % (path, " ".join(missing), " ".join(SPECIAL_TOKENS), fix))


class _Tokenizer(object):
  """What both tokenizers share: id/token conversion and the batch API.

  Subclasses set `vocab` and implement `_tokenize_ragged(texts)`.
  """

  def _init_vocab(self, vocab):
    self.vocab = vocab
    self.inv_vocab = {i: t for t, i in vocab.items()}
    self.vocab_size = len(vocab)
    self.pad_id = vocab["[PAD]"]
    self.unk_id = vocab["[UNK]"]
    self.cls_id = vocab["[CLS]"]
    self.sep_id = vocab["[SEP]"]
    self.mask_id = vocab["[MASK]"]
    self.special_ids = frozenset(vocab[t] for t in SPECIAL_TOKENS)

  def __getstate__(self):
    # The TF ops are per process: a copy sent to a worker rebuilds them.
    state = dict(self.__dict__)
    for key in ("_fn", "_words_fn"):
      if key in state:
        state[key] = None
    return state

  def encode_ragged(self, texts):
    """Tokenizes a batch in one call.

    Args:
      texts: list of str, [batch].
    Returns:
      (ids, row_splits): numpy int32 [total_tokens] and int64 [batch + 1];
      text i has ids[row_splits[i]:row_splits[i + 1]].
    """
    if not texts:
      return np.zeros([0], np.int32), np.zeros([1], np.int64)
    return self._tokenize_ragged(texts)

  def encode_batch(self, texts):
    """list of str [batch] -> list of lists of ids [batch, (tokens)]."""
    ids, splits = self.encode_ragged(list(texts))
    ids = ids.tolist()
    splits = splits.tolist()
    return [ids[a:b] for a, b in zip(splits[:-1], splits[1:])]

  def encode(self, text):
    return self.encode_batch([text])[0]

  def tokenize(self, text):
    return self.convert_ids_to_tokens(self.encode(text))

  def convert_tokens_to_ids(self, tokens):
    return [self.vocab.get(t, self.unk_id) for t in tokens]

  def convert_ids_to_tokens(self, ids):
    return [self.inv_vocab[int(i)] for i in ids]


def _limit_tf_threads():
  """One intra/inter-op thread: the builder parallelises with processes."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
  except RuntimeError:
    pass  # TF was already initialised in this process; keep its settings.


class WordPieceTokenizer(_Tokenizer):
  """BERT's WordPiece tokenizer (same tokens and ids as BERT's FullTokenizer).

  Args:
    vocab_file: vocab.txt, one token per line.
    do_lower_case: lower-case the text.
    strip_accents: NFD-decompose and drop combining marks; None means "same as
      do_lower_case" (what BERT does).
    single_thread: limit TensorFlow to one thread per process (the dataset
      builder's workers).
  """

  kind = "wordpiece"

  def __init__(self, vocab_file, do_lower_case=True, strip_accents=None,
               single_thread=False):
    self._init_vocab(load_vocab(vocab_file))
    self.vocab_file = vocab_file
    self.normalizer = BertNormalizer(do_lower_case, strip_accents)
    self.do_lower_case = self.normalizer.do_lower_case
    self.strip_accents = self.normalizer.strip_accents
    self._single_thread = single_thread
    # The model is a plain byte buffer (no TF state): built here, inherited by
    # forked workers, and turned into ops on first use.
    self._tokens = [self.inv_vocab[i] for i in range(self.vocab_size)]
    self._model_buffer = wordpiece_builder.build_fast_wordpiece_model(
        self._tokens, MAX_CHARS_PER_WORD, "##", "[UNK]", False, False)
    self._fn = None
    self._words_fn = None

  def _tokenize_ragged(self, texts):
    if self._fn is None:
      self._fn = self._make_fn(self._model_buffer)
    normalized = self.normalizer.normalize_batch(texts)
    ids, splits = self._fn(normalized)
    ids, splits = ids.numpy(), splits.numpy()
    # tensorflow-text limits words to 200 bytes, BERT to 200 characters: an
    # [UNK] in a non-ASCII text may be a word of 67-200 characters that BERT
    # splits into pieces. Such (rare) texts are redone word by word.
    unk_rows = np.unique(np.searchsorted(
        splits, np.flatnonzero(ids == self.unk_id), side="right") - 1)
    redo = [r for r in unk_rows.tolist() if not normalized[r].isascii()]
    if redo:
      rows = [ids[a:b] for a, b in zip(splits[:-1], splits[1:])]
      for r in redo:
        rows[r] = self._tokenize_words(normalized[r])
      splits = np.concatenate([[0], np.cumsum([len(x) for x in rows])])
      ids = np.concatenate(rows).astype(np.int32)
    return ids, splits

  def _tokenize_words(self, normalized_text):
    """Exact BERT ids of one text, with the word limit in characters."""
    words = bert_words(normalized_text)
    if not words:
      return np.zeros([0], np.int32)
    if self._words_fn is None:
      buffer = wordpiece_builder.build_fast_wordpiece_model(
          self._tokens, 4 * MAX_CHARS_PER_WORD, "##", "[UNK]", True, False)
      self._words_fn = self._make_fn(buffer)
    ids, splits = self._words_fn(words)
    ids, splits = ids.numpy(), splits.numpy()
    out = []
    for word, a, b in zip(words, splits[:-1], splits[1:]):
      out.extend([self.unk_id] if len(word) > MAX_CHARS_PER_WORD else ids[a:b])
    return np.asarray(out, np.int32)

  def _make_fn(self, model_buffer):
    if self._single_thread:
      _limit_tf_threads()
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    import tensorflow_text as tf_text  # pylint: disable=g-import-not-at-top
    model = tf.constant(np.frombuffer(model_buffer, np.uint8))
    wordpiece = tf_text.FastWordpieceTokenizer(
        model_buffer=model, token_out_type=tf.int32)

    def fn(texts):
      ragged = wordpiece.tokenize(tf.constant(texts, tf.string))
      return ragged.flat_values, ragged.row_splits
    return fn


_SENTENCEPIECE_FIX = ("as pieces: build_vocab.py --model-type unigram or bpe "
                      "trains a SentencePiece model with them")


class SentencePieceTokenizer(_Tokenizer):
  """A SentencePiece model with the same interface as WordPieceTokenizer.

  The model must hold SPECIAL_TOKENS as pieces: build_vocab.py
  --model-type unigram|bpe trains one so (or train it with
  `--user_defined_symbols=[CLS],[SEP],[MASK] --pad_piece=[PAD]
  --unk_piece=[UNK]`). The model's own normalization applies; there is no
  lower-casing option.
  """

  kind = "sentencepiece"

  def __init__(self, model_file, single_thread=False):
    import sentencepiece as spm  # pylint: disable=g-import-not-at-top
    try:
      self._model_bytes = io_utils.read_bytes(model_file)
      sp = spm.SentencePieceProcessor(model_proto=self._model_bytes)
    except FileNotFoundError:
      raise UserError("sentencepiece model %s does not exist." %
                      model_file) from None
    except (OSError, RuntimeError) as e:
      raise UserError("cannot load sentencepiece model %s: %s" %
                      (model_file, e)) from None
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    _check_special_tokens(model_file, vocab, _SENTENCEPIECE_FIX)
    self._init_vocab(vocab)
    self.model_file = self.vocab_file = model_file
    self._sp = sp
    self._sp_unk_id = sp.unk_id()
    self._single_thread = single_thread
    self._fn = None

  @property
  def sentencepiece_unk_id(self):
    """The model's own unknown id, which this tokenizer maps to [UNK]'s."""
    return self._sp_unk_id

  def __getstate__(self):
    state = super().__getstate__()
    del state["_sp"]
    return state

  def __setstate__(self, state):
    import sentencepiece as spm  # pylint: disable=g-import-not-at-top
    self.__dict__.update(state)
    self._sp = spm.SentencePieceProcessor(model_proto=self._model_bytes)

  def _tokenize_ragged(self, texts):
    if self._fn is None:
      self._fn = self._make_fn()
    ids, splits = self._fn(texts)
    ids = ids.numpy()
    if self._sp_unk_id != self.unk_id:
      ids[ids == self._sp_unk_id] = self.unk_id
    return ids, splits.numpy()

  def _make_fn(self):
    if self._single_thread:
      _limit_tf_threads()
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    import tensorflow_text as tf_text  # pylint: disable=g-import-not-at-top
    sp = tf_text.SentencepieceTokenizer(model=self._model_bytes,
                                        out_type=tf.int32)

    def fn(texts):
      ragged = sp.tokenize(tf.constant(texts, tf.string))
      return ragged.flat_values, ragged.row_splits
    return fn


def create_tokenizer(vocab_file=None, sentencepiece_model=None,
                     do_lower_case=True, strip_accents=None,
                     single_thread=False):
  """A SentencePieceTokenizer if `sentencepiece_model`, else the tokenizer of
  `vocab_file` (either kind, `tokenizer_for`)."""
  if not (vocab_file or sentencepiece_model):
    raise UserError("give a vocab file (--vocab-file) or a sentencepiece "
                    "model (--sentencepiece-model).")
  return tokenizer_for(sentencepiece_model or vocab_file, do_lower_case,
                       strip_accents, single_thread)


def tokenizer_for(source, do_lower_case=True, strip_accents=None,
                  single_thread=False):
  """The project's tokenizer of a vocabulary, whichever kind it is.

  Args:
    source: a vocabulary file (a WordPiece vocab.txt or a SentencePiece
      `.model`), a data directory (its vocabulary: text/vocab_layout.py),
      or a configure_specs.VocabularySpec: its `vocab_file`,
      `do_lower_case` and `strip_accents`, which then replace the
      arguments.
    do_lower_case, strip_accents: WordPiece only (a SentencePiece model
      normalizes text by its own rules).
    single_thread: see WordPieceTokenizer.
  Returns:
    a WordPieceTokenizer or a SentencePieceTokenizer; both have `kind`
    ("wordpiece" or "sentencepiece"), `vocab_file`, the special ids and
    the encode/tokenize API of `_Tokenizer`.
  Raises:
    UserError: the vocabulary is missing, unreadable or lacks the special
      tokens, or the data directory holds both kinds.
  """
  path = source
  if hasattr(source, "vocab_file"):
    path, do_lower_case = source.vocab_file, source.do_lower_case
    strip_accents = getattr(source, "strip_accents", None)
  elif io_utils.is_dir(source):
    path = vocab_layout.data_dir_vocabulary(source)
  if vocab_layout.is_sentencepiece(path):
    return SentencePieceTokenizer(path, single_thread=single_thread)
  return WordPieceTokenizer(path, do_lower_case=do_lower_case,
                            strip_accents=strip_accents,
                            single_thread=single_thread)


def load_vocabulary(path):
  """{token: id} of a vocabulary of either kind (a vocab.txt's tokens, a
  SentencePiece model's pieces), checked for SPECIAL_TOKENS."""
  if not vocab_layout.is_sentencepiece(path):
    return load_vocab(path)
  pieces = vocab_layout.sentencepiece_pieces(path)
  vocab = {piece: i for i, piece in enumerate(pieces)}
  _check_special_tokens(path, vocab, _SENTENCEPIECE_FIX)
  return vocab
