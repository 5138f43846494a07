"""Sequence tagging (chunking, part of speech, named entities).

Files: `{train,dev,test}.txt` with one `token label` line per word and a
blank line between sentences (extra middle columns, as in the CoNLL-2000 and
CoNLL-2003 files, are ignored: the label is the last column). Each word is
labelled at its first WordPiece; a sentence longer than max_seq_length is
split into several windows so every word gets a prediction.
"""

import collections
import os

import tensorflow as tf
import tf_keras

from finetune import preprocessing
from finetune import readers
from finetune import task
from finetune.tagging import tagging_metrics
from model.initializers import truncated_normal
from util.errors import UserError
from util.io_utils import write_text_atomic

# labels: label ids, None in test splits.
Example = collections.namedtuple("Example", ["words", "labels"])


def bio_labels(span_types):
  """"O" and B-/I- labels for each span type."""
  return ("O",) + tuple("%s-%s" % (prefix, span_type)
                        for span_type in span_types for prefix in "BI")


class TokenClassificationHead(tf_keras.layers.Layer):
  """dropout -> dense(num_labels) at every token.

  Input [batch, seq_len, hidden]; output {"logits": [batch, seq_len,
  num_labels] float32}.
  """

  def __init__(self, num_labels, dropout_rate, initializer_range, **kwargs):
    super(TokenClassificationHead, self).__init__(**kwargs)
    self.dropout = tf_keras.layers.Dropout(dropout_rate)
    self.dense = tf_keras.layers.Dense(
        num_labels, dtype=tf.float32, name="logits",
        kernel_initializer=truncated_normal(initializer_range))

  def call(self, sequence_output, features=None, training=None):
    return {"logits": self.dense(self.dropout(sequence_output,
                                              training=training))}


class TaggingTask(task.Task):
  """Labels every word with one of `label_list`.

  `span_labels`: the labels are B-/I-/O spans, so span F1 is reported (and
  primary); otherwise word accuracy is primary.
  """

  label_list = ()
  span_labels = True
  split_files = {"train": ("train.txt",), "dev": ("dev.txt",),
                 "test": ("test.txt",)}

  def read_examples(self, path, split):
    labelled = not self.is_test_split(split)
    label_ids = {label: i for i, label in enumerate(self.label_list)}
    examples = []
    for sentence in readers.read_conll(path, labelled):
      ids = None
      if labelled:
        ids = []
        for offset, label in enumerate(sentence.labels):
          if label not in label_ids:
            raise UserError("%s:%d: label %r is not one of task %r's %d "
                            "labels (%s)." % (
                                path, sentence.line + offset, label,
                                self.name, len(self.label_list),
                                " ".join(self.label_list)))
          ids.append(label_ids[label])
      examples.append(Example(sentence.words, ids))
    return examples

  def featurize(self, examples, is_training):
    tok = self.tokenizer
    unk_id = tok.convert_tokens_to_ids(["[UNK]"])[0]
    budget = self.settings.max_seq_length - 2
    vocabulary = sorted({word for example in examples
                         for word in example.words})
    word_ids = dict(zip(vocabulary, tok.encode_batch(vocabulary)))
    rows, windows = [], []
    for example_index, example in enumerate(examples):
      pieces = [word_ids[word][:budget] or [unk_id]
                for word in example.words]
      first = 0
      while first < len(pieces):
        ids, labels, weights, positions = [tok.cls_id], [0], [0.0], []
        word = first
        while word < len(pieces) and (
            word == first or len(ids) - 1 + len(pieces[word]) <= budget):
          positions.append(len(ids))
          label = example.labels[word] if example.labels else 0
          ids += pieces[word]
          labels += [label] + [0] * (len(pieces[word]) - 1)
          weights += [1.0] + [0.0] * (len(pieces[word]) - 1)
          word += 1
        ids.append(tok.sep_id)
        ids, mask, segments = preprocessing.pad_ids(
            tok, ids, [0] * len(ids), self.settings.max_seq_length)
        pad = self.settings.max_seq_length - len(labels)
        rows.append(dict(input_ids=ids, input_mask=mask, segment_ids=segments,
                         label_ids=labels + [0] * pad,
                         label_weights=weights + [0.0] * pad))
        windows.append((example_index, first, positions))
        first = word
    return preprocessing.stack_features(rows), windows

  def build_head(self):
    m = self.settings.encoder
    return TokenClassificationHead(len(self.label_list),
                                   m["hidden_dropout_prob"],
                                   m["initializer_range"],
                                   name="%s_head" % self.name)

  def compute_losses(self, outputs, features):
    token_losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=features["label_ids"], logits=outputs["logits"])
    weights = features["label_weights"]
    return tf.reduce_sum(token_losses * weights, axis=-1) / tf.maximum(
        tf.reduce_sum(weights, axis=-1), 1.0)

  def eval_outputs(self, outputs, features):
    return {"predictions": tf.argmax(outputs["logits"], axis=-1,
                                     output_type=tf.int32)}

  def get_scorer(self, split_data):
    return tagging_metrics.TaggingScorer(self, split_data)

  def write_test_predictions(self, split_data, outputs, directory):
    predicted = tagging_metrics.assemble_word_predictions(
        split_data.examples, split_data.meta, outputs["predictions"])
    lines = []
    for example, ids in zip(split_data.examples, predicted):
      lines += ["%s %s" % (word, self.label_list[i])
                for word, i in zip(example.words, ids)] + [""]
    path = os.path.join(directory, "%s_%s.txt" % (self.name,
                                                  split_data.split))
    write_text_atomic(path, "\n".join(lines))
    return path


class Chunking(TaggingTask):
  """CoNLL-2000 chunking."""
  name = "chunk"
  label_list = bio_labels(("ADJP", "ADVP", "CONJP", "INTJ", "LST", "NP", "PP",
                           "PRT", "SBAR", "UCP", "VP"))


class NER(TaggingTask):
  """CoNLL-2003 named entities (IOB1 or IOB2)."""
  name = "ner"
  label_list = bio_labels(("PER", "LOC", "ORG", "MISC"))


class POS(TaggingTask):
  """Penn Treebank part-of-speech tags (brackets as ( ) or -LRB- -RRB-)."""
  name = "pos"
  span_labels = False
  label_list = (
      "CC", "CD", "DT", "EX", "FW", "IN", "JJ", "JJR", "JJS", "LS", "MD",
      "NN", "NNS", "NNP", "NNPS", "PDT", "POS", "PRP", "PRP$", "RB", "RBR",
      "RBS", "RP", "SYM", "TO", "UH", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ",
      "WDT", "WP", "WP$", "WRB", "#", "$", "''", "``", "(", ")", ",", ".",
      ":", "-LRB-", "-RRB-")


TAGGING_TASKS = (Chunking, NER, POS)
