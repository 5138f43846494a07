"""A study's pre-training corpus: a directory of text, or in-domain text
gathered from task files, or both.

`data.corpus_dir` is a directory of raw text (read as it is).
`data.corpus_texts` lists TSV files and a column each, e.g. a task's
training sentences with the labels dropped; `data.corpus_exclude` lists
TSV files whose sentences must not be pre-trained on (a task's dev and test
sets). With `corpus_texts`, the study writes `<work_dir>/data/corpus/`:
the listed sentences less the excluded ones, each once, in order, as
documents of `LINES_PER_DOCUMENT` lines, beside a copy of `corpus_dir`'s
files when that is given too. Pre-training on a downstream task's own text
is Krishna et al., "Downstream datasets make surprisingly good pre-training
corpora" (ACL 2023).
"""

import os
import shutil

from finetune import readers
from studies import plan as plan_lib
from util.errors import UserError
from util.io_utils import write_text_atomic

LINES_PER_DOCUMENT = 50
TEXT_FILE = "in_domain.txt"
_TEXT_KEYS = ("source", "text_column")


def check(where, data):
  """Refuses a bad `corpus_texts` or `corpus_exclude` (UserError)."""
  for key in ("corpus_texts", "corpus_exclude"):
    entries = data.get(key, [])
    if not isinstance(entries, list) or (key == "corpus_texts" and
                                         key in data and not entries):
      raise UserError("%s: data.%s must be a non-empty list of "
                      "{\"source\", \"text_column\"}." % (where, key))
    for i, entry in enumerate(entries):
      name = "%s: data.%s[%d]" % (where, key, i)
      if not isinstance(entry, dict) or sorted(entry) != sorted(_TEXT_KEYS):
        raise UserError("%s must be {\"source\": a TSV file, "
                        "\"text_column\": its text column}, got %r." % (
                            name, entry))
      if not os.path.isfile(plan_lib.repo_path(entry["source"])):
        raise UserError("%s: source %s is not a file." % (name,
                                                          entry["source"]))
  if data.get("corpus_exclude") and not data.get("corpus_texts"):
    raise UserError("%s: data.corpus_exclude goes with data.corpus_texts." %
                    where)


def corpus_dir(study):
  """The directory the study's vocabulary and TFRecords are built from."""
  data = study["data"]
  if data.get("corpus_texts"):
    return os.path.join(plan_lib.data_dir(study), "corpus")
  return plan_lib.repo_path(data["corpus_dir"])


def describe(study):
  """The corpus in a few words, for the study's log."""
  data = study["data"]
  if not data.get("corpus_texts"):
    return data["corpus_dir"]
  what = " + ".join("%s:%s" % (e["source"], e["text_column"])
                    for e in data["corpus_texts"])
  if data.get("corpus_dir"):
    what += " + " + data["corpus_dir"]
  return what


def read_tsv(path):
  """(header, [fields]) of a TSV file, read as fine-tuning reads it."""
  header, rows = readers.read_tsv(path, has_header=True)
  return header, [row.fields for row in rows]


def column_texts(source, column):
  """The stripped, non-empty texts of `column` in the TSV file `source`,
  in order (UserError naming the file if it has no such column)."""
  header, rows = read_tsv(plan_lib.repo_path(source))
  if column not in header:
    raise UserError("%s has no column %r (columns: %s)." % (
        source, column, ", ".join(header)))
  i = header.index(column)
  return [row[i].strip() for row in rows if len(row) > i and row[i].strip()]


def in_domain_lines(data):
  """The sentences of `corpus_texts`, each once, less `corpus_exclude`'s."""
  excluded = set()
  for entry in data.get("corpus_exclude", []):
    excluded.update(column_texts(entry["source"], entry["text_column"]))
  lines, seen = [], set()
  for entry in data["corpus_texts"]:
    for text in column_texts(entry["source"], entry["text_column"]):
      if text not in excluded and text not in seen:
        seen.add(text)
        lines.append(text)
  return lines


def prepare(study, log=print):
  """Writes the in-domain corpus directory if the study has one and it is
  missing; returns `corpus_dir(study)`."""
  data = study["data"]
  directory = corpus_dir(study)
  if not data.get("corpus_texts"):
    return directory
  path = os.path.join(directory, TEXT_FILE)
  if os.path.isfile(path):
    return directory
  lines = in_domain_lines(data)
  log("data: in-domain corpus of %d sentences (%d words) from %s" % (
      len(lines), sum(len(line.split()) for line in lines),
      describe(study)))
  if data.get("corpus_dir"):
    extra = os.path.join(directory, "corpus_dir")
    if os.path.isdir(extra):
      shutil.rmtree(extra)  # a copy an interrupted run left half made
    shutil.copytree(plan_lib.repo_path(data["corpus_dir"]), extra)
  # Written last: its presence says the directory is complete.
  write_documents(path, lines)
  return directory


def write_documents(path, lines):
  """Writes `lines` as a corpus file, a blank line after every
  `LINES_PER_DOCUMENT` (so that the builder can hold whole documents
  out)."""
  write_text_atomic(path, "".join(
      line + ("\n\n" if (i + 1) % LINES_PER_DOCUMENT == 0 else "\n")
      for i, line in enumerate(lines)))
