"""A fine-tuned task model as one text-in TFLite file, and a runner for it.

`export_task_tflite` converts what the task's SavedModel serves
(export/saved_model.py `task_module`: the same outputs, the same
`input_ids`, `input_mask`, `segment_ids`) with the tokenizer inside, its
text -> ids step in TFLite-capable ops (export/tflite_text.py), using
TensorFlow 2.20's `tf.lite.TFLiteConverter.from_concrete_functions` with
TFLite builtins plus tensorflow-text's custom ops only (no Select TF ops):

  OUT/model.tflite   signature "serving_default": `text` (and `text_b`;
                     `question`, `context` for SQuAD) strings [batch] ->
                     the SavedModel's outputs ([batch, max_seq_length]
                     for the ids; a classification or regression model
                     computes on the batch cut to its longest text);
  OUT/tflite.json    what a loader needs: inputs, outputs, kind, labels,
                     the custom-op registrars, max_seq_length, quantize;
  OUT/EXPORT_COMPLETE.json  written last (util/export_marker.py).

`--quantize`: "none" (float32), "dynamic" (dynamic-range INT8: weights
int8, activations quantized on the fly; `tf.lite.Optimize.DEFAULT`; a
classifier's or regression's mean output shift on training texts is then
taken off its head's bias and the model converted again, see
export/tflite_calibration.py) or "float16" (weights float16). Every task
kind converts: classification, regression, tagging (`tags` are strings
gathered per token) and SQuAD spans (one window). A SentencePiece model's
tokenizer gives the SavedModel's ids except for characters without a
piece: SentencePiece's byte fallback spells them as bytes, TFLite's
FastSentencepieceTokenizer gives one [UNK].

The file runs with LiteRT's interpreter (`ai-edge-litert`) and
tensorflow-text's kernels, in a process that imports nothing else:

  from ai_edge_litert.interpreter import InterpreterWithCustomOps
  import tensorflow_text
  run = InterpreterWithCustomOps(
      custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
      model_path="OUT/model.tflite").get_signature_runner()
  run(text=np.array(["a gripping, funny film"]))["label"]

`TfliteClassifier` wraps that (thread count, the JSON, batches of texts);
this module imports TensorFlow only to export.
"""

import json
import os
import posixpath

QUANTIZE = ("none", "dynamic", "float16")
MODEL_FILE = "model.tflite"
META_FILE = "tflite.json"
# tensorflow_text.tflite_registrar functions each tokenizer's ops need.
REGISTRARS = {
    "wordpiece": ("AddFastBertNormalize", "AddFastWordpieceTokenize"),
    "sentencepiece": ("AddFastSentencepieceTokenize",),
}


