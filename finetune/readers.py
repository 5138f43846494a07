"""Reading task files: tab-separated (GLUE), CoNLL-style tagging, SQuAD JSON.

The readers only split files into fields; the tasks decide what the fields
mean. Every problem is a `UserError` naming the file and, where the format has
lines, the line (1-based) and what was expected there.
"""

import collections
import csv
import json
import os

from util import io_utils
from util.errors import UserError

# One data row of a tab-separated file: its fields and where it came from.
TsvRow = collections.namedtuple("TsvRow", ["fields", "path", "line"])

# One sentence of a CoNLL-style file: words, labels (None in unlabelled
# files) and the line its first word is on.
ConllSentence = collections.namedtuple("ConllSentence",
                                       ["words", "labels", "path", "line"])


def find_split_file(task_name, task_dir, split, filenames):
  """The path of the first of `filenames` that exists in `task_dir`.

  Raises UserError naming the directory or every path looked for.
  """
  if not io_utils.is_dir(task_dir):
    raise UserError("task %r: data directory %s does not exist; put the "
                    "task's files (%s) there." % (task_name, task_dir,
                                                   ", ".join(filenames)))
  paths = [os.path.join(task_dir, name) for name in filenames]
  for path in paths:
    if io_utils.is_file(path):
      return path
  raise UserError("task %r: no %s split: looked for %s." % (
      task_name, split, " or ".join(paths)))


def _lines(path):
  """Yields (line number, text without the newline); names bad encodings."""
  # utf8_lines drops a byte-order mark: GLUE's MRPC files start with one.
  for line_number, line in utf8_lines(path):
    yield line_number, line.rstrip("\r\n")


def read_tsv(path, has_header):
  """Reads a tab-separated file (no quoting, as GLUE's files).

  Returns (column names or None, [TsvRow]). Blank lines are skipped.
  """
  columns = None
  rows = []
  for line_number, text in _lines(path):
    if not text.strip():
      continue
    fields = text.split("\t")
    if has_header and columns is None:
      columns = [c.strip() for c in fields]
      continue
    rows.append(TsvRow(fields, path, line_number))
  if has_header and columns is None:
    raise UserError("%s is empty; expected a header line and rows." % path)
  return columns, rows


def column_index(columns, name, path, format_name):
  """Index of the column called `name` in a header; UserError if absent."""
  if name not in columns:
    raise UserError("%s:1: the header has no column %r (it has: %s); "
                    "expected the %s format." % (
                        path, name, ", ".join(repr(c) for c in columns),
                        format_name))
  return columns.index(name)


def get_field(row, index, what):
  """Field `index` of a row; UserError naming file, line and the field."""
  if index >= len(row.fields):
    raise UserError("%s:%d: expected at least %d tab-separated fields (%s in "
                    "field %d), found %d." % (row.path, row.line, index + 1,
                                              what, index + 1,
                                              len(row.fields)))
  return row.fields[index]


def read_conll(path, labelled):
  """Reads `token label` lines, blank line between sentences.

  More than two whitespace-separated columns are allowed (CoNLL-2000/2003
  files): the token is the first column and the label the last.
  `-DOCSTART-` lines end a sentence and are skipped. With `labelled` False
  (test files) a line may hold the token alone and labels are None.
  Returns [ConllSentence].
  """
  sentences = []
  words, labels, first_line = [], [], None

  def flush():
    if words:
      sentences.append(ConllSentence(list(words), list(labels) if labelled
                                     else None, path, first_line))
    del words[:], labels[:]

  for line_number, text in _lines(path):
    fields = text.split()
    if not fields or fields[0] == "-DOCSTART-":
      flush()
      continue
    if labelled and len(fields) < 2:
      raise UserError("%s:%d: expected 'token label' (whitespace-separated), "
                      "got %r." % (path, line_number, text))
    if not words:
      first_line = line_number
    words.append(fields[0])
    labels.append(fields[-1])
  flush()
  return sentences


