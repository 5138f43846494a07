"""Tasks described by a `task.json` beside their files: no code needed.

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

The tasks are the built-in `ClassificationTask`, `RegressionTask` and
`TaggingTask` with their class attributes (name, columns, labels, metrics,
files) set per instance from task.json, so training, evaluation, trials,
checkpoints and test outputs are those of the built-in tasks. Every problem
with task.json or a data file is a UserError naming the file and the key,
line or column, with the nearest valid name where there is one.
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
from finetune.classification import classification_metrics
from finetune.classification import classification_tasks
from finetune.tagging import tagging_tasks
from util import io_utils
from util.errors import UserError
from util.io_utils import write_json_atomic

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


def _number(text):
  try:
    value = float(text)
  except (TypeError, ValueError):
    return None
  return value if math.isfinite(value) else None


def sorted_labels(labels):
  """Labels in a stable order: numerically when every label is a number,
  else by their text (Unicode code points)."""
  labels = set(labels)
  if all(_number(label) is not None for label in labels):
    return sorted(labels, key=lambda label: (_number(label), label))
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
                        _json(value)))
  if len(set(value)) != len(value):
    raise UserError("%s: key %r lists %s twice." % (
        path, key, next(repr(v) for v in value if value.count(v) > 1)))
  return tuple(v.strip() for v in value)


def _json(value):
  return json.dumps(value)


def _choice(path, key, value, choices, what=""):
  if value not in choices:
    raise UserError("%s: key %r is %s%s; use one of %s%s." % (
        path, key, _json(value), nearest(value, choices),
        ", ".join(_json(c) for c in choices), what))
  return value


def load_spec(path, name):
  """Reads and checks task.json; returns a `TaskSpec`."""
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
        path, ", ".join(_json(t) for t in TYPES)))
  task_type = _choice(path, "type", spec["type"], TYPES)
  formats = FORMATS[task_type]
  if task_type == "tagging":
    for key in _TEXT_KEYS:
      if key in spec:
        raise UserError("%s: key %r does not apply to tagging: the %s files "
                        "hold one 'token label' line per word and long "
                        "sentences are split into windows, so no word is "
                        "lost." % (path, key, "/".join(
                            s + EXTENSIONS["conll"] for s in SPLITS)))
    file_format = _choice(path, "format", spec.get("format", "conll"),
                          formats, " (tagging files are 'token label' lines)")
    text_columns, label_column, rule = None, None, None
  else:
    for key in ("format", "text_columns", "label_column"):
      if key not in spec:
        raise UserError("%s: key %r is missing (a %s task needs format, "
                        "text_columns and label_column)." % (path, key,
                                                             task_type))
    file_format = _choice(path, "format", spec["format"], formats)
    text_columns = _string_list(path, "text_columns", spec["text_columns"])
    label_column = spec["label_column"]
    if not isinstance(label_column, str) or not label_column.strip():
      raise UserError("%s: key 'label_column' must be a column name (a "
                      "non-empty string); got %s." % (path,
                                                      _json(label_column)))
    label_column = label_column.strip()
    if label_column in text_columns:
      raise UserError("%s: column %r is both a text column and the "
                      "label_column." % (path, label_column))
    rule = _choice(path, "truncation",
                   spec.get("truncation", truncation.DEFAULT_RULE),
                   truncation.RULES)
  labels = None
  if "labels" in spec:
    if task_type == "regression":
      raise UserError("%s: key 'labels' does not apply to regression (the "
                      "labels are numbers)." % path)
    value = spec["labels"]
    if (not isinstance(value, list) or
        not all(isinstance(v, (str, int, float)) and label_text(v)
                for v in value)):
      raise UserError("%s: key 'labels' must be a list of labels (non-empty "
                      "strings or numbers); got %s." % (path, _json(value)))
    labels = tuple(label_text(v) for v in value)
    if len(labels) < 2:
      raise UserError("%s: key 'labels' must list at least 2 labels; got %s."
                      % (path, _json(value)))
    if len(set(labels)) != len(labels):
      raise UserError("%s: key 'labels' lists %r twice." % (
          path, next(l for l in labels if labels.count(l) > 1)))
    if task_type == "tagging":
      bad = [l for l in labels if len(l.split()) != 1]
      if bad:
        raise UserError("%s: key 'labels': tagging label %r holds "
                        "whitespace." % (path, bad[0]))
  metrics = None
  if "metrics" in spec:
    value = spec["metrics"]
    if not isinstance(value, list) or not value:
      raise UserError("%s: key 'metrics' must be a non-empty list of metric "
                      "names (%s for a %s task); got %s." % (
                          path, ", ".join(METRICS[task_type]), task_type,
                          _json(value)))
    for metric in value:
      _choice(path, "metrics", metric, METRICS[task_type],
              " for a %s task" % task_type)
    if len(set(value)) != len(value):
      raise UserError("%s: key 'metrics' lists a metric twice." % path)
    metrics = tuple(value)
  if "description" in spec and not isinstance(spec["description"], str):
    raise UserError("%s: key 'description' must be a string." % path)
  return TaskSpec(name, path, task_type, file_format, text_columns,
                  label_column, labels, metrics, rule)


# ---- the tasks ---------------------------------------------------------------


class _CustomTask(object):
  """What every task.json task adds to its built-in base class: files,
  labels and metrics from task.json, labels saved with the model."""

  def __init__(self, config, tokenizer, spec):
    super(_CustomTask, self).__init__(config, tokenizer)
    self.spec = spec
    self.name = spec.name
    self.glue_name = spec.name
    self.split_files = {split: (split + EXTENSIONS[spec.format],)
                        for split in SPLITS}
    self._label_list = None
    self._metric_names = None
    self.labels_from = None
    self._train_records = None

  # -- labels ------------------------------------------------------------------

  @property
  def finetuned_dir(self):
    return os.path.join(self.config.model_dir, "finetuning_models", self.name)

  @property
  def labels_path(self):
    return os.path.join(self.finetuned_dir, LABELS_FILE)

  @property
  def has_label_set(self):
    return self.spec.type != "regression"

  @property
  def label_list(self):
    """The labels, in the order of the head's outputs (resolved once)."""
    if not self.has_label_set:
      return None
    if self._label_list is None:
      self._label_list = self._resolve_labels()
      self.metric_names  # pylint: disable=pointless-statement
    return self._label_list

  def _saved_labels(self):
    if self.config.do_train or not io_utils.is_file(self.labels_path):
      return None
    saved = readers.read_json(self.labels_path)
    labels = saved.get("labels") if isinstance(saved, dict) else None
    if not isinstance(labels, list) or not labels:
      raise UserError("%s: expected {\"labels\": [...]} as fine-tuning wrote "
                      "it." % self.labels_path)
    return tuple(labels)

  def _resolve_labels(self):
    # Evaluating a fine-tuned model (do_train false): its head's labels.
    saved = self._saved_labels()
    if saved is not None:
      if self.spec.labels is not None and self.spec.labels != saved:
        raise UserError("%s: key 'labels' (%s) differs from the labels the "
                        "fine-tuned model was trained with (%s, saved in %s)."
                        % (self.spec.path, ", ".join(self.spec.labels),
                           ", ".join(saved), self.labels_path))
      self.labels_from = self.labels_path
      return saved
    if self.spec.labels is not None:
      self.labels_from = self.spec.path
      return self.spec.labels
    path = self.split_path("train")
    labels = sorted_labels(self.train_label_texts(path))
    if not labels:
      raise UserError("task %r: %s has no examples." % (self.name, path))
    if len(labels) < 2:
      raise UserError("%s: every example has label %r; a %s task needs at "
                      "least 2 labels." % (path, labels[0], self.spec.type))
    self.labels_from = path
    return tuple(labels)

  def label_index(self, label, path, line, column=None):
    """Index of `label` in the label list; UserError naming file, line,
    label and the nearest label."""
    labels = self.label_list
    if label not in labels:
      raise UserError("%s:%d: label %r%s is not one of task %r's %d labels "
                      "(%s, from %s)%s." % (
                          path, line, label,
                          " (column %r)" % column if column else "",
                          self.name, len(labels), ", ".join(labels),
                          self.labels_from, nearest(label, labels)))
    return labels.index(label)

  # -- metrics -----------------------------------------------------------------

  def default_metrics(self):
    raise NotImplementedError()

  def _resolve_metrics(self):
    return self.spec.metrics or self.default_metrics()

  @property
  def metric_names(self):
    """The metrics reported; checked against the labels when they depend
    on them (the first is primary)."""
    if self._metric_names is None:
      if self.has_label_set and self._label_list is None:
        self.label_list  # pylint: disable=pointless-statement
      if self._metric_names is None:
        self._metric_names = self._resolve_metrics()
    return self._metric_names

  # -- saving with the model ---------------------------------------------------

  def labels_record(self):
    return collections.OrderedDict([
        ("task", self.name), ("type", self.spec.type),
        ("labels", list(self.label_list) if self.has_label_set else None),
        ("labels_from", self.labels_from),
        ("metrics", list(self.metric_names)),
        ("format", self.spec.format),
        ("text_columns", list(self.spec.text_columns or []) or None),
        ("label_column", self.spec.label_column),
        ("truncation", self.spec.truncation),
        ("task_json", self.spec.path)])

  def save_labels(self):
    """Writes `labels.json` (labels in head order, metrics, the task.json it
    came from) beside the fine-tuning config.json."""
    write_json_atomic(self.labels_path, self.labels_record())
    return self.labels_path

  def build_head(self):
    # The head is built for these labels: keep them with the model.
    if self.config.do_train:
      self.save_labels()
    return super(_CustomTask, self).build_head()

  def test_file_name(self, split):
    return "%s_%s" % (self.name, split)


