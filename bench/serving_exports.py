"""The exports bench/serving.py serves: one fine-tuned classifier, five ways.

  saved_model/  the text-in SavedModel of `export_model.py --task`;
  tokenizer/    a SavedModel of its tokenizer alone (the same TextEncoder,
                so the same ops), to time tokenisation by itself;
  tflite/, tflite_int8/  the text-in .tflite of `export_model.py --format
                tflite`, float32 and `--quantize dynamic` (export/tflite.py);
  hf/           the fine-tuned encoder as an HF `ElectraModel` folder with
                its vocabulary (interop/hf.py), for transformers;
plus the task head's weights, returned for the transformers side to apply.
"""

import os

import tensorflow as tf

import configure_finetuning_specs
from export import saved_model
from export import tflite
from export.text_encoder import TextEncoder
from finetune import finetuned_model
from finetune.classification import classification_tasks
from interop import hf
from text import vocab_layout
from util.errors import UserError


def _check_task(task):
  """UserError unless `task` is a one-text classification task."""
  columns = getattr(task, "text_columns", None) or ("text",)
  if (not isinstance(task, classification_tasks.ClassificationTask) or
      len(columns) != 1):
    raise UserError("bench/serving.py serves one-text classification tasks "
                    "(sst, cola, a task.json of kind classification with "
                    "one text column); %r is a %s." % (
                        task.name, type(task).__name__))


def export_tokenizer(config, task, output_dir):
  """A SavedModel whose serving_default maps `text` [batch] strings to
  `input_ids`, `input_mask`, `segment_ids` [batch, max_seq_length] int32,
  as the task's SavedModel tokenizes them."""
  module = tf.Module()
  module.encoder = TextEncoder(
      config.max_seq_length, config.vocab_file, config.do_lower_case,
      truncation_rule=getattr(task, "truncation", None) or "head")

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def encode(text):
    return module.encoder.encode(text)
  tf.saved_model.save(module, output_dir, signatures={"serving_default":
                                                      encode})


def head_weights(model):
  """The classification head of a `FinetuningModel` as plain lists:
  {"pooling": "cls" or "mean", "kernel": [hidden][labels], "bias":
  [labels]}."""
  head = model.head
  return dict(pooling=head.pooling,
              kernel=head.dense.kernel.numpy().tolist(),
              bias=head.dense.bias.numpy().tolist())


def export_both(model_dir, data_dir, task_name, trial, work_dir, log=print):
  """Writes the three exports of trial `trial` of `task_name` (fine-tuned in
  `model_dir`, its data in `data_dir`) under `work_dir`.

  Returns the worker spec's model part: paths of `saved_model`,
  `tokenizer_saved_model`, `tflite`, `tflite_int8` and `hf_folder`,
  `head` (see `head_weights`), `labels` (the task's, by id) and
  `max_seq_length`.
  """
  model, task, config = finetuned_model.load_finetuned(
      model_dir, data_dir, task_name, trial, log=log)
  _check_task(task)
  paths = {key: os.path.join(work_dir, name) for key, name in (
      ("saved_model", "saved_model"), ("tokenizer_saved_model", "tokenizer"),
      ("tflite", "tflite"), ("tflite_int8", "tflite_int8"),
      ("hf_folder", "hf"))}
  specs = configure_finetuning_specs.finetuning_specs(config)
  saved_model.export_task_saved_model(model, task, specs.vocabulary,
                                      paths["saved_model"], log=log)
  export_tokenizer(config, task, paths["tokenizer_saved_model"])
  for key, quantize in (("tflite", "none"), ("tflite_int8", "dynamic")):
    tflite.export_task_tflite(model, task, specs.vocabulary, paths[key],
                              quantize, log=log)
  sentencepiece = (config.vocab_file if vocab_layout.is_sentencepiece(
      config.vocab_file) else None)
  count = hf.export_hf_encoder(model.encoder, specs.network,
                               specs.vocabulary, paths["hf_folder"],
                               sentencepiece_model=sentencepiece)
  log("exported the encoder for transformers: %d tensors -> %s" % (
      count, paths["hf_folder"]))
  return dict(paths, head=head_weights(model),
              labels=[str(label) for label in task.label_list],
              max_seq_length=config.max_seq_length)
