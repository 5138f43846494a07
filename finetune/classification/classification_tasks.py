"""GLUE tasks: sentence (pair) classification and regression from [CLS].

Files are GLUE's official TSVs in `<data_dir>/finetuning_data/<task>/`.
Columns are found by their header names (so extra or reordered columns are
fine); CoLA's train/dev files have no header and use GLUE's fixed columns.
tf-models-official's GLUE processors are not used: in 2.20 they load GLUE
from TensorFlow Datasets rather than reading these files.
"""

import collections
import os

import numpy as np
import tensorflow as tf
import tf_keras

from finetune import preprocessing
from finetune import readers
from finetune import task
from finetune.classification import classification_metrics
from model.initializers import truncated_normal
from util.errors import UserError
from util.io_utils import write_text_atomic

# guid: the test file's id column (GLUE submission index), else the row
# number. label: a label index (classification), a float (regression), or
# None in test splits.
Example = collections.namedtuple("Example",
                                 ["guid", "text_a", "text_b", "label"])


def pool_sequence(sequence_output, input_mask, pooling):
  """The sentence vector a classification head reads.

  Args:
    sequence_output: [batch, seq_len, hidden].
    input_mask: [batch, seq_len], 1 on real tokens ([CLS] and [SEP] included).
    pooling: "cls" (the [CLS] state, as ELECTRA) or "mean" (the mean of the
      real tokens' states).

  Returns:
    [batch, hidden] float32 (the mean is summed in float32 even under mixed
    precision).
  """
  sequence_output = tf.cast(sequence_output, tf.float32)
  if pooling == "cls":
    return sequence_output[:, 0]
  if pooling != "mean":
    raise ValueError("Unknown pooling %r; use 'cls' or 'mean'." % pooling)
  mask = tf.cast(input_mask, tf.float32)[:, :, tf.newaxis]
  total = tf.reduce_sum(sequence_output * mask, axis=1)
  return total / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)


class ClassificationHead(tf_keras.layers.Layer):
  """Pooled hidden state (see `pool_sequence`) -> dropout -> dense.

  Inputs: sequence output [batch, seq_len, hidden]; `features["input_mask"]`
  [batch, seq_len] for mean pooling. Output: {"logits": [batch, num_outputs]
  float32}.
  """

  def __init__(self, num_outputs, dropout_rate, initializer_range,
               pooling="cls", **kwargs):
    super(ClassificationHead, self).__init__(**kwargs)
    self.pooling = pooling
    self.dropout = tf_keras.layers.Dropout(dropout_rate)
    self.dense = tf_keras.layers.Dense(
        num_outputs, dtype=tf.float32, name="logits",
        kernel_initializer=truncated_normal(initializer_range))

  def call(self, sequence_output, features=None, training=None):
    mask = None if features is None else features.get("input_mask")
    if self.pooling == "mean" and mask is None:
      raise ValueError("Mean pooling needs features['input_mask'].")
    pooled = self.dropout(pool_sequence(sequence_output, mask, self.pooling),
                          training=training)
    return {"logits": self.dense(pooled)}

  def get_config(self):
    config = super(ClassificationHead, self).get_config()
    config.update(num_outputs=self.dense.units, dropout_rate=self.dropout.rate,
                  initializer_range=self.dense.kernel_initializer.stddev,
                  pooling=self.pooling)
    return config


class SingleOutputTask(task.Task):
  """A GLUE task with one prediction per example.

  Subclasses set `name`, `glue_name` (submission file name) and the header
  names of their text and label columns.
  """

  glue_name = None
  text_columns = ("sentence",)
  label_column = "label"
  # Id column of test files (the GLUE submission index); row number if absent.
  id_column = "index"
  # {column: index} for splits whose files have no header (CoLA).
  headerless_columns = None

  def has_header(self, split):
    return True

  @property
  def format_name(self):
    return "GLUE %s" % self.glue_name

  def parse_label(self, text, row):
    raise NotImplementedError()

  def read_examples(self, path, split):
    columns, rows = readers.read_tsv(path, self.has_header(split))
    is_test = self.is_test_split(split)

    def index(name, required):
      if columns is None:
        return self.headerless_columns[name]
      if name not in columns and not required:
        return None
      return readers.column_index(columns, name, path, self.format_name)

    text_indices = [index(name, True) for name in self.text_columns]
    label_index = None if is_test else index(self.label_column, True)
    id_index = index(self.id_column, False) if is_test else None
    examples = []
    for row_number, row in enumerate(rows):
      texts = [readers.get_field(row, i, "column %r" % name)
               for i, name in zip(text_indices, self.text_columns)]
      label = None
      if label_index is not None:
        label = self.parse_label(readers.get_field(
            row, label_index, "the label column %r" % self.label_column), row)
      guid = (readers.get_field(row, id_index, "column %r" % self.id_column)
              if id_index is not None else str(row_number))
      examples.append(Example(guid, texts[0],
                              texts[1] if len(texts) > 1 else None, label))
    return examples

  def _encode(self, examples):
    """Input rows of `examples` (texts tokenized in one batch each)."""
    ids_a = self.tokenizer.encode_batch([e.text_a for e in examples])
    ids_b = ([None] * len(examples) if examples[0].text_b is None else
             self.tokenizer.encode_batch([e.text_b for e in examples]))
    rows = []
    for a, b in zip(ids_a, ids_b):
      ids, mask, segments = preprocessing.encode_pair(
          self.tokenizer, a, b, self.settings.max_seq_length)
      rows.append(dict(input_ids=ids, input_mask=mask, segment_ids=segments))
    return rows

  def test_file_name(self, split):
    """GLUE submission file name of a test split."""
    return self.glue_name

  def build_head(self):
    m = self.settings.encoder
    return ClassificationHead(self.num_outputs, m["hidden_dropout_prob"],
                              m["initializer_range"],
                              pooling=self.settings.classifier_pooling,
                              name="%s_head" % self.name)

  def write_test_predictions(self, split_data, outputs, directory):
    lines = ["index\tprediction"]
    for example, prediction in zip(split_data.examples,
                                   self.predicted_labels(outputs)):
      lines.append("%s\t%s" % (example.guid, prediction))
    path = os.path.join(directory, self.test_file_name(split_data.split) +
                        ".tsv")
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path