def read_json(path):
  """Parses a JSON file; a syntax error names the file, line and column."""
  try:
    return json.loads(io_utils.read_text(path, encoding="utf-8-sig"))
  except ValueError as e:
    if isinstance(e, json.JSONDecodeError):
      raise UserError("%s:%d: not valid JSON at column %d: %s." % (
          path, e.lineno, e.colno, e.msg))
    raise UserError("%s: not valid JSON or UTF-8: %s." % (path, e))


# ---- CSV and JSON-lines files (tasks described by a task.json) --------------

# One record of a JSON-lines file: the parsed value, where it came from.
JsonlRecord = collections.namedtuple("JsonlRecord", ["value", "path", "line"])


def utf8_lines(path):
  """Yields (line number, line with its ending) of a UTF-8 file (a leading
  byte-order mark dropped); a bad byte is an error naming its line (decoded
  line by line, so the line is exact)."""
  for line_number, raw in enumerate(io_utils.iter_lines(path), 1):
    if line_number == 1 and raw.startswith(b"\xef\xbb\xbf"):
      raw = raw[3:]
    try:
      yield line_number, raw.decode("utf-8")
    except UnicodeDecodeError as e:
      raise UserError("%s:%d: not valid UTF-8 (%s at byte %d of the line); "
                      "save the file as UTF-8." % (path, line_number,
                                                   e.reason, e.start + 1))


def check_utf8(path):
  """UserError naming the first line of `path` that is not UTF-8."""
  for _ in utf8_lines(path):
    pass


# The largest field csv.field_size_limit accepts on every platform (a C long).
_MAX_FIELD = 2**31 - 1


def read_csv(path):
  """Reads a comma-separated file with a header row (RFC 4180 quoting: a
  field may hold commas, quotes doubled, and line breaks inside quotes).

  Returns (column names, [TsvRow]); a row's `line` is the line it starts on.
  Blank lines are skipped. A row whose number of fields is not the header's
  is an error naming the line.
  """
  # Python's csv refuses fields over 128 KiB by default; the TSV reader
  # takes any size, and so does this one.
  if csv.field_size_limit() < _MAX_FIELD:
    csv.field_size_limit(_MAX_FIELD)
  reader = csv.reader((line for _, line in utf8_lines(path)), strict=True)
  columns, rows = None, []
  start = 1
  while True:
    try:
      fields = next(reader)
    except StopIteration:
      break
    except csv.Error as e:
      raise UserError("%s:%d: not valid CSV: %s." % (path, reader.line_num, e))
    line, start = start, reader.line_num + 1
    if not fields or (len(fields) == 1 and not fields[0].strip()):
      continue
    if columns is None:
      columns = [c.strip() for c in fields]
      continue
    if len(fields) != len(columns):
      raise UserError("%s:%d: %d comma-separated fields, but the header (line "
                      "1) has %d (%s); quote fields that hold commas." % (
                          path, line, len(fields), len(columns),
                          ", ".join(repr(c) for c in columns)))
    rows.append(TsvRow(fields, path, line))
  if columns is None:
    raise UserError("%s is empty; expected a header line and rows." % path)
  return columns, rows


def read_jsonl(path):
  """Reads a JSON-lines file: one JSON object per non-blank line.

  Returns [JsonlRecord]; a line that is not JSON, or not an object, is an
  error naming the line.
  """
  records = []
  for line_number, text in utf8_lines(path):
    text = text.rstrip("\r\n")
    if not text.strip():
      continue
    try:
      value = json.loads(text)
    except ValueError as e:
      raise UserError("%s:%d: not valid JSON (%s); expected one JSON object "
                      "per line." % (path, line_number, e))
    if not isinstance(value, dict):
      raise UserError("%s:%d: expected a JSON object per line, got %s." % (
          path, line_number, type(value).__name__))
    records.append(JsonlRecord(value, path, line_number))
  return records
