"""The `task.json` of a task described by its files: keys, discovery, checks.

A directory `<data_dir>/finetuning_data/<name>/` holding `task.json` and the
files `train.<ext>`, `dev.<ext>` (and optionally `test.<ext>`) is the task
`<name>` of hparam `task_names` (`<name>`: letters, digits, `_`, `-`, `.`;
not a built-in task's name). task.json keys:

  type          "classification", "regression" or "tagging" (required).
  format        "tsv", "csv" or "jsonl" (classification and regression,
                required; files train.tsv / train.csv / train.jsonl, ...);
                "conll" (tagging, the default and only one: train.txt, ...
                with `token label` lines, as the chunk/ner/pos tasks).
  text_columns  classification/regression: a list of one column (one text)
                or two (a sentence pair). Three or more are joined, in order,
                with TEXT_SEPARATOR (" | ") into one text.
  label_column  classification/regression: the label's column.
  labels        optional label list (classification, tagging); default: the
                training file's labels, sorted (numerically when all are
                numbers). Saved in the fine-tuned model's directory.
  metrics       optional; the first selects the kept checkpoint. Defaults:
                classification accuracy (+ macro_f1 with > 2 labels),
                regression pearson, spearman; tagging f1 (span F1, when the
                labels are BIO) and accuracy (word accuracy).
  truncation    classification/regression: "head" (default), "tail" or
                "head+tail" (see `finetune.truncation`).
  description   optional free text.

Every problem with task.json is a UserError naming the file and the key,
with the nearest valid name where there is one. The tasks built from it are
in finetune/custom_tasks.py.
"""

import collections
import difflib
import json
import math
import os
import re

from finetune import custom_metrics
from finetune import readers
from finetune import truncation
from util import io_utils
from util.errors import UserError

TASK_FILE = "task.json"
# Written beside the fine-tuning config.json:
# <model_dir>/finetuning_models/<task>/labels.json.
LABELS_FILE = "labels.json"
README_SECTION = "\"Your own task: task.json\""

TYPES = ("classification", "regression", "tagging")
FORMATS = {"classification": ("tsv", "csv", "jsonl"),
           "regression": ("tsv", "csv", "jsonl"),
           "tagging": ("conll",)}
EXTENSIONS = {"tsv": ".tsv", "csv": ".csv", "jsonl": ".jsonl",
              "conll": ".txt"}
METRICS = {"classification": ("accuracy", "macro_f1", "f1", "mcc"),
           "regression": ("pearson", "spearman"),
           "tagging": custom_metrics.TAGGING_METRICS}
KEYS = ("type", "format", "text_columns", "label_column", "labels",
        "metrics", "truncation", "description")
# Keys that only sentence (pair) tasks have.
_TEXT_KEYS = ("text_columns", "label_column", "truncation")
# Joins the texts of three or more text columns into one text.
TEXT_SEPARATOR = " | "
SPLITS = ("train", "dev", "test")

TaskSpec = collections.namedtuple("TaskSpec", [
    "name", "path", "type", "format", "text_columns", "label_column",
    "labels", "metrics", "truncation"])

# One labelled (or test) row: its texts, its raw label (None if absent),
# where it came from.
Record = collections.namedtuple("Record", ["texts", "label", "path", "line"])


# ---- finding and reading task.json -------------------------------------------


def task_json_path(data_dir, name):
  return os.path.join(data_dir, "finetuning_data", name, TASK_FILE)


def has_task_json(data_dir, name):
  return data_dir is not None and io_utils.is_file(task_json_path(data_dir,
                                                                  name))


def task_json_names(data_dir):
  """Names of the task.json tasks in `<data_dir>/finetuning_data`."""
  if data_dir is None:
    return []
  root = os.path.join(data_dir, "finetuning_data")
  if not io_utils.is_dir(root):
    return []
  return [name for name in io_utils.listdir(root)
          if io_utils.is_file(os.path.join(root, name, TASK_FILE))]


def nearest(word, choices):
  """" (did you mean 'x'?)" for the closest of `choices`, or ""."""
  match = difflib.get_close_matches(str(word), [str(c) for c in choices], 1,
                                    0.6)
  return " (did you mean %r?)" % match[0] if match else ""