class ClassificationTask(SingleOutputTask):
  """Softmax classification over `label_list` (the file's label strings)."""

  label_list = ("0", "1")
  metric_names = ("accuracy",)

  @property
  def num_outputs(self):
    return len(self.label_list)

  def parse_label(self, text, row):
    label = text.strip()
    if label not in self.label_list:
      raise UserError("%s:%d: label %r is not one of task %r's labels (%s)." % (
          row.path, row.line, label, self.name,
          ", ".join(repr(label) for label in self.label_list)))
    return self.label_list.index(label)

  def featurize(self, examples, is_training):
    rows = self._encode(examples)
    for row, example in zip(rows, examples):
      row["label_ids"] = example.label if example.label is not None else 0
    return preprocessing.stack_features(rows), None

  def compute_losses(self, outputs, features):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=features["label_ids"], logits=outputs["logits"])

  def eval_outputs(self, outputs, features):
    return {"logits": outputs["logits"], "label_ids": features["label_ids"]}

  def get_scorer(self, split_data):
    return classification_metrics.ClassificationScorer(self.metric_names)

  def predicted_labels(self, outputs):
    return [self.label_list[i] for i in np.argmax(outputs["logits"], -1)]


class RegressionTask(SingleOutputTask):
  """Regression of a score in [min_value, max_value] with squared error."""

  min_value = 0.0
  max_value = 5.0
  num_outputs = 1

  def parse_label(self, text, row):
    try:
      value = float(text)
    except ValueError:
      value = None
    if value is None or not self.min_value <= value <= self.max_value:
      raise UserError("%s:%d: label %r of task %r must be a number in [%g, "
                      "%g]." % (row.path, row.line, text.strip(), self.name,
                                self.min_value, self.max_value))
    return value

  def featurize(self, examples, is_training):
    rows = self._encode(examples)
    for row, example in zip(rows, examples):
      row["label_values"] = float(example.label or 0.0)
    return preprocessing.stack_features(rows), None

  def _predictions(self, outputs):
    return outputs["logits"][:, 0]

  def compute_losses(self, outputs, features):
    return tf.square(self._predictions(outputs) - features["label_values"])

  def eval_outputs(self, outputs, features):
    return {"predictions": self._predictions(outputs),
            "label_values": features["label_values"]}

  def get_scorer(self, split_data):
    return classification_metrics.RegressionScorer()

  def predicted_labels(self, outputs):
    clipped = np.clip(outputs["predictions"], self.min_value, self.max_value)
    return ["%.3f" % value for value in clipped]


# ---- the GLUE tasks ---------------------------------------------------------


class CoLA(ClassificationTask):
  name = "cola"
  glue_name = "CoLA"
  metric_names = ("mcc", "accuracy")
  headerless_columns = {"sentence": 3, "label": 1}

  def has_header(self, split):
    return self.is_test_split(split)


class SST(ClassificationTask):
  name = "sst"
  glue_name = "SST-2"


class MRPC(ClassificationTask):
  name = "mrpc"
  glue_name = "MRPC"
  text_columns = ("#1 String", "#2 String")
  label_column = "Quality"
  metric_names = ("accuracy", "f1")


class STS(RegressionTask):
  name = "sts"
  glue_name = "STS-B"
  text_columns = ("sentence1", "sentence2")
  label_column = "score"


class QQP(ClassificationTask):
  name = "qqp"
  glue_name = "QQP"
  text_columns = ("question1", "question2")
  label_column = "is_duplicate"
  id_column = "id"
  metric_names = ("accuracy", "f1")


class MNLI(ClassificationTask):
  name = "mnli"
  glue_name = "MNLI"
  label_list = ("contradiction", "entailment", "neutral")
  text_columns = ("sentence1", "sentence2")
  label_column = "gold_label"
  split_files = {"train": ("train.tsv",),
                 "dev_matched": ("dev_matched.tsv",),
                 "dev_mismatched": ("dev_mismatched.tsv",),
                 "test_matched": ("test_matched.tsv",),
                 "test_mismatched": ("test_mismatched.tsv",)}
  eval_splits = ("dev_matched", "dev_mismatched")
  test_splits = ("test_matched", "test_mismatched")

  def test_file_name(self, split):
    return {"test_matched": "MNLI-m", "test_mismatched": "MNLI-mm"}[split]


class QNLI(ClassificationTask):
  name = "qnli"
  glue_name = "QNLI"
  label_list = ("entailment", "not_entailment")
  text_columns = ("question", "sentence")


class RTE(ClassificationTask):
  name = "rte"
  glue_name = "RTE"
  label_list = ("entailment", "not_entailment")
  text_columns = ("sentence1", "sentence2")


class WNLI(ClassificationTask):
  name = "wnli"
  glue_name = "WNLI"
  text_columns = ("sentence1", "sentence2")


GLUE_TASKS = (CoLA, SST, MRPC, STS, QQP, MNLI, QNLI, RTE, WNLI)
