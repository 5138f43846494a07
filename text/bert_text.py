"""BERT's text normalization and word splitting, with the original's rules.

The normalization (deleting control characters, lower-casing, stripping
accents) is done in Python with the very rules of BERT's BasicTokenizer,
because tensorflow-text's own BERT normalizers differ on rare characters
(they case-fold with NFKC, so "ﬁ" becomes "fi" and "…" becomes "...",
and they turn control characters into spaces where BERT deletes them).
Checked on every Unicode code point: the only difference left is 36 code
points that Python's Unicode 14 tables leave unassigned and
tensorflow-text's newer ones call punctuation.
"""

import re
import unicodedata

_ASCII_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class BertNormalizer(object):
  """The text normalization of BERT's BasicTokenizer, before word splitting.

  Deletes NUL, U+FFFD and control/format characters (Unicode Cc/Cf but tab
  and line breaks), maps Unicode spaces (Zs) to " ", lower-cases (Python's
  str.lower, like BERT) and strips accents (NFD, then drop Mn marks). Line
  breaks are kept, so it can run on a whole text before it is split.

  Args:
    do_lower_case: lower-case.
    strip_accents: strip accents; None means "same as do_lower_case".
  """

  def __init__(self, do_lower_case=True, strip_accents=None):
    self.do_lower_case = bool(do_lower_case)
    self.strip_accents = (self.do_lower_case if strip_accents is None
                          else bool(strip_accents))
    self._clean_cache = {}
    self._marks_cache = {}

  def normalize(self, text):
    """The normalized text (str -> str)."""
    if not text.isascii():
      return self._normalize_unicode(text)
    if _ASCII_CONTROL.search(text) is not None:
      text = _ASCII_CONTROL.sub("", text)
    return text.lower() if self.do_lower_case else text

  def _normalize_unicode(self, text):
    # Work on the distinct characters (few, even in long texts) and change the
    # text with str.replace: per-character Python loops would be slow.
    chars = set(text)
    for c in chars:
      replacement = self._clean_char(c)
      if replacement != c:
        text = text.replace(c, replacement)
    if self.do_lower_case:
      text = text.lower()
    if self.strip_accents:
      if not unicodedata.is_normalized("NFD", text):
        text = unicodedata.normalize("NFD", text)
      marks = set()
      for c in chars:
        if c > "\x7f":
          marks.update(self._marks(c))
      for m in marks:
        text = text.replace(m, "")
    return text

  def _clean_char(self, c):
    """What BERT's _clean_text makes of character c ("" deletes it)."""
    r = self._clean_cache.get(c)
    if r is None:
      cat = unicodedata.category(c)
      if c in "\t\n\r":
        r = c
      elif c == "\ufffd" or cat in ("Cc", "Cf"):
        r = ""
      elif cat == "Zs":
        r = " "
      else:
        r = c
      self._clean_cache[c] = r
    return r

  def _marks(self, c):
    """Combining marks (Mn) that c yields after lower-casing and NFD."""
    r = self._marks_cache.get(c)
    if r is None:
      d = unicodedata.normalize("NFD", c.lower() if self.do_lower_case else c)
      r = [m for m in d if unicodedata.category(m) == "Mn"]
      self._marks_cache[c] = r
    return r

  def normalize_batch(self, texts):
    """normalize() of each text of a list (one pass when all are ASCII)."""
    joined = "\n".join(texts)
    if joined.isascii() and joined.count("\n") == len(texts) - 1:
      return self.normalize(joined).split("\n")
    return [self.normalize(t) for t in texts]


def _is_bert_punctuation(c):
  """BERT's punctuation: Unicode P* and the ASCII symbols between words."""
  cp = ord(c)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(c).startswith("P")


def _is_cjk(c):
  """The CJK ideograph blocks that BERT splits into one-character words."""
  cp = ord(c)
  return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or
          0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F or
          0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or
          0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def bert_words(normalized_text):
  """BERT's words of a normalized text: split at white space, punctuation
  and CJK ideographs (which are words of their own)."""
  words = []
  for token in normalized_text.split():
    start = 0
    for i, c in enumerate(token):
      if _is_bert_punctuation(c) or _is_cjk(c):
        if i > start:
          words.append(token[start:i])
        words.append(c)
        start = i + 1
    if start < len(token):
      words.append(token[start:])
  return words