def unknown_task_message(unknown, builtin, data_dir=None):
  """The error for unknown `task_names` entries: the built-in tasks, the
  task.json tasks found, and how to add one."""
  custom = task_json_names(data_dir) if data_dir is not None else []
  names = ", ".join("%r%s" % (name, nearest(name, list(builtin) + custom))
                    for name in unknown)
  where = (os.path.join(data_dir, "finetuning_data", "<name>", "")
           if data_dir is not None else "<data_dir>/finetuning_data/<name>/")
  lines = ["unknown task %s in hparam 'task_names'; built-in tasks: %s." % (
      names, ", ".join(sorted(builtin)))]
  if data_dir is not None:
    lines.append("Tasks described by a %s in %s: %s." % (
        TASK_FILE, os.path.join(data_dir, "finetuning_data"),
        ", ".join(custom) if custom else "none"))
    for name in unknown:
      directory = os.path.join(data_dir, "finetuning_data", name)
      if io_utils.is_dir(directory) and not io_utils.is_file(
          os.path.join(directory, TASK_FILE)):
        lines.append("%s exists but holds no %s." % (directory, TASK_FILE))
  lines.append("To fine-tune on your own data, put a %s (keys: type, format, "
               "text_columns, label_column; optional labels, metrics, "
               "truncation) in %s beside the task's train and dev files; see "
               "the README section %s." % (TASK_FILE, where, README_SECTION))
  return " ".join(lines)


def label_text(value):
  """A label cell or JSON value as the label string ("" if empty)."""
  if value is None:
    return ""
  if isinstance(value, bool):
    return "true" if value else "false"
  return str(value).strip()


def parse_number(text):
  """float(text) when it is a finite number, else None."""
  try:
    value = float(text)
  except (TypeError, ValueError):
    return None
  return value if math.isfinite(value) else None


def sorted_labels(labels):
  """Labels in a stable order: numerically when every label is a number,
  else by their text (Unicode code points)."""
  labels = set(labels)
  if all(parse_number(label) is not None for label in labels):
    return sorted(labels, key=lambda label: (parse_number(label), label))
  return sorted(labels)


def is_bio(labels):
  """Whether `labels` are "O" and B-/I- span labels (with at least one)."""
  spans = [label for label in labels if label != "O"]
  return bool(spans) and all(
      len(label) > 2 and label[:2] in ("B-", "I-") for label in spans)


def _string_list(path, key, value, min_length=1):
  if (not isinstance(value, list) or len(value) < min_length or
      not all(isinstance(v, str) and v.strip() for v in value)):
    raise UserError("%s: key %r must be a list of at least %d non-empty "
                    "string%s, e.g. [\"sentence\"]; got %s." % (
                        path, key, min_length, "s" if min_length > 1 else "",
                        json_text(value)))
  if len(set(value)) != len(value):
    raise UserError("%s: key %r lists %s twice." % (
        path, key, next(repr(v) for v in value if value.count(v) > 1)))
  return tuple(v.strip() for v in value)


def json_text(value):
  """`value` as JSON, for messages."""
  return json.dumps(value)


def _choice(path, key, value, choices, what=""):
  if value not in choices:
    raise UserError("%s: key %r is %s%s; use one of %s%s." % (
        path, key, json_text(value), nearest(value, choices),
        ", ".join(json_text(c) for c in choices), what))
  return value


def load_spec(path, name):
  """Reads and checks task.json; returns a `TaskSpec`."""
  spec = _read_spec(path, name)
  task_type = _choice(path, "type", spec["type"], TYPES)
  if task_type == "tagging":
    file_format = _tagging_format(path, spec)
    text_columns, label_column, rule = None, None, None
  else:
    file_format, text_columns, label_column, rule = _text_columns(
        path, spec, task_type)
  labels = _labels(path, spec, task_type)
  metrics = _metrics(path, spec, task_type)
  if "description" in spec and not isinstance(spec["description"], str):
    raise UserError("%s: key 'description' must be a string." % path)
  return TaskSpec(name, path, task_type, file_format, text_columns,
                  label_column, labels, metrics, rule)


