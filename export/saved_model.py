"""SavedModels that take raw text: a pre-trained discriminator, or a
fine-tuned task model.

Load with only `tensorflow` and `tensorflow_text` imported. The tokenizer
runs in the graph (export/text_encoder.py: WordPiece or SentencePiece).
Every SavedModel has two signatures:

  * "serving_default" takes strings [batch] and returns the outputs below
    plus the `input_ids`, `input_mask`, `segment_ids` (and for SQuAD
    `paragraph_mask`) [batch, max_seq_length] int32 it built. A model
    whose outputs are per text (classification, regression) computes on
    the batch cut to its longest text, as transformers pads to the
    longest; per-token outputs keep max_seq_length positions.
    Its inputs: `text` for a pre-trained model and a one-text task;
    `text`, `text_b` for a sentence-pair task; `question`, `context` for
    SQuAD (one window: the question's first max_query_length tokens, then
    as much of the context as fits).
  * "from_ids" takes `input_ids`, `input_mask`, `segment_ids` [batch, seq]
    int32 (and `paragraph_mask` for SQuAD).

Outputs by model:
  pre-trained     `replaced_probability` [batch, seq] float32 (sigmoid of
                  D's logit per token, 0 on padding);
  classification  `probabilities` [batch, labels] float32, `label_id`
                  [batch] int32, `label` [batch] string;
  regression      `score` [batch] float32;
  tagging         `tag_ids` [batch, seq] int32, `tags` [batch, seq] string
                  (the label of every token; "" on padding);
  SQuAD           `start_logits`, `end_logits` [batch, seq] float32 (and
                  `no_answer_logit` [batch] for SQuAD 2.0).
"""

import tensorflow as tf

from finetune.classification import classification_tasks
from finetune.qa import qa_tasks
from finetune.tagging import tagging_tasks
from export import inference_encoder
from export.text_encoder import TextEncoder
from finetune.model import ENCODER_INPUTS
from finetune.model import FinetuningModel
from util import export_marker
from util.errors import UserError

_IDS = tf.TensorSpec([None, None], tf.int32)
_TEXT = tf.TensorSpec([None], tf.string)
# The inputs of "serving_default" per kind of text input.
_TEXT_INPUTS = {"text": ("text",), "pair": ("text", "text_b"),
                "question": ("question", "context")}


class _Serving(tf.Module):
  """A model's forward for serving and its `TextEncoder`; `serve_text` and
  `serve_ids` (the two signatures) are attached by `_attach_signatures`.

  Args:
    model: a `Discriminator` or a `FinetuningModel`: an `encoder` network
      and a `head`.
    encoder: the `TextEncoder` (text -> ids).
    log: where to say which encoder network serves.
    parts: `InferenceEncoder`'s groups computed side by side.
    by_columns: `InferenceEncoder`'s: one text's tokens as columns.

  `predict(features)` is `model(features, training=False)`, computed with
  the `InferenceEncoder` of `model.encoder` when it supports it; only that
  and the head are saved, not the Keras encoder.
  """

  def __init__(self, model, encoder, log=print, parts=2, by_columns=True):
    super(_Serving, self).__init__()
    usable, reason = inference_encoder.supports(model.encoder)
    if usable:
      self.network = inference_encoder.InferenceEncoder(
          model.encoder, parts, by_columns)
      log("serving the encoder as export/inference_encoder.py computes it" + (
          " (%d groups side by side: for speed, serve with inter-op threads "
          "= cores, intra-op threads = cores / %d)" % (parts, parts)
          if parts > 1 else ""))
    else:
      log("serving the Keras encoder as it is (%s)" % reason)
      self.network = model.encoder
    self.head = model.head
    self._head_takes_features = isinstance(model, FinetuningModel)
    self.encoder = encoder

  def predict(self, features):
    """The model's outputs (its head's dict or D's logits) in inference."""
    sequence_output = self.network(
        {name: features[name] for name in ENCODER_INPUTS}, training=False)
    if self._head_takes_features:
      return self.head(sequence_output, features, training=False)
    return self.head(sequence_output, training=False)


def _trimmed(features):
  """`features` [batch, seq] cut to the batch's longest real sequence.

  The tokenizer pads every text to max_seq_length; a model whose outputs
  are per text (classification, regression) gives the same outputs on the
  cut batch, since padding keys get a -1e9 attention bias, and computes
  on far fewer positions when texts are short.
  """
  longest = tf.maximum(tf.reduce_max(tf.reduce_sum(
      features["input_mask"], axis=1)), 1)
  return {k: v[:, :longest] for k, v in features.items()}