class _SentenceTask(_CustomTask):
  """Classification and regression: rows of a TSV, CSV or JSONL file."""

  def __init__(self, config, tokenizer, spec):
    super(_SentenceTask, self).__init__(config, tokenizer, spec)
    self.text_columns = spec.text_columns
    self.label_column = spec.label_column
    self.id_column = None
    self.truncation = spec.truncation
    self.truncation_stats = {}
    self._split = None

  def _column(self, columns, name, path, key):
    if name not in columns:
      raise UserError("%s:1: the header has no column %r (named by key %r of "
                      "%s)%s; the columns are: %s." % (
                          path, name, key, self.spec.path,
                          nearest(name, columns),
                          ", ".join(repr(c) for c in columns)))
    if columns.count(name) > 1:
      raise UserError("%s:1: the header has two columns %r." % (path, name))
    return columns.index(name)

  def read_records(self, path, split):
    """[Record] of a split; a test file's label column is optional."""
    labelled = not self.is_test_split(split)
    if self.spec.format == "jsonl":
      return self._jsonl_records(path, labelled)
    if self.spec.format == "csv":
      columns, rows = readers.read_csv(path)
    else:
      # read_tsv decodes in blocks: check first, for the exact bad line.
      readers.check_utf8(path)
      columns, rows = readers.read_tsv(path, has_header=True)
    text_indices = [self._column(columns, name, path, "text_columns")
                    for name in self.text_columns]
    label_index = None
    if labelled or self.label_column in columns:
      label_index = self._column(columns, self.label_column, path,
                                 "label_column")
    records = []
    for row in rows:
      if len(row.fields) != len(columns):
        raise UserError("%s:%d: %d tab-separated fields, but the header "
                        "(line 1) has %d (%s)." % (
                            path, row.line, len(row.fields), len(columns),
                            ", ".join(repr(c) for c in columns)))
      records.append(Record(
          [row.fields[i] for i in text_indices],
          row.fields[label_index] if label_index is not None else None,
          path, row.line))
    return records

  def _jsonl_records(self, path, labelled):
    records = []
    for record in readers.read_jsonl(path):
      obj = record.value

      def get(key, name, required=True):
        if name not in obj:
          if not required:
            return None
          raise UserError("%s:%d: the object has no key %r (named by key %r "
                          "of %s)%s; it has: %s." % (
                              path, record.line, name, key, self.spec.path,
                              nearest(name, obj),
                              ", ".join(repr(k) for k in obj)))
        return obj[name]

      texts = []
      for name in self.text_columns:
        value = get("text_columns", name)
        if isinstance(value, bool) or not isinstance(value,
                                                     (str, int, float)):
          raise UserError("%s:%d: key %r must hold a text (a string), got "
                          "%s." % (path, record.line, name, _json(value)))
        texts.append(str(value))
      label = get("label_column", self.label_column, required=labelled)
      if label is not None and not isinstance(label, (str, int, float)):
        raise UserError("%s:%d: key %r must hold a label (a string or a "
                        "number), got %s." % (path, record.line,
                                              self.label_column,
                                              _json(label)))
      records.append(Record(texts, label, path, record.line))
    return records

  def records(self, path, split):
    if split == "train":
      if self._train_records is None or self._train_records[0] != path:
        self._train_records = (path, self.read_records(path, split))
      return self._train_records[1]
    return self.read_records(path, split)

  def train_label_texts(self, path):
    return [self.check_label(record) for record in self.records(path,
                                                                "train")]

  def check_label(self, record, labelled=True):
    """The label text of a record; empty in a labelled split is an error."""
    text = label_text(record.label)
    if not text and labelled:
      raise UserError("%s:%d: the label (column %r) is empty." % (
          record.path, record.line, self.label_column))
    return text

  def segments(self, texts):
    """(text_a, text_b): one text, a pair, or 3+ texts joined into one."""
    if len(texts) == 1:
      return texts[0], None
    if len(texts) == 2:
      return texts[0], texts[1]
    return TEXT_SEPARATOR.join(texts), None

  def parse(self, record, labelled):
    raise NotImplementedError()

  def read_examples(self, path, split):
    labelled = not self.is_test_split(split)
    examples = []
    for row_number, record in enumerate(self.records(path, split)):
      text_a, text_b = self.segments(record.texts)
      examples.append(classification_tasks.Example(
          str(row_number), text_a, text_b, self.parse(record, labelled)))
    if split == "train":
      self._train_records = None
    return examples

  def load(self, split, is_training=False):
    self._split = split
    return super(_SentenceTask, self).load(split, is_training)

  def _encode(self, examples):
    """Input rows of `examples`, truncated by the task's rule; logs how many
    were cut and the share of tokens lost."""
    ids_a = self.tokenizer.encode_batch([e.text_a for e in examples])
    ids_b = ([None] * len(examples) if examples[0].text_b is None else
             self.tokenizer.encode_batch([e.text_b for e in examples]))
    stats = truncation.TruncationStats()
    rows = []
    for a, b in zip(ids_a, ids_b):
      ids, mask, segments, lost = truncation.encode_truncated(
          self.tokenizer, a, b, self.config.max_seq_length, self.truncation)
      stats.add(len(a) + (len(b) if b is not None else 0), lost)
      rows.append(dict(input_ids=ids, input_mask=mask, segment_ids=segments))
    self.truncation_stats[self._split] = stats
    print("%s %s: %s" % (self.name, self._split,
                         stats.summary(self.config.max_seq_length,
                                       self.truncation)), flush=True)
    return rows