def _read_spec(path, name):
  """task.json as a dict of known keys with a 'type', for task `name`."""
  if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", name):
    raise UserError("%s: the task's name (its directory name) %r may only "
                    "hold letters, digits, '_', '-' and '.'; rename the "
                    "directory." % (path, name))
  spec = readers.read_json(path)
  if not isinstance(spec, dict):
    raise UserError("%s: expected a JSON object ({\"type\": ..., ...}), got "
                    "%s." % (path, type(spec).__name__))
  for key in spec:
    if key not in KEYS:
      raise UserError("%s: %r is not a task.json key%s; the keys are: %s." % (
          path, key, nearest(key, KEYS), ", ".join(KEYS)))
  if "type" not in spec:
    raise UserError("%s: key 'type' is missing; use one of %s." % (
        path, ", ".join(json_text(t) for t in TYPES)))
  return spec


def _tagging_format(path, spec):
  """The file format of a tagging task; the text-task keys are refused."""
  for key in _TEXT_KEYS:
    if key in spec:
      raise UserError("%s: key %r does not apply to tagging: the %s files "
                      "hold one 'token label' line per word and long "
                      "sentences are split into windows, so no word is "
                      "lost." % (path, key, "/".join(
                          s + EXTENSIONS["conll"] for s in SPLITS)))
  return _choice(path, "format", spec.get("format", "conll"),
                 FORMATS["tagging"],
                 " (tagging files are 'token label' lines)")


def _text_columns(path, spec, task_type):
  """(format, text_columns, label_column, truncation) of a text task."""
  for key in ("format", "text_columns", "label_column"):
    if key not in spec:
      raise UserError("%s: key %r is missing (a %s task needs format, "
                      "text_columns and label_column)." % (path, key,
                                                           task_type))
  file_format = _choice(path, "format", spec["format"], FORMATS[task_type])
  text_columns = _string_list(path, "text_columns", spec["text_columns"])
  label_column = spec["label_column"]
  if not isinstance(label_column, str) or not label_column.strip():
    raise UserError("%s: key 'label_column' must be a column name (a "
                    "non-empty string); got %s." % (path,
                                                    json_text(label_column)))
  label_column = label_column.strip()
  if label_column in text_columns:
    raise UserError("%s: column %r is both a text column and the "
                    "label_column." % (path, label_column))
  rule = _choice(path, "truncation",
                 spec.get("truncation", truncation.DEFAULT_RULE),
                 truncation.RULES)
  return file_format, text_columns, label_column, rule


def _labels(path, spec, task_type):
  """The 'labels' key as a tuple of label texts, or None when absent."""
  if "labels" not in spec:
    return None
  if task_type == "regression":
    raise UserError("%s: key 'labels' does not apply to regression (the "
                    "labels are numbers)." % path)
  value = spec["labels"]
  if (not isinstance(value, list) or
      not all(isinstance(v, (str, int, float)) and label_text(v)
              for v in value)):
    raise UserError("%s: key 'labels' must be a list of labels (non-empty "
                    "strings or numbers); got %s." % (path, json_text(value)))
  labels = tuple(label_text(v) for v in value)
  if len(labels) < 2:
    raise UserError("%s: key 'labels' must list at least 2 labels; got %s."
                    % (path, json_text(value)))
  if len(set(labels)) != len(labels):
    raise UserError("%s: key 'labels' lists %r twice." % (
        path, next(label for label in labels if labels.count(label) > 1)))
  if task_type == "tagging":
    bad = [label for label in labels if len(label.split()) != 1]
    if bad:
      raise UserError("%s: key 'labels': tagging label %r holds "
                      "whitespace." % (path, bad[0]))
  return labels


def _metrics(path, spec, task_type):
  """The 'metrics' key as a tuple of metric names, or None when absent."""
  if "metrics" not in spec:
    return None
  value = spec["metrics"]
  if not isinstance(value, list) or not value:
    raise UserError("%s: key 'metrics' must be a non-empty list of metric "
                    "names (%s for a %s task); got %s." % (
                        path, ", ".join(METRICS[task_type]), task_type,
                        json_text(value)))
  for metric in value:
    _choice(path, "metrics", metric, METRICS[task_type],
            " for a %s task" % task_type)
  if len(set(value)) != len(value):
    raise UserError("%s: key 'metrics' lists a metric twice." % path)
  return tuple(value)


# ---- the tasks ---------------------------------------------------------------
