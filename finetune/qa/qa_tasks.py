"""SQuAD 1.1 and 2.0: answer-span extraction over doc-stride windows.

The windows (query + a stride of the paragraph), the alignment of answers to
WordPiece tokens and the n-best decoding are tf-models-official's
`official.nlp.data.squad_lib`. This module checks the JSON (a problem names
the file and the question), builds the examples, and adds the head: start
and end logits over the paragraph and, for 2.0, an answerability classifier
(ELECTRA's: [CLS] and the start-probability-weighted hidden state ->
dense -> one "no answer" logit per window).
"""

import tensorflow as tf
import tf_keras
from official.modeling import tf_utils
from official.nlp.data import squad_lib

from finetune import preprocessing
from finetune import readers
from finetune import task
from finetune.qa import qa_metrics
from model.initializers import truncated_normal
from util.errors import UserError

# Added to the span logits of tokens outside the paragraph (and [CLS]).
_MASKED_LOGIT = -10000.0


class SpanHead(tf_keras.layers.Layer):
  """Start/end logits and, with `answerable`, a no-answer logit.

  Inputs: sequence output [batch, seq_len, hidden]; features with
  `paragraph_mask` [batch, seq_len] (1 on paragraph tokens and [CLS]).
  Outputs (float32): `start_logits`, `end_logits` [batch, seq_len] (masked
  outside the paragraph) and `no_answer_logit` [batch].
  """

  def __init__(self, hidden_size, answerable, hidden_act, initializer_range,
               **kwargs):
    super(SpanHead, self).__init__(**kwargs)
    self.answerable = answerable
    self.span_logits = tf_keras.layers.Dense(
        2, dtype=tf.float32, name="span_logits",
        kernel_initializer=truncated_normal(initializer_range))
    if answerable:
      self.answerable_hidden = tf_keras.layers.Dense(
          hidden_size, activation=tf_utils.get_activation(hidden_act),
          kernel_initializer=truncated_normal(initializer_range),
          name="answerable_hidden")
      self.answerable_logit = tf_keras.layers.Dense(
          1, dtype=tf.float32, name="answerable_logit",
          kernel_initializer=truncated_normal(initializer_range))

  def call(self, sequence_output, features, training=None):
    hidden = tf.cast(sequence_output, tf.float32)
    logits = self.span_logits(hidden)
    mask = tf.cast(features["paragraph_mask"], tf.float32)
    start_logits = logits[:, :, 0] + (1.0 - mask) * _MASKED_LOGIT
    end_logits = logits[:, :, 1] + (1.0 - mask) * _MASKED_LOGIT
    outputs = {"start_logits": start_logits, "end_logits": end_logits}
    if self.answerable:
      start_probs = tf.nn.softmax(start_logits, axis=-1)
      start_state = tf.einsum("bl,blh->bh", start_probs, hidden)
      state = tf.concat([hidden[:, 0], start_state], axis=-1)
      outputs["no_answer_logit"] = self.answerable_logit(
          self.answerable_hidden(state))[:, 0]
    return outputs


def _squad_error(path, where, qid, message):
  what = "question %r (%s)" % (qid, where) if qid else where
  return UserError("%s: %s: %s" % (path, what, message))


def _check_type(value, expected, path, where, key, qid=None):
  """`value` if it is of type `expected` (a bool is not an int here)."""
  if not isinstance(value, expected) or (isinstance(value, bool) and
                                         expected is not bool):
    names = {str: "a string", list: "a list", int: "an integer",
             bool: "true or false", dict: "an object"}
    raise _squad_error(path, where, qid, "%r must be %s, got %r." % (
        key, names[expected], value))
  return value


def _whitespace_tokens(text):
  """SQuAD's whitespace split: (doc_tokens, char_to_word_offset)."""
  tokens, char_to_word = [], []
  previous_is_space = True
  for char in text:
    if char in " \t\r\n" or ord(char) == 0x202F:
      previous_is_space = True
    else:
      if previous_is_space:
        tokens.append(char)
      else:
        tokens[-1] += char
      previous_is_space = False
    char_to_word.append(len(tokens) - 1)
  return tokens, char_to_word


