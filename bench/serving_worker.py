"""One side of bench/serving.py, in a process of its own: "ours" (the
SavedModel, with only tensorflow and tensorflow_text imported, as a user
serves it), "ours_tflite" / "ours_tflite_int8" (the .tflite, float32 or
dynamic-range INT8, with only ai_edge_litert and tensorflow_text
imported), "transformers" (PyTorch, the same weights and a fast
tokenizer) or "transformers_int8" (the same, its Linear layers quantized
by `torch.ao.quantization.quantize_dynamic` to qint8).

  python bench/serving_worker.py SIDE SPEC.json

SPEC.json: {"sentences": [str], "batch_sizes": [int], "threads": int,
"saved_model", "tokenizer_saved_model", "tflite", "tflite_int8",
"hf_folder", "head": {"pooling", "kernel" [hidden, labels], "bias"
[labels]}, "max_seq_length": int}.
The worker loads its side, runs every measurement once untimed, prints one
JSON line {"ready": ..., "version", "size_mb"} and then, for each line
read on stdin, times one round and prints its JSON line: per batch size,
the seconds of every call of `e2e` (text -> label), `tokenize` (text ->
ids) and `model` (ids -> label) (a .tflite has the tokenizer inside:
e2e only), the mean padded length, the label ids of the batch-size-max
pass and the process's peak resident memory. It ends at the end of
stdin. It imports nothing of the project.
"""

import json
import os
import resource
import sys
import time


def _size_mb(path):
  """Megabytes of a file, or of the files under a directory."""
  if os.path.isfile(path):
    return os.path.getsize(path) / 1e6
  return sum(os.path.getsize(os.path.join(d, f))
             for d, _, files in os.walk(path) for f in files) / 1e6


def _batches(sentences, batch_size):
  return [sentences[i:i + batch_size]
          for i in range(0, len(sentences), batch_size)]