def _attach_signatures(module, outputs, text_inputs, max_query_length=None,
                       trim=False):
  """Adds the tf.functions `serve_text` and `serve_ids` to `module`.

  Args:
    outputs: outputs(predict, features) -> dict of tensors, where
      predict is `module.predict`.
    text_inputs: "text", "pair" or "question" (SQuAD).
    trim: run the model on the batch cut to its longest text (`_trimmed`);
      only for outputs that are per text, not per token.
  """
  def model_outputs(features):
    return outputs(module.predict, _trimmed(features) if trim else features)

  def with_inputs(features):
    encoded = ("input_ids", "input_mask", "segment_ids", "paragraph_mask")
    return dict(model_outputs(features),
                **{k: features[k] for k in encoded if k in features})

  # No autograph below: nothing branches on a tensor, and converting
  # every Keras layer costs seconds (docs/performance.md, "Start-up").
  if text_inputs == "question":
    @tf.function(autograph=False, input_signature=[_TEXT, _TEXT])
    def serve_text(question, context):
      return with_inputs(module.encoder.encode_question(
          question, context, max_query_length))

    @tf.function(autograph=False, input_signature=[_IDS] * 4)
    def serve_ids(input_ids, input_mask, segment_ids, paragraph_mask):
      return outputs(module.predict, dict(
          input_ids=input_ids, input_mask=input_mask,
          segment_ids=segment_ids, paragraph_mask=paragraph_mask))
  else:
    if text_inputs == "pair":
      @tf.function(autograph=False, input_signature=[_TEXT, _TEXT])
      def serve_text(text, text_b):
        return with_inputs(module.encoder.encode(text, text_b))
    else:
      @tf.function(autograph=False, input_signature=[_TEXT])
      def serve_text(text):
        return with_inputs(module.encoder.encode(text))

    @tf.function(autograph=False, input_signature=[_IDS] * 3)
    def serve_ids(input_ids, input_mask, segment_ids):
      return model_outputs(dict(input_ids=input_ids, input_mask=input_mask,
                                segment_ids=segment_ids))
  module.serve_text = serve_text
  module.serve_ids = serve_ids
  module.text_input_names = _TEXT_INPUTS[text_inputs]
  return module


def _replaced_probability(predict, features):
  logits = predict(features)
  mask = tf.cast(features["input_mask"], tf.float32)
  return dict(replaced_probability=tf.sigmoid(logits) * mask)


def _task_outputs(task):
  """(kind, outputs(predict, features) -> dict) of a fine-tuning task;
  predict(features) is the model's output dict in inference."""
  if isinstance(task, classification_tasks.RegressionTask):
    return "regression", lambda predict, f: dict(
        score=predict(f)["logits"][:, 0])
  if isinstance(task, classification_tasks.ClassificationTask):
    labels = tf.constant([str(label) for label in task.label_list])

    def classify(predict, f):
      probs = tf.nn.softmax(predict(f)["logits"], axis=-1)
      label_id = tf.argmax(probs, axis=-1, output_type=tf.int32)
      return dict(probabilities=probs, label_id=label_id,
                  label=tf.gather(labels, label_id))
    return "classification", classify
  if isinstance(task, tagging_tasks.TaggingTask):
    tags = tf.constant([str(label) for label in task.label_list] + [""])

    def tag(predict, f):
      ids = tf.argmax(predict(f)["logits"], axis=-1,
                      output_type=tf.int32)
      padding = tf.equal(f["input_mask"], 0)
      return dict(tag_ids=ids, tags=tf.gather(
          tags, tf.where(padding, len(task.label_list), ids)))
    return "tagging", tag
  if isinstance(task, qa_tasks.QATask):
    return "squad", lambda predict, f: predict(f)
  raise UserError("task %r (%s) has no SavedModel export." % (
      task.name, type(task).__name__))


def _text_inputs(task):
  """1 or 2: the texts a sentence task's examples have."""
  columns = getattr(task, "text_columns", None) or ("text",)
  if len(columns) > 2:
    raise UserError("task %r joins %d text columns into one; its SavedModel "
                    "would take them as one text: join them with %r "
                    "yourself and fine-tune on one column, or serve "
                    "\"from_ids\"." % (task.name, len(columns), " | "))
  return len(columns)


