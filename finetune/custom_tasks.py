"""Tasks described by a `task.json` beside their files: no code needed.

The spec (keys, file layout, checks) is finetune/task_spec.py. The tasks are
the built-in `ClassificationTask`, `RegressionTask` and `TaggingTask` with
their class attributes (name, columns, labels, metrics, files) set per
instance from task.json, so training, evaluation, trials, checkpoints and
test outputs are those of the built-in tasks. Every problem with a data file
is a UserError naming the file and the line or column, with the nearest
valid name where there is one.
"""

import collections
import os

from finetune import custom_metrics
from finetune import readers
from finetune import sentence_records
from finetune import task_spec
from finetune import truncation
from finetune.classification import classification_metrics
from finetune.classification import classification_tasks
from finetune.tagging import tagging_tasks
from util import io_utils
from util.errors import UserError
from util.io_utils import write_json_atomic


class _CustomTask(object):
  """What every task.json task adds to its built-in base class: files,
  labels and metrics from task.json, labels saved with the model."""

  def __init__(self, settings, tokenizer, spec):
    super(_CustomTask, self).__init__(settings, tokenizer)
    self.spec = spec
    self.name = spec.name
    self.glue_name = spec.name
    self.split_files = {split: (split + task_spec.EXTENSIONS[spec.format],)
                        for split in task_spec.SPLITS}
    self._label_list = None
    self._metric_names = None
    self.labels_from = None
    self._train_records = None

  # -- labels ------------------------------------------------------------------

  @property
  def finetuned_dir(self):
    return os.path.join(self.settings.model_dir, "finetuning_models", self.name)

  @property
  def labels_path(self):
    return os.path.join(self.finetuned_dir, task_spec.LABELS_FILE)

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
    if self.settings.do_train or not io_utils.is_file(self.labels_path):
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
    labels = task_spec.sorted_labels(self.train_label_texts(path))
    if not labels:
      raise UserError("task %r: %s has no examples." % (self.name, path))
    if len(labels) < 2:
      raise UserError("%s: every example has label %r; a %s task needs at "
                      "least 2 labels." % (path, labels[0], self.spec.type))
    self.labels_from = path
    return tuple(labels)

  def label_index(self, label, path, line, column=None):
    """Index of `label` in the label list; UserError naming file, line,
    label and the task_spec.nearest label."""
    labels = self.label_list
    if label not in labels:
      raise UserError("%s:%d: label %r%s is not one of task %r's %d labels "
                      "(%s, from %s)%s." % (
                          path, line, label,
                          " (column %r)" % column if column else "",
                          self.name, len(labels), ", ".join(labels),
                          self.labels_from, task_spec.nearest(label, labels)))
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
    if self.settings.do_train:
      self.save_labels()
    return super(_CustomTask, self).build_head()

  def test_file_name(self, split):
    return "%s_%s" % (self.name, split)


class _SentenceTask(_CustomTask):
  """Classification and regression: rows of a TSV, CSV or JSONL file."""

  def __init__(self, settings, tokenizer, spec):
    super(_SentenceTask, self).__init__(settings, tokenizer, spec)
    self.text_columns = spec.text_columns
    self.label_column = spec.label_column
    self.id_column = None
    self.truncation = spec.truncation
    self.truncation_stats = {}
    self._split = None

  def read_records(self, path, split):
    """[task_spec.Record] of a split; a test file's label column is optional."""
    return sentence_records.read_records(self.spec, path,
                                         not self.is_test_split(split))

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
    text = task_spec.label_text(record.label)
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
    return task_spec.TEXT_SEPARATOR.join(texts), None

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
          self.tokenizer, a, b, self.settings.max_seq_length, self.truncation)
      stats.add(len(a) + (len(b) if b is not None else 0), lost)
      rows.append(dict(input_ids=ids, input_mask=mask, segment_ids=segments))
    self.truncation_stats[self._split] = stats
    print("%s %s: %s" % (self.name, self._split,
                         stats.summary(self.settings.max_seq_length,
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
    value = (None if isinstance(record.label, bool)
             else task_spec.parse_number(text))
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
    return (("f1", "accuracy") if task_spec.is_bio(self.label_list) else
            ("accuracy",))

  def _resolve_metrics(self):
    metrics = super(CustomTaggingTask, self)._resolve_metrics()
    if "f1" in metrics and not task_spec.is_bio(self._label_list):
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


def build_task(settings, name, tokenizer):
  """The task described by `<data_dir>/finetuning_data/<name>/task.json`,
  of a configure_finetuning_specs.FinetuningTaskSpec (`settings`, whose
  data_dir it reads) and a tokenizer."""
  spec = task_spec.load_spec(
      task_spec.task_json_path(settings.data_dir, name), name)
  return TASK_CLASSES[spec.type](settings, tokenizer, spec)
