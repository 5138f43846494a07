"""A raw-text corpus directory: its files, their text, and what was skipped.

Shared by the vocabulary builder and the pre-training dataset builder, so both
read exactly the same text and skip exactly the same files.
"""

import os
import sys

from util import text_encoding
from util.errors import UserError


class CorpusFile(object):
  """One file of the corpus: `path` (absolute), `relpath`, `size` in bytes."""

  def __init__(self, path, relpath, size):
    self.path = path
    self.relpath = relpath
    self.size = size


def list_corpus_files(corpus_dir):
  """All regular files under `corpus_dir`, recursively, sorted by relative path.

  Hidden files and directories (names starting with ".") and special files
  (pipes, sockets, broken links) are left out.

  Returns:
    (files, skipped): a list of CorpusFile and a list of (relpath, reason) for
    the files left out.
  Raises:
    UserError: `corpus_dir` is not a directory.
  """
  if not os.path.isdir(corpus_dir):
    raise UserError("corpus directory %s does not exist or is not a "
                    "directory (--corpus-dir)." % corpus_dir)
  files, skipped = [], []
  for root, dirs, names in os.walk(corpus_dir):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    for name in names:
      path = os.path.join(root, name)
      relpath = os.path.relpath(path, corpus_dir).replace(os.sep, "/")
      if name.startswith("."):
        skipped.append((relpath, "hidden file"))
        continue
      if not os.path.isfile(path):
        skipped.append((relpath, "not a regular file"))
        continue
      try:
        size = os.path.getsize(path)
      except OSError as e:
        skipped.append((relpath, "unreadable (%s)" % (e.strerror or e)))
        continue
      files.append(CorpusFile(path, relpath, size))
  files.sort(key=lambda f: f.relpath)
  skipped.sort()
  return files, skipped


def read_text(path):
  """Reads a corpus file as text.

  Returns:
    (text, None) for a usable file, or (None, reason) where reason says why it
    is skipped: unreadable, empty, binary (holds NUL bytes) or not UTF-8;
    a file that looks UTF-16 or UTF-32 is said to, with the iconv command
    that converts it (util/text_encoding.py). A UTF-8 byte-order mark is
    dropped.
  """
  try:
    with open(path, "rb") as f:
      data = f.read()
  except OSError as e:
    return None, "unreadable (%s)" % (e.strerror or e)
  if not data:
    return None, "empty"
  hint = text_encoding.conversion_hint(data, path)
  if hint:
    return None, "not UTF-8: " + hint
  nul = data.find(b"\x00")
  if nul >= 0:
    return None, "binary (NUL byte at offset %d)" % nul
  try:
    text = data.decode("utf-8-sig")
  except UnicodeDecodeError as e:
    return None, "not UTF-8 (invalid byte 0x%02x at offset %d)" % (
        data[e.start], e.start)
  if not text.strip():
    return None, "empty (only whitespace)"
  return text, None


def read_corpus(corpus_dir):
  """The texts of the usable files of `corpus_dir`, in path order.

  The files left out are warned about on stderr (warn_skipped).

  Raises:
    UserError: `corpus_dir` is not a directory, or no file is usable.
  """
  files, skipped = list_corpus_files(corpus_dir)
  texts = []
  for f in files:
    text, reason = read_text(f.path)
    if text is None:
      skipped.append((f.relpath, reason))
    else:
      texts.append(text)
  for relpath, reason in skipped:
    warn_skipped(relpath, reason)
  if not texts:
    raise no_text_error(corpus_dir, len(files), skipped)
  return texts


def warn_skipped(relpath, reason):
  sys.stderr.write("warning: skipping %s: %s\n" % (relpath, reason))


def no_text_error(corpus_dir, num_files, skipped):
  """The UserError for a corpus without usable text."""
  if not num_files and not skipped:
    return UserError("corpus directory %s holds no files; put UTF-8 text "
                     "files in it (--corpus-dir)." % corpus_dir)
  shown = "; ".join("%s: %s" % s for s in skipped[:5])
  more = " (and %d more)" % (len(skipped) - 5) if len(skipped) > 5 else ""
  return UserError("corpus directory %s has no usable text: every file was "
                   "skipped (%s%s). Give UTF-8 text files (--corpus-dir)." %
                   (corpus_dir, shown, more))