class CustomClassificationTask(_SentenceTask,
                               classification_tasks.ClassificationTask):
  """`ClassificationTask` configured by task.json."""

  def default_metrics(self):
    return ("accuracy",) + (("macro_f1",) if len(self.label_list) > 2
                            else ())

  def _resolve_metrics(self):
    metrics = super(CustomClassificationTask, self)._resolve_metrics()
    if "f1" in metrics and len(self._label_list) != 2:
      raise UserError("%s: key 'metrics': 'f1' is the F1 of the second label "
                      "of a task with 2 labels; task %r has %d (%s); use "
                      "'macro_f1'." % (self.spec.path, self.name,
                                       len(self._label_list),
                                       ", ".join(self._label_list)))
    return metrics

  def parse(self, record, labelled):
    text = self.check_label(record, labelled)
    if not text:
      return None
    index = self.label_index(text, record.path, record.line,
                             self.label_column)
    return index if labelled else None

  def get_scorer(self, split_data):
    return classification_metrics.ClassificationScorer(self.metric_names)


class CustomRegressionTask(_SentenceTask, classification_tasks.RegressionTask):
  """`RegressionTask` configured by task.json (labels: any finite
  number)."""

  min_value = -float("inf")
  max_value = float("inf")

  def default_metrics(self):
    return ("pearson", "spearman")

  def train_label_texts(self, path):
    return []

  def parse(self, record, labelled):
    if not labelled:
      return None
    text = self.check_label(record)
    value = (None if isinstance(record.label, bool) else _number(text))
    if value is None:
      raise UserError("%s:%d: label %r (column %r) of regression task %r is "
                      "not a number." % (record.path, record.line, text,
                                         self.label_column, self.name))
    return value

  def get_scorer(self, split_data):
    return classification_metrics.RegressionScorer(self.metric_names)


