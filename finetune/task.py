"""Base class of fine-tuning tasks.

A task reads its files from `<data_dir>/finetuning_data/<name>/`, turns
examples into features (numpy arrays), owns the prediction head put on the
discriminator's sequence output, its loss, its scorer and its test-set
output format. Registering a subclass in `task_builder` makes it available
as a `task_names` entry.
"""

import os

from finetune import readers
from util.errors import UserError


class SplitData(object):
  """One split of a task: examples, their features and task-specific
  metadata needed to score predictions (SQuAD windows, tagging positions)."""

  def __init__(self, split, examples, features, meta=None):
    self.split = split
    self.examples = examples
    self.features = features
    self.meta = meta


class Task(object):
  """A fine-tuning task.

  Class attributes subclasses set:
    name: registry key and data directory name, e.g. "sst".
    split_files: {split: (candidate file names,)}; the first that exists is
      read.
    eval_splits: splits evaluated every epoch; the first one's primary metric
      selects the best checkpoint.
    test_splits: splits predicted by `write_test_outputs`.

  Args:
    settings: the run's configure_finetuning_specs.FinetuningTaskSpec
      (data and model directories, lengths, the encoder's sizes for the
      head, SQuAD's settings), kept as `self.settings`.
    tokenizer: the project's tokenizer of the model's vocabulary.
  """

  name = None
  split_files = {"train": ("train.tsv",), "dev": ("dev.tsv",),
                 "test": ("test.tsv",)}
  eval_splits = ("dev",)
  test_splits = ("test",)

  def __init__(self, settings, tokenizer):
    self.settings = settings
    self.tokenizer = tokenizer
    self._examples = {}

  @property
  def data_dir(self):
    return os.path.join(self.settings.data_dir, "finetuning_data", self.name)

  def split_path(self, split):
    return readers.find_split_file(self.name, self.data_dir, split,
                                   self.split_files[split])

  def is_test_split(self, split):
    return split in self.test_splits

  def get_examples(self, split):
    """The examples of `split` (read once); UserError if there are none."""
    if split not in self._examples:
      path = self.split_path(split)
      examples = self.read_examples(path, split)
      if not examples:
        raise UserError("task %r: %s has no examples." % (self.name, path))
      self._examples[split] = examples
    return self._examples[split]

  def load(self, split, is_training=False):
    """Examples and features of `split` as a `SplitData`."""
    examples = self.get_examples(split)
    features, meta = self.featurize(examples, is_training)
    return SplitData(split, examples, features, meta)

  # ---- to implement ----------------------------------------------------------

  def read_examples(self, path, split):
    """Parses the file of `split`; labels are checked unless it is a test
    split (test files need no labels)."""
    raise NotImplementedError()

  def featurize(self, examples, is_training):
    """Returns (features {name: np.array [num_features, ...]}, meta).

    Features include `input_ids`, `input_mask`, `segment_ids` [n, seq_len]
    int32 and `feature_index` [n]; label fields of test examples are 0.
    """
    raise NotImplementedError()

  def build_head(self):
    """A tf_keras layer: head(sequence_output [batch, seq_len, hidden],
    features, training) -> {name: float32 tensor}."""
    raise NotImplementedError()

  def compute_losses(self, outputs, features):
    """Per-feature losses [batch] float32 from the head's outputs."""
    raise NotImplementedError()

  def eval_outputs(self, outputs, features):
    """{name: tensor [batch, ...]} handed to the scorer (and test writer)."""
    raise NotImplementedError()

  def get_scorer(self, split_data):
    """A `Scorer` for one split."""
    raise NotImplementedError()

  def write_test_predictions(self, split_data, outputs, directory):
    """Writes predictions for a test split into `directory`; returns the
    path written. `outputs` are the concatenated `eval_outputs`."""
    raise NotImplementedError()