class _Ours(object):
  """The SavedModel's two signatures and the bench's tokenizer-only one."""

  def __init__(self, spec):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    import tensorflow_text  # noqa: F401 pylint: disable=unused-import,g-import-not-at-top
    self.tf = tf
    # The export computes two groups of heads and FFN units side by side
    # (export/inference_encoder.py): the inter-op pool runs the two, each
    # op on half the threads, as docs/export_and_serving.md advises.
    tf.config.threading.set_intra_op_parallelism_threads(
        max(1, spec["threads"] // 2))
    tf.config.threading.set_inter_op_parallelism_threads(spec["threads"])
    served = tf.saved_model.load(spec["saved_model"])
    self._text = served.signatures["serving_default"]
    self._ids = served.signatures["from_ids"]
    self._encode = tf.saved_model.load(
        spec["tokenizer_saved_model"]).signatures["serving_default"]
    self.version = "tensorflow %s" % tf.__version__
    self.size_mb = _size_mb(spec["saved_model"])

  def tokenize(self, texts):
    out = self._encode(text=self.tf.constant(texts))
    return {k: out[k] for k in ("input_ids", "input_mask", "segment_ids")}

  def padded_length(self, ids):
    return int(ids["input_ids"].shape[1])

  def model(self, ids):
    return self._ids(**ids)["label_id"].numpy()

  def e2e(self, texts):
    return self._text(text=self.tf.constant(texts))["label_id"].numpy()


class _Tflite(object):
  """Our .tflite with LiteRT's interpreter and tensorflow-text's kernels
  (`spec[key]`: the export directory, with tflite.json), `threads`
  interpreter threads. The tokenizer is inside: e2e only."""

  tokenize = model = None

  def __init__(self, spec, key):
    import numpy as np  # pylint: disable=g-import-not-at-top
    import tensorflow_text  # pylint: disable=g-import-not-at-top
    from ai_edge_litert import interpreter  # pylint: disable=g-import-not-at-top
    self.np = np
    with open(os.path.join(spec[key], "tflite.json"), encoding="utf-8") as f:
      meta = json.load(f)
    path = os.path.join(spec[key], "model.tflite")
    self._run = interpreter.InterpreterWithCustomOps(
        custom_op_registerers=[getattr(tensorflow_text.tflite_registrar, n)
                               for n in meta["custom_op_registerers"]],
        model_path=path, num_threads=spec["threads"]).get_signature_runner()
    self.version = "ai-edge-litert interpreter, quantize %s" % (
        meta["quantize"])
    self.size_mb = _size_mb(path)

  def e2e(self, texts):
    return self._run(text=self.np.array(texts, dtype=object))["label_id"]


class _Transformers(object):
  """AutoTokenizer (fast) and AutoModel (ElectraModel) + the task's head;
  with `int8`, the model's Linear layers dynamically quantized (qint8)."""

  def __init__(self, spec, int8=False):
    import numpy as np  # pylint: disable=g-import-not-at-top
    import torch  # pylint: disable=g-import-not-at-top
    import transformers  # pylint: disable=g-import-not-at-top
    self.torch = torch
    torch.set_num_threads(spec["threads"])
    torch.set_num_interop_threads(spec["threads"])
    folder = spec["hf_folder"]
    self._tokenizer = transformers.AutoTokenizer.from_pretrained(
        folder, use_fast=True)
    if not self._tokenizer.is_fast:
      raise SystemExit("transformers gave no fast tokenizer for %s" % folder)
    self._model = transformers.AutoModel.from_pretrained(folder).eval()
    self.size_mb = _size_mb(os.path.join(folder, "model.safetensors"))
    if int8:
      import io  # pylint: disable=g-import-not-at-top
      self._model = torch.ao.quantization.quantize_dynamic(
          self._model, {torch.nn.Linear}, dtype=torch.qint8)
      buffer = io.BytesIO()
      torch.save(self._model.state_dict(), buffer)
      self.size_mb = len(buffer.getvalue()) / 1e6
    head = spec["head"]
    self._mean = head["pooling"] == "mean"
    self._kernel = torch.from_numpy(np.asarray(head["kernel"], np.float32))
    self._bias = torch.from_numpy(np.asarray(head["bias"], np.float32))
    self._max_len = spec["max_seq_length"]
    self.version = "transformers %s, torch %s%s" % (
        transformers.__version__, torch.__version__,
        ", quantize_dynamic qint8" if int8 else "")

  def tokenize(self, texts):
    return self._tokenizer(texts, padding=True, truncation=True,
                           max_length=self._max_len, return_tensors="pt")

  def padded_length(self, ids):
    return int(ids["input_ids"].shape[1])

  def model(self, ids):
    with self.torch.inference_mode():
      states = self._model(**ids).last_hidden_state
      if self._mean:
        mask = ids["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
      else:
        pooled = states[:, 0]
      logits = pooled @ self._kernel + self._bias
      return logits.argmax(-1).numpy()

  def e2e(self, texts):
    return self.model(self.tokenize(texts))


def _timed(fn, inputs):
  """(seconds of each call of fn on each input, the outputs)."""
  seconds, outputs = [], []
  for x in inputs:
    start = time.perf_counter()
    outputs.append(fn(x))
    seconds.append(time.perf_counter() - start)
  return seconds, outputs


def measure(side, sentences, batch_sizes):
  """One round: {batch size: {"e2e", "tokenize", "model": [seconds],
  "padded_length": mean}} (a side without `tokenize`: e2e only, the
  others empty and None), the labels of the largest batch size and the
  peak resident memory so far, in MB."""
  result, labels = {}, None
  for batch_size in batch_sizes:
    batches = _batches(sentences, batch_size)
    e2e, predicted = _timed(side.e2e, batches)
    result[str(batch_size)] = dict(e2e=e2e, tokenize=[], model=[],
                                   padded_length=None)
    if side.tokenize is not None:
      tokenize, ids = _timed(side.tokenize, batches)
      model, _ = _timed(side.model, ids)
      lengths = [side.padded_length(x) for x in ids]
      result[str(batch_size)].update(
          tokenize=tokenize, model=model,
          padded_length=sum(lengths) / float(len(lengths)))
    labels = [int(label) for batch in predicted for label in batch]
  return dict(times=result, labels=labels, peak_rss_mb=_peak_rss_mb())


def _peak_rss_mb():
  """This process's peak resident memory: VmHWM on Linux (ru_maxrss keeps
  the forking parent's peak across exec), else ru_maxrss."""
  try:
    with open("/proc/self/status") as f:
      for line in f:
        if line.startswith("VmHWM:"):
          return int(line.split()[1]) / 1e3  # kB
  except OSError:
    pass
  peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  return peak / (1e6 if sys.platform == "darwin" else 1e3)


def main(argv):
  kind, spec_path = argv[1], argv[2]
  with open(spec_path, encoding="utf-8") as f:
    spec = json.load(f)
  side = {"ours": lambda: _Ours(spec),
          "ours_tflite": lambda: _Tflite(spec, "tflite"),
          "ours_tflite_int8": lambda: _Tflite(spec, "tflite_int8"),
          "transformers": lambda: _Transformers(spec),
          "transformers_int8": lambda: _Transformers(spec, int8=True)}[kind]()
  sentences, batch_sizes = spec["sentences"], spec["batch_sizes"]
  warmup = sentences[:max(batch_sizes)]
  measure(side, warmup, batch_sizes)  # traces, allocates, fills caches
  print(json.dumps(dict(ready=kind, version=side.version,
                        size_mb=side.size_mb)), flush=True)
  for _ in sys.stdin:
    print(json.dumps(measure(side, sentences, batch_sizes)), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