def convert(concrete_function, trackable, quantize="none"):
  """The TFLite flatbuffer (bytes) of a tf.function's concrete function.

  Args:
    concrete_function: takes strings [batch], returns a dict of tensors.
    trackable: the `tf.Module` holding its variables.
    quantize: one of QUANTIZE.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if quantize not in QUANTIZE:
    raise ValueError("quantize must be one of %s, not %r." % (
        ", ".join(QUANTIZE), quantize))
  converter = tf.lite.TFLiteConverter.from_concrete_functions(
      [concrete_function], trackable)
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  converter.allow_custom_ops = True  # tensorflow-text's tokenizer kernels
  if quantize != "none":
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
  if quantize == "float16":
    converter.target_spec.supported_types = [tf.float16]
  return converter.convert()


def export_task_tflite(model, task, vocabulary, output_dir, quantize="none",
                       log=print, bias_correction=True):
  """Writes OUT/model.tflite and OUT/tflite.json for a fine-tuned `model`.

  Args: those of `saved_model.export_task_saved_model`, `quantize`
  (QUANTIZE), and for "dynamic" `bias_correction`: a classifier's or
  regression's mean output shift, measured on training texts, is taken
  off its head's bias (export/tflite_calibration.py).
  Returns: the path of the .tflite file.
  """
  from export import saved_model  # pylint: disable=g-import-not-at-top
  from export import tflite_calibration
  from export import tflite_text
  # One group of heads (TFLite runs its ops one after another), tokens as
  # rows (one branch: half the file, and the conversion's time).
  kind, module = saved_model.task_module(
      model, task, vocabulary, log, tflite_text.TfliteTextEncoder, parts=1,
      by_columns=False)
  function = module.serve_text.get_concrete_function()
  flatbuffer = convert(function, module, quantize)
  tokenizer = ("wordpiece" if module.encoder._sp_unk is None  # pylint: disable=protected-access
               else "sentencepiece")
  if tokenizer == "sentencepiece":
    log("note: TFLite's FastSentencepieceTokenizer has no byte fallback: a "
        "character without a piece becomes [UNK], where SentencePiece (and "
        "the SavedModel) spell its bytes")
  labels = getattr(task, "label_list", None)
  meta = dict(
      kind=kind, task=task.name, inputs=list(module.text_input_names),
      outputs=sorted(function.structured_outputs),
      labels=None if kind == "regression" or labels is None
      else [str(label) for label in labels],
      tokenizer=tokenizer, custom_op_registerers=list(REGISTRARS[tokenizer]),
      max_seq_length=task.settings.max_seq_length, quantize=quantize)
  path = _write(output_dir, flatbuffer, meta)
  if quantize == "dynamic" and bias_correction:
    shift = tflite_calibration.measure(task, kind, module, function,
                                       TfliteClassifier(output_dir), log)
    if shift is not None:
      with tflite_calibration.shifted_bias(module.head, shift):
        flatbuffer = convert(function, module, quantize)
      meta["bias_correction"] = [float(s) for s in shift]
      _write(output_dir, flatbuffer, meta)
  log("exported TFLite (%s task %r, quantize %s, %.1f MB; inputs %s) -> %s"
      % (kind, task.name, quantize, len(flatbuffer) / 1e6,
         ", ".join(meta["inputs"]), path))
  return path


def _write(output_dir, flatbuffer, meta):
  """Writes OUT/model.tflite and OUT/tflite.json, then the completion
  marker (util/export_marker.py); returns the first's path."""
  from util import export_marker  # pylint: disable=g-import-not-at-top
  from util import io_utils  # pylint: disable=g-import-not-at-top
  io_utils.make_dirs(output_dir)
  path = posixpath.join(output_dir, MODEL_FILE)
  with export_marker.writing(output_dir, "tflite"):
    io_utils.write_bytes_atomic(path, flatbuffer)
    io_utils.write_json_atomic(posixpath.join(output_dir, META_FILE), meta)
  return path


class TfliteClassifier(object):
  """Runs an exported .tflite with LiteRT's interpreter; imports only
  `ai_edge_litert` and `tensorflow_text`.

  Args:
    directory: an export's OUT (model.tflite and tflite.json); a folder
      without util/export_marker.py's marker (an unfinished export) is a
      UserError naming it.
    num_threads: the interpreter's threads (default: the cores).

  `classifier(text=[...])` (the export's input names; lists of strings of
  one length) -> dict of numpy arrays, the export's outputs: for a
  classifier `probabilities` [batch, labels], `label_id` [batch], `label`
  [batch] (str).
  """

  def __init__(self, directory, num_threads=None):
    from util import export_marker  # pylint: disable=g-import-not-at-top
    export_marker.check(directory)
    import tensorflow_text  # pylint: disable=g-import-not-at-top
    from ai_edge_litert import interpreter
    with open(os.path.join(directory, META_FILE), encoding="utf-8") as f:
      self.meta = json.load(f)
    registrars = [getattr(tensorflow_text.tflite_registrar, name)
                  for name in self.meta["custom_op_registerers"]]
    self.interpreter = interpreter.InterpreterWithCustomOps(
        custom_op_registerers=registrars,
        model_path=os.path.join(directory, MODEL_FILE),
        num_threads=num_threads or os.cpu_count())
    self._run = self.interpreter.get_signature_runner()

  def __call__(self, **texts):
    import numpy as np  # pylint: disable=g-import-not-at-top
    missing = set(self.meta["inputs"]) - set(texts)
    if missing or set(texts) - set(self.meta["inputs"]):
      raise ValueError("give the inputs %s, not %s." % (
          ", ".join(self.meta["inputs"]), ", ".join(sorted(texts))))
    out = self._run(**{k: np.array([t.encode("utf-8") for t in v],
                                   dtype=object)
                       for k, v in texts.items()})
    for key in ("label", "tags"):
      if key in out:
        out[key] = np.vectorize(lambda b: b.decode("utf-8"), otypes=[str])(
            out[key])
    return out
