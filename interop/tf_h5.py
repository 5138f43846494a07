"""Reads a Hugging Face TF2 `tf_model.h5` as a PyTorch state dict.

`TF<Class>.save_pretrained` writes Keras' h5 weights layout: the file's
attribute `layer_names` lists the model's top layers (for TFBertForMaskedLM
"bert" and "mlm___cls"), each an h5 group whose attribute `weight_names`
lists its weights' TF names (long lists are split over `weight_names0`,
`weight_names1`...), each a dataset of that name in the group. A layer that
uses another's weights (an MLM head reading the word embeddings) lists them
too; they are read once.

A TF name becomes the PyTorch state-dict key the way transformers converts
them: without the model-class scope (`tf_bert_for_masked_lm/`) and `:0`, a
scope `a___b` read as `b` (`mlm___cls` -> `cls`), `_._` and `/` as `.`,
`kernel` as `weight` transposed, `gamma` and `embeddings` as `weight`,
`beta` as `bias`. A base model (one top layer, as TFBertModel's "bert")
loses that layer's prefix, as the PyTorch BertModel's keys have none.
"""

import io

import h5py
import numpy as np

from util.errors import UserError


def _strings(attrs, name):
  """The strings of attribute `name`, or of `name0`, `name1`... (None when
  there is neither)."""
  if name in attrs:
    chunks = [attrs[name]]
  else:
    chunks = []
    while "%s%d" % (name, len(chunks)) in attrs:
      chunks.append(attrs["%s%d" % (name, len(chunks))])
    if not chunks:
      return None
  return [v.decode("utf-8") if isinstance(v, bytes) else str(v)
          for chunk in chunks for v in np.atleast_1d(chunk)]


def pt_name(tf_name, array, path):
  """(PyTorch key, array in PyTorch's layout) of one TF weight.

  Args:
    tf_name: the weight's TF name, e.g.
      "tf_bert_model/bert/encoder/layer_._0/attention/self/query/kernel:0".
    array: its value.
    path: the file, for messages.
  """
  scopes = tf_name.replace(":0", "").split("/")
  # `a___b` names scope b in PyTorch (not the first or last part).
  scopes[1:-1] = [s.rsplit("___", 1)[-1] for s in scopes[1:-1]]
  parts = [p for s in scopes for p in s.split("_._") if p]
  if len(parts) > 1:
    parts = parts[1:]  # The model-class scope.
  last = parts[-1]
  if last == "kernel":
    if array.ndim != 2:
      raise UserError("%s: %s is a kernel of rank %d; only dense (rank 2) "
                      "kernels are read." % (path, tf_name, array.ndim))
    array = np.ascontiguousarray(array.T)
  if last in ("kernel", "gamma", "embeddings"):
    parts[-1] = "weight"
  elif last == "beta":
    parts[-1] = "bias"
  return ".".join(parts), array


def load(path, data):
  """{PyTorch state-dict key: numpy array} of a Keras h5 weights file.

  Args:
    path: the file's path, for messages.
    data: its bytes.
  Raises UserError naming `path` when it is not an h5 file of Keras
  weights or a listed weight is missing.
  """
  try:
    f = h5py.File(io.BytesIO(data), "r")
  except OSError as e:
    raise UserError("%s is not a readable h5 file (truncated?): %s" % (
        path, e))
  with f:
    layers = _strings(f.attrs, "layer_names")
    if layers is None:
      raise UserError("%s has no attribute layer_names: not Keras weights "
                      "(TF<Class>.save_pretrained)." % path)
    arrays, owners = {}, set()
    for layer in layers:
      if layer not in f:
        raise UserError("%s: layer %s is listed but absent." % (path, layer))
      names = _strings(f[layer].attrs, "weight_names") or []
      for name in names:
        if name in arrays:
          continue
        try:
          arrays[name] = np.asarray(f[layer][name][()])
        except (KeyError, OSError) as e:
          raise UserError("%s: weight %s of layer %s cannot be read: %s" % (
              path, name, layer, e))
        owners.add(layer)
  tensors = dict(pt_name(name, array, path) for name, array in arrays.items())
  if len(owners) == 1:  # A base model: its keys have no prefix.
    prefix = owners.pop() + "."
    tensors = {k[len(prefix):] if k.startswith(prefix) else k: v
               for k, v in tensors.items()}
  return tensors