class CustomTaggingTask(_CustomTask, tagging_tasks.TaggingTask):
  """`TaggingTask` configured by task.json (files of `token label`
  lines)."""

  def default_metrics(self):
    return (("f1", "accuracy") if is_bio(self.label_list) else
            ("accuracy",))

  def _resolve_metrics(self):
    metrics = super(CustomTaggingTask, self)._resolve_metrics()
    if "f1" in metrics and not is_bio(self._label_list):
      raise UserError("%s: key 'metrics': span 'f1' needs BIO labels ('O', "
                      "'B-<type>', 'I-<type>'); task %r's labels are %s; use "
                      "'accuracy'." % (self.spec.path, self.name,
                                       ", ".join(self._label_list)))
    return metrics

  @property
  def span_labels(self):
    return "f1" in self.metric_names

  def sentences(self, path, split):
    """([ConllSentence], labelled) of a split (train's read once)."""
    if self._train_records is None or self._train_records[0] != path:
      readers.check_utf8(path)  # the exact line of a bad byte
    if split == "train":
      if self._train_records is None or self._train_records[0] != path:
        self._train_records = (path, readers.read_conll(path, True))
      return self._train_records[1], True
    if not self.is_test_split(split):
      return readers.read_conll(path, True), True
    try:  # A test file may hold labels (then they are checked) or not.
      return readers.read_conll(path, True), True
    except UserError:
      return readers.read_conll(path, False), False

  def train_label_texts(self, path):
    sentences, _ = self.sentences(path, "train")
    return [label for sentence in sentences for label in sentence.labels]

  def read_examples(self, path, split):
    sentences, labelled = self.sentences(path, split)
    examples = []
    for sentence in sentences:
      ids = None
      if labelled:
        ids = [self.label_index(label, path, sentence.line + offset)
               for offset, label in enumerate(sentence.labels)]
      examples.append(tagging_tasks.Example(
          sentence.words, None if self.is_test_split(split) else ids))
    if split == "train":
      self._train_records = None
    return examples

  def get_scorer(self, split_data):
    return custom_metrics.TaggingScorer(self, split_data, self.metric_names)


TASK_CLASSES = {"classification": CustomClassificationTask,
                "regression": CustomRegressionTask,
                "tagging": CustomTaggingTask}


def build_task(config, name, tokenizer):
  """The task described by `<data_dir>/finetuning_data/<name>/task.json`."""
  spec = load_spec(task_json_path(config.data_dir, name), name)
  return TASK_CLASSES[spec.type](config, tokenizer, spec)