class QATask(task.Task):
  """Span-extraction QA on SQuAD-format JSON files."""

  v2 = False

  def __init__(self, settings, tokenizer):
    super(QATask, self).__init__(settings, tokenizer)
    self._datasets = {}
    self.skipped = {}
    if settings.max_query_length + 3 >= settings.max_seq_length:
      raise UserError("task %r: max_query_length %d leaves no room for the "
                      "paragraph in max_seq_length %d." % (
                          self.name, settings.max_query_length,
                          settings.max_seq_length))

  def dataset(self, split):
    """The parsed `data` list of a split (for the official evaluation)."""
    self.get_examples(split)
    return self._datasets[split]

  def read_examples(self, path, split):
    data = readers.read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
      raise UserError("%s: expected a SQuAD JSON object {\"version\": ..., "
                      "\"data\": [...]}." % path)
    is_training = split == "train"
    labelled = not self.is_test_split(split)
    examples, seen, skipped = [], set(), 0
    for a, article in enumerate(data["data"]):
      where = "data[%d]" % a
      _check_type(article, dict, path, where, "article")
      for p, paragraph in enumerate(_check_type(
          article.get("paragraphs"), list, path, where, "paragraphs")):
        pwhere = "%s.paragraphs[%d]" % (where, p)
        _check_type(paragraph, dict, path, pwhere, "paragraph")
        context = _check_type(paragraph.get("context"), str, path, pwhere,
                              "context")
        doc_tokens, char_to_word = _whitespace_tokens(context)
        for q, qa in enumerate(_check_type(paragraph.get("qas"), list, path,
                                           pwhere, "qas")):
          qwhere = "%s.qas[%d]" % (pwhere, q)
          _check_type(qa, dict, path, qwhere, "question entry")
          qid = _check_type(qa.get("id"), str, path, qwhere, "id")
          if qid in seen:
            raise _squad_error(path, qwhere, qid, "duplicate question id.")
          seen.add(qid)
          question = _check_type(qa.get("question"), str, path, qwhere,
                                 "question", qid)
          example = self._make_example(path, qwhere, qa, qid, question,
                                       context, doc_tokens, char_to_word,
                                       is_training, labelled)
          if example is None:
            skipped += 1
          else:
            examples.append(example)
    self._datasets[split] = data["data"]
    self.skipped[split] = skipped
    if skipped:
      print("task %s: skipped %d training question(s) of %s whose answer "
            "text is not at answer_start." % (self.name, skipped, path))
    return examples

  def _make_example(self, path, where, qa, qid, question, context, doc_tokens,
                    char_to_word, is_training, labelled):
    """A `squad_lib.SquadExample`, or None for an answer not found in the
    text at its offset (skipped in training, as squad_lib does)."""
    is_impossible = _check_type(qa.get("is_impossible", False), bool, path,
                                where, "is_impossible", qid)
    if is_impossible and not self.v2:
      raise _squad_error(path, where, qid, "is_impossible is true, but SQuAD "
                         "1.1 has only answerable questions; use task "
                         "'squadv2'.")
    answers = _check_type(qa.get("answers", []), list, path, where,
                          "answers", qid)
    if labelled and not is_impossible and not answers:
      raise _squad_error(path, where, qid, "no answers and is_impossible is "
                         "not true.")
    for answer in answers:
      _check_type(answer, dict, path, where, "answer", qid)
      text = _check_type(answer.get("text"), str, path, where, "answer text",
                         qid)
      start = _check_type(answer.get("answer_start"), int, path, where,
                          "answer_start", qid)
      if not text.strip() or start < 0 or start + len(text) > len(context):
        raise _squad_error(path, where, qid, "answer %r at answer_start %d "
                           "is empty or outside the context (%d characters)."
                           % (text, start, len(context)))
    example = squad_lib.SquadExample(qas_id=qid, question_text=question,
                                     doc_tokens=doc_tokens,
                                     is_impossible=is_impossible)
    if not is_training:
      return example
    if is_impossible:
      example.start_position = example.end_position = -1
      example.orig_answer_text = ""
      return example
    if len(answers) != 1:
      raise _squad_error(path, where, qid, "a training question needs "
                         "exactly one answer, found %d." % len(answers))
    text, start = answers[0]["text"], answers[0]["answer_start"]
    example.start_position = char_to_word[start]
    example.end_position = char_to_word[start + len(text) - 1]
    span = " ".join(doc_tokens[example.start_position:
                               example.end_position + 1])
    if span.find(" ".join(text.split())) == -1:
      return None
    example.orig_answer_text = text
    return example

  def featurize(self, examples, is_training):
    windows = []

    def collect(feature, is_padding=False):
      windows.append(feature)

    # Questions of a paragraph share its doc_tokens list: add it once.
    texts, paragraphs = [], {}
    for e in examples:
      paragraphs[id(e.doc_tokens)] = e.doc_tokens
      texts += [e.question_text, e.orig_answer_text or ""]
    for doc_tokens in paragraphs.values():
      texts += doc_tokens
    squad_lib.convert_examples_to_features(
        examples, preprocessing.CachedTokenizer(self.tokenizer, texts),
        max_seq_length=self.settings.max_seq_length,
        doc_stride=self.settings.doc_stride,
        max_query_length=self.settings.max_query_length,
        is_training=is_training, output_fn=collect, batch_size=1)
    rows = [dict(input_ids=w.input_ids, input_mask=w.input_mask,
                 segment_ids=w.segment_ids, paragraph_mask=w.paragraph_mask,
                 start_positions=w.start_position,
                 end_positions=w.end_position,
                 is_impossible=float(bool(w.is_impossible) and is_training))
            for w in windows]
    return preprocessing.stack_features(rows), windows

  def build_head(self):
    m = self.settings.encoder
    return SpanHead(m["hidden_size"], self.v2, m["hidden_act"],
                    m["initializer_range"], name="%s_head" % self.name)

  def compute_losses(self, outputs, features):
    start = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=features["start_positions"], logits=outputs["start_logits"])
    end = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=features["end_positions"], logits=outputs["end_logits"])
    losses = (start + end) / 2.0
    if self.v2:
      losses += self.settings.answerable_weight * (
          tf.nn.sigmoid_cross_entropy_with_logits(
              labels=features["is_impossible"],
              logits=outputs["no_answer_logit"]))
    return losses

  def eval_outputs(self, outputs, features):
    names = ("start_logits", "end_logits") + (
        ("no_answer_logit",) if self.v2 else ())
    return {name: outputs[name] for name in names}

  def decode(self, split_data, outputs):
    return qa_metrics.decode(self, split_data, outputs)

  def get_scorer(self, split_data):
    return qa_metrics.SpanBasedQAScorer(self, split_data)

  def write_test_predictions(self, split_data, outputs, directory):
    decoded = self.decode(split_data, outputs)
    return qa_metrics.write_prediction_files(
        decoded, directory, "%s_%s" % (self.name, split_data.split))[0]


class SQuADv1(QATask):
  name = "squadv1"
  split_files = {"train": ("train.json", "train-v1.1.json"),
                 "dev": ("dev.json", "dev-v1.1.json"),
                 "test": ("test.json",)}


class SQuADv2(QATask):
  name = "squadv2"
  v2 = True
  split_files = {"train": ("train.json", "train-v2.0.json"),
                 "dev": ("dev.json", "dev-v2.0.json"),
                 "test": ("test.json",)}


QA_TASKS = (SQuADv1, SQuADv2)
