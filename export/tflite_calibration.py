"""Bias correction of a dynamic-range INT8 classifier's outputs.

Dynamic-range INT8 (export/tflite.py, `--quantize dynamic`) rounds every
matmul's kernel and, on the fly, its input. Most of the error that leaves
is noise, but through the blocks' LayerNorms, softmaxes and GELUs part of
it adds up to a shift of the outputs that is nearly the same for every
text: all-MiniLM-L6-v2 fine-tuned on SST-500 gave "positive" a probability
0.0030 higher than the float model on average (spread 0.0030), so each of
the 22 dev labels it changed went from negative to positive; three other
fine-tunings of it shifted by -0.0033 to +0.0014 (docs/performance.md,
"INT8 accuracy"). Keeping the embedding tables float, or kernels with one
scale each instead of one per output unit, does not remove it; the head
(under the converter's 1024 weights) is float already.

`output_shift` measures that shift on texts of the task's training split,
the converted INT8 model's outputs against the float serving function's,
and `shifted_bias` subtracts it from the head's bias (float in the
.tflite) for a second conversion: the encoder is quantized as before, and
the INT8 model's outputs are the float model's on average. A
classification head's bias moves by the mean difference of
log-probabilities (centred: softmax ignores a common shift), a
regression's by that of the score. Tagging and SQuAD models are converted
without it.
"""

import contextlib

import numpy as np
import tensorflow as tf

from util.errors import UserError

# Task kinds corrected, and the output each is measured on.
OUTPUTS = {"classification": "probabilities", "regression": "score"}
TEXTS = 256  # training texts measured (fewer if the split has fewer)
BATCH = 32


def calibration_texts(task, input_names, count=TEXTS):
  """{input name: [count texts]}: the first examples of the task's
  training split (`text_a`, and `text_b` for a pair); UserError if there
  are none to read."""
  examples = task.get_examples("train")[:count]
  fields = ("text_a", "text_b")[:len(input_names)]
  return {name: [getattr(e, field) or "" for e in examples]
          for name, field in zip(input_names, fields)}


def run_batches(run, texts):
  """Concatenated numpy outputs of `run(**{name: [texts]})` over batches
  of BATCH texts."""
  total = len(next(iter(texts.values())))
  parts = [run(**{k: v[i:i + BATCH] for k, v in texts.items()})
           for i in range(0, total, BATCH)]
  return {k: np.concatenate([np.asarray(p[k]) for p in parts])
          for k in parts[0]}


def output_shift(kind, reference, quantized):
  """The mean shift [head units] of the INT8 outputs from the float ones
  (`reference`, `quantized`: output dicts over the same texts), in the
  units of the head's bias."""
  key = OUTPUTS[kind]
  if kind == "regression":
    return np.atleast_1d(np.mean(quantized[key] - reference[key]))
  floor = np.finfo(np.float32).tiny
  shift = np.mean(np.log(np.maximum(quantized[key], floor)) -
                  np.log(np.maximum(reference[key], floor)), axis=0)
  return shift - shift.mean()


@contextlib.contextmanager
def shifted_bias(head, shift):
  """`head.dense.bias` minus `shift` inside the block, restored after."""
  bias = head.dense.bias
  original = bias.numpy()
  bias.assign(original - np.asarray(shift, original.dtype))
  try:
    yield
  finally:
    bias.assign(original)


def measure(task, kind, module, function, run_quantized, log=print):
  """The shift to correct (`output_shift`), or None with a log line why
  not.

  Args:
    task, kind: the fine-tuning task and its kind (OUTPUTS' keys corrected).
    module: the serving module (`text_input_names`).
    function: the float serving function (strings -> outputs).
    run_quantized: the INT8 model, called as `function` is, returning
      numpy arrays.
  """
  if kind not in OUTPUTS:
    log("note: a %s model's INT8 outputs are not bias-corrected" % kind)
    return None
  try:
    texts = calibration_texts(task, module.text_input_names)
  except UserError as error:
    log("note: INT8 outputs not bias-corrected: no training texts (%s)"
        % error)
    return None

  def run_float(**batch):
    out = function(**{k: tf.constant(v, tf.string) for k, v in batch.items()})
    return {k: v.numpy() for k, v in out.items()}
  shift = output_shift(kind, run_batches(run_float, texts),
                       run_batches(run_quantized, texts))
  log("INT8 bias correction: the outputs' mean shift on %d training texts, "
      "%s, taken off the head's bias" % (
          len(next(iter(texts.values()))),
          ", ".join("%+.5f" % s for s in shift)))
  return shift