def _save(module, output_dir, log):
  """The SavedModel of `module`, util/export_marker.py's marker last."""
  with export_marker.writing(output_dir, "saved_model"):
    tf.saved_model.save(module, output_dir, signatures={
        "serving_default": module.serve_text, "from_ids": module.serve_ids})
  log("exported SavedModel (signatures serving_default: %s; from_ids) -> "
      "%s" % (", ".join(module.text_input_names), output_dir))
  return output_dir


def _encoder(vocabulary, max_seq_length, sentencepiece_model,
             truncation_rule="head", encoder_class=TextEncoder):
  """The in-graph text encoder of a configure_specs.VocabularySpec (or of
  `sentencepiece_model`), `max_seq_length` ids per text."""
  if not sentencepiece_model and not tf.io.gfile.exists(
      vocabulary.vocab_file):
    raise UserError("vocab file %s not found; set hparam vocab_file." %
                    vocabulary.vocab_file)
  strip = getattr(vocabulary, "strip_accents", None)
  if not sentencepiece_model and strip is not None and (
      strip != vocabulary.do_lower_case):
    raise UserError(
        "strip_accents %s with do_lower_case %s: the exported model's "
        "in-graph tokenizer (tensorflow-text) strips accents exactly when it "
        "lower-cases; export as hf, or as tf1." % (
            str(strip).lower(), str(vocabulary.do_lower_case).lower()))
  return encoder_class(max_seq_length, vocabulary.vocab_file,
                       vocabulary.do_lower_case, sentencepiece_model,
                       truncation_rule)


def export_saved_model(model, vocabulary, max_seq_length, output_dir,
                       sentencepiece_model=None, log=print):
  """Writes the SavedModel of `model`'s discriminator to `output_dir`.

  Args:
    model: a built `ElectraPretrainer`.
    vocabulary: its configure_specs.VocabularySpec (vocab_file,
      do_lower_case).
    max_seq_length: the ids of one text.
    sentencepiece_model: the SentencePiece model the data was built with,
      instead of `vocabulary.vocab_file`.
  """
  module = _attach_signatures(
      _Serving(model.discriminator, _encoder(vocabulary, max_seq_length,
                                             sentencepiece_model), log),
      _replaced_probability, "text")
  return _save(module, output_dir, log)


def export_task_saved_model(model, task, vocabulary, output_dir, log=print):
  """Writes the SavedModel of a fine-tuned `model` for `task`.

  Args:
    model: a built `FinetuningModel` with the fine-tuned weights.
    task: its `Task` (finetune/task_builder.py), for labels, inputs and
      lengths (its `settings`).
    vocabulary: the configure_specs.VocabularySpec it was fine-tuned with.
  """
  kind, module = task_module(model, task, vocabulary, log)
  log("%s task %r" % (kind, task.name))
  return _save(module, output_dir, log)


def task_module(model, task, vocabulary, log=print,
                encoder_class=TextEncoder, parts=2, by_columns=True):
  """(kind, module): the task's kind ("classification", "regression",
  "tagging", "squad") and the `tf.Module` whose `serve_text` and
  `serve_ids` serve `model` on `task` (see `export_task_saved_model`).

  Args:
    vocabulary: the configure_specs.VocabularySpec of the model; the
      lengths are the task's (`task.settings`: max_seq_length, SQuAD's
      max_query_length).
    encoder_class: `TextEncoder` or a subclass (export/tflite_text.py).
    parts, by_columns: `InferenceEncoder`'s (groups of heads and FFN
      units; one text's tokens as columns).
  """
  kind, outputs = _task_outputs(task)
  max_seq_length = task.settings.max_seq_length
  if kind == "squad":
    encoder = _encoder(vocabulary, max_seq_length, None,
                       encoder_class=encoder_class)
    return kind, _attach_signatures(
        _Serving(model, encoder, log, parts, by_columns), outputs, "question",
        task.settings.max_query_length)
  rule = getattr(task, "truncation", None) or "head"
  encoder = _encoder(vocabulary, max_seq_length, None, rule, encoder_class)
  return kind, _attach_signatures(
      _Serving(model, encoder, log, parts, by_columns), outputs,
      "text" if _text_inputs(task) == 1 else "pair",
      trim=kind in ("classification", "regression"))
