"""Text files that are not UTF-8: which encoding they look like, and how to
convert them.

Corpora and vocabularies are read as UTF-8. A file saved as UTF-16 (what
Windows tools call "Unicode") or UTF-32 is named as such, with the iconv
command that converts it, instead of being skipped as binary or undecodable
without a hint: by its byte-order mark, or, for UTF-16 without one, by the
NUL bytes at every other position that ASCII text gets. A vocabulary that
starts with a UTF-8 byte-order mark is refused by name (`vocab_text`).
"""

import shlex

from util.errors import UserError

UTF8_BOM = b"\xef\xbb\xbf"
# Longest first: a UTF-32 little-endian mark starts like a UTF-16 one.
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
         (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
# Bytes looked at for NULs; shares of NULs at odd and even positions that
# say UTF-16 (ASCII text in UTF-16LE: every odd byte is NUL).
_SAMPLE = 4096
_MANY, _FEW = 0.3, 0.05


def wide_encoding(data):
  """(iconv's name of the encoding, why) when the bytes `data` look like
  UTF-16 or UTF-32, else None."""
  for bom, name in _BOMS:
    if data.startswith(bom):
      return name, "it starts with a %s byte-order mark" % name
  sample = data[:_SAMPLE]
  half = len(sample) // 2
  if half < 2:
    return None
  even = sample[0::2].count(0) / half
  odd = sample[1::2].count(0) / half
  if odd >= _MANY and even <= _FEW:
    return "UTF-16LE", "every other byte is NUL, with no byte-order mark"
  if even >= _MANY and odd <= _FEW:
    return "UTF-16BE", "every other byte is NUL, with no byte-order mark"
  return None


def conversion_hint(data, path):
  """"looks like UTF-16 (...); convert it with iconv ..." for a file
  `path` whose bytes `data` look UTF-16 or UTF-32, else None."""
  found = wide_encoding(data)
  if found is None:
    return None
  name, why = found
  quoted = shlex.quote(str(path))
  return ("looks like %s (%s); convert it with iconv -f %s -t UTF-8 %s > "
          "%s.utf8 and use that file instead" % (
              name, why, name, quoted, quoted))


def vocab_text(data, path):
  """The text of a vocab.txt of bytes `data`.

  Raises:
    UserError: the file starts with a UTF-8 byte-order mark (its first
      token would read as "\\ufeff[PAD]" here and to transformers and
      TensorFlow Text, which keep the mark), looks like UTF-16 or UTF-32,
      or is not UTF-8.
  """
  if data.startswith(UTF8_BOM):
    raise UserError(
        "vocab file %s starts with a UTF-8 byte-order mark (bytes EF BB BF, "
        "as some editors save): its first token would read as "
        "\"\\ufeff%s\", here and in the tokenizers of transformers and "
        "TensorFlow Text. Remove the mark (the token ids stay the same): "
        "sed -i '1s/^\\xEF\\xBB\\xBF//' %s" % (
            path, data[3:].split(b"\n", 1)[0].decode("utf-8", "replace")
            .strip(), shlex.quote(str(path))))
  hint = conversion_hint(data, path)
  if hint:
    raise UserError("vocab file %s is not UTF-8: it %s." % (path, hint))
  try:
    return data.decode("utf-8")
  except UnicodeDecodeError as e:
    raise UserError("vocab file %s is not UTF-8 (invalid byte 0x%02x at "
                    "offset %d)." % (path, data[e.start], e.start)) from None
