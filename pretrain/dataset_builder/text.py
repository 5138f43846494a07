"""Raw text -> chunks, documents and sentence-like units (no text is lost).

Files are cut into chunks of about CHUNK_CHARS characters so that workers can
share a long file; a document is a run of lines between blank lines (or a
whole chunk), and a unit is a short line or one sentence of a long line.
"""

import re

# Files are processed in chunks of about this many characters, cut at a blank
# line where one is near. Part of the output's definition (packing restarts at
# a chunk boundary), so it must not depend on the number of processes.
CHUNK_CHARS = 1 << 18

# Lines longer than this are split into sentences; shorter ones (hard-wrapped
# text) are packed whole, like the original packs lines.
LONG_LINE_CHARS = 200

# A sentence ends at . ! or ? (possibly followed by a closing quote or
# bracket) and white space.
_SENTENCE_END = re.compile(r"([.!?][\"'\u201d\u2019)\]]?)\s+")


def split_sentences(line):
  """Splits a stripped line into sentence-like pieces (no text is lost)."""
  parts = _SENTENCE_END.split(line)
  if len(parts) == 1:
    return parts
  sentences = [a + b for a, b in zip(parts[0::2], parts[1::2])]
  sentences.append(parts[-1])
  return sentences


def chunk_text(text, size=None):
  """Cuts text into pieces of about `size` (CHUNK_CHARS) characters at lines.

  A cut goes after a blank line found within [size, 2 * size) of the chunk
  start (documents stay whole), else after the first line break past `size`.

  Args:
    text: a file's text (str).
    size: the chunk size in characters; None reads CHUNK_CHARS when called.
  Returns:
    list of str whose concatenation is `text`.
  """
  size = size or CHUNK_CHARS
  chunks = []
  start = 0
  while len(text) - start > size:
    cut = text.find("\n\n", start + size, start + 2 * size)
    if cut >= 0:
      cut += 1
    else:
      cut = text.find("\n", start + size)
    if cut < 0:
      break
    chunks.append(text[start:cut + 1])
    start = cut + 1
  chunks.append(text[start:])
  return chunks


def split_documents(text, blanks_separate_docs):
  """A chunk's units (short lines, sentences of long lines), by document.

  Args:
    text: one chunk of a file.
    blanks_separate_docs: whether a blank line ends a document (else the
      chunk is one document).
  Returns:
    (units, bounds): units is a list of stripped, non-empty str; document d
    is units[bounds[d]:bounds[d + 1]] (len(bounds) = documents + 1).
  """
  units = []
  doc_starts = [0]
  for line in text.splitlines():
    line = line.strip()
    if not line:
      if blanks_separate_docs and len(units) > doc_starts[-1]:
        doc_starts.append(len(units))
    elif len(line) > LONG_LINE_CHARS:
      units.extend(split_sentences(line))
    else:
      units.append(line)
  if len(doc_starts) > 1 and doc_starts[-1] == len(units):
    doc_starts.pop()
  return units, doc_starts + [len(units)]
