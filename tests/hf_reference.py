"""transformers (PyTorch) as the reference, run in its own process.

TensorFlow 2.20 and torch's triton crash when loaded into one process in
that order (a native library clash at `import triton` after `import
tensorflow`), so the interop tests call this script with a job file instead
of importing transformers. Only the "tf1" and "save_tf" jobs import
TensorFlow, after torch.

Usage: python tests/hf_reference.py JOBS.json
JOBS.json: a list of jobs, each a dict with "op":
  * "make": {"op", "class", "config" (kwargs of the config class), "folder",
    "seed"}: a random-weight model of `class` (ElectraForPreTraining,
    ElectraForMaskedLM, ElectraModel, BertModel, BertForMaskedLM) saved with
    `save_pretrained` (safetensors).
  * "tf1": {"op", "class", "config", "checkpoint", "role", "folder"}: a
    TF1 ELECTRA checkpoint converted by transformers'
    `load_tf_weights_in_electra` (role "discriminator" or "generator") and
    saved to `folder`. TensorFlow is imported there, after torch.
  * "run": {"op", "class", "folder", "inputs" (.npz with input_ids,
    input_mask, segment_ids [batch, seq_len]), "outputs" (.npz written)}:
    loads the folder with `class.from_pretrained` and writes `logits` (when
    the class has them), `hidden` (the last encoder layer), float32, and
    `missing_keys`, `unexpected_keys`, `mismatched_keys` of the loading
    ([""] when none); with tokenizer files, `tokenized`: the ids
    AutoTokenizer gives "w1 W2 w3".
  * "tokenize": {"op", "folder", "texts", "outputs" (.json written)}:
    `AutoTokenizer.from_pretrained(folder)` (or, given "vocab_file" and
    "do_lower_case", `BertTokenizer` of them) on each text; writes
    {"class": the tokenizer's class name, "input_ids": [[id, ...], ...]}.
  * "save": {"op", "class", "folder", "out", "safe_serialization",
    "max_shard_size" (optional)}: the folder loaded with `from_pretrained`
    and written to `out` by `save_pretrained` (safetensors or
    pytorch_model.bin, sharded when `max_shard_size`, e.g. "40KB", is
    smaller than the model).
  * "save_tf": {"op", "class", "folder", "out"}: `TF<class>.from_pretrained(
    folder, from_pt=True).save_pretrained(out)`: a tf_model.h5 (TensorFlow
    and tf_keras are imported there, after torch).
  * "torch_save": {"op", "file", "expected" (.npz written)}: torch.save of
    tensors of several dtypes, views with a storage offset and strides
    among them; `expected` their values (bfloat16 as float32).
"""

import json
import os
import sys

import numpy as np
import torch
import transformers


def _config_class(cls_name):
  return (transformers.BertConfig if cls_name.startswith("Bert") else
          transformers.ElectraConfig)


def make(job):
  torch.manual_seed(job.get("seed", 0))
  config = _config_class(job["class"])(**job["config"])
  model = getattr(transformers, job["class"])(config)
  # Biases and LayerNorms start at 0/1; randomise them too, so every
  # mapping is exercised.
  with torch.no_grad():
    for name, param in model.named_parameters():
      if "LayerNorm" in name or name.endswith("bias"):
        param.add_(0.1 * torch.randn_like(param))
  model.save_pretrained(job["folder"], safe_serialization=True)


def run(job):
  model, info = getattr(transformers, job["class"]).from_pretrained(
      job["folder"], output_loading_info=True)
  model.eval()
  data = np.load(job["inputs"])
  ids = {key: torch.tensor(data[ours], dtype=torch.long) for key, ours in (
      ("input_ids", "input_ids"), ("attention_mask", "input_mask"),
      ("token_type_ids", "segment_ids"))}
  with torch.no_grad():
    out = model(**ids, output_hidden_states=True)
  result = {"hidden": out.hidden_states[-1].numpy()}
  if getattr(out, "logits", None) is not None:
    result["logits"] = out.logits.numpy()
  if os.path.isfile(os.path.join(job["folder"], "tokenizer_config.json")):
    tokenizer = transformers.AutoTokenizer.from_pretrained(job["folder"])
    result["tokenized"] = np.array(tokenizer("w1 W2 w3")["input_ids"])
  # What from_pretrained could not place, as arrays of names.
  for key in ("missing_keys", "unexpected_keys", "mismatched_keys"):
    result[key] = np.array([str(k) for k in info[key]] or [""])
  np.savez(job["outputs"], **result)


def tokenize(job):
  if job.get("vocab_file"):  # A package's own BertTokenizer call.
    tokenizer = transformers.BertTokenizer(
        vocab_file=job["vocab_file"], do_lower_case=job["do_lower_case"])
  else:
    tokenizer = transformers.AutoTokenizer.from_pretrained(job["folder"])
  with open(job["outputs"], "w") as f:
    json.dump({"class": type(tokenizer).__name__,
               "input_ids": [tokenizer(t)["input_ids"] for t in job["texts"]]},
              f)


def from_tf1(job):
  """transformers' own TF1-ELECTRA conversion of a checkpoint, saved."""
  cls = getattr(transformers, job["class"])  # Loads torch (triton) first:
  model = cls(transformers.ElectraConfig(**job["config"]))  # then TF.
  transformers.load_tf_weights_in_electra(
      model, model.config, job["checkpoint"],
      discriminator_or_generator=job["role"])
  model.save_pretrained(job["folder"], safe_serialization=True)


def save(job):
  model = getattr(transformers, job["class"]).from_pretrained(job["folder"])
  kwargs = {}
  if job.get("max_shard_size"):
    kwargs["max_shard_size"] = job["max_shard_size"]
  model.save_pretrained(job["out"],
                        safe_serialization=job["safe_serialization"], **kwargs)


def save_tf(job):
  """transformers' own TF2 model of a PyTorch folder, as tf_model.h5."""
  cls = getattr(transformers, "TF" + job["class"])  # torch is loaded: TF now.
  cls.from_pretrained(job["folder"], from_pt=True).save_pretrained(job["out"])


def torch_save(job):
  """Tensors that are not one whole contiguous storage each, saved."""
  gen = torch.Generator().manual_seed(0)
  base = torch.randn(6, 5, generator=gen)
  tensors = {
      "transposed": base.t(), "row": base[2], "column": base[1:, 3],
      "scalar": base[4, 4], "half": base.half()[1:3], "empty": base[:0],
      "bfloat16": base.bfloat16().t()[1:], "double": base.double(),
      "long": torch.arange(-3, 9).reshape(3, 4)[:, 1::2],
      "int8": torch.arange(-4, 4, dtype=torch.int8),
      "bool": base > 0}
  torch.save(tensors, job["file"])
  np.savez(job["expected"], **{
      k: (v.float() if v.dtype == torch.bfloat16 else v).numpy()
      for k, v in tensors.items()})


def main(path):
  with open(path) as f:
    jobs = json.load(f)
  for job in jobs:
    {"make": make, "run": run, "tf1": from_tf1, "tokenize": tokenize,
     "save": save, "save_tf": save_tf,
     "torch_save": torch_save}[job["op"]](job)


if __name__ == "__main__":
  main(sys.argv[1])
