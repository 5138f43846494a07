"""Finds and reads the weights of a Hugging Face model folder.

Released models come in several layouts; read, in this order of preference
when a folder has several:
  * `model.safetensors`;
  * shards listed by `model.safetensors.index.json` (its "weight_map" names
    the shard of each tensor, `model-00001-of-00003.safetensors`...);
  * `pytorch_model.bin` (torch.save's zip format, read without torch by
    interop/torch_pickle.py, which refuses pickles that would run code);
  * shards listed by `pytorch_model.bin.index.json`;
  * `tf_model.h5` (TF<Class>.save_pretrained; interop/tf_h5.py).
Every layout reads to {PyTorch state-dict key: numpy array}, in the stored
dtype (bfloat16 as float32). A `.bin` keeps what torch saved, tied copies
too (BertForMaskedLM's `cls.predictions.decoder.weight`), which
`save_pretrained` leaves out of safetensors. Files are read through
util/io_utils.py, so folders may be on `gs://` or `ram://`.
"""

import collections
import posixpath

from interop import safetensors_io
from interop import tf_h5
from interop import torch_pickle
from util import io_utils
from util.errors import UserError

# (file, reader) in the order of preference.
_LAYOUTS = (("model.safetensors", "safetensors"),
            ("model.safetensors.index.json", "safetensors"),
            ("pytorch_model.bin", "torch"),
            ("pytorch_model.bin.index.json", "torch"),
            ("tf_model.h5", "h5"))
WEIGHT_FILES = tuple(name for name, _ in _LAYOUTS)
WeightFiles = collections.namedtuple("WeightFiles", "name path reader")
WeightFiles.__doc__ = """A folder's weights: `name` one of WEIGHT_FILES,
`path` that file (for shards: their index), `reader` "safetensors", "torch"
or "h5"."""


def find_weights(folder):
  """The WeightFiles of the preferred layout in `folder`, or None."""
  for name, reader in _LAYOUTS:
    path = posixpath.join(folder, name)
    if io_utils.is_file(path):
      return WeightFiles(name, path, reader)
  return None


def folder_contents(folder, limit=10):
  """The names in `folder`, sorted, as text: at most `limit`, then "and N
  more"; "nothing" when it is empty or missing."""
  entries = io_utils.listdir(folder) if io_utils.is_dir(folder) else []
  if not entries:
    return "nothing"
  more = len(entries) - limit
  return ", ".join(entries[:limit]) + (
      " and %d more" % more if more > 0 else "")


def no_weights_message(folder, also=""):
  """One line: `folder` has none of WEIGHT_FILES (nor `also`, text naming
  what else would do); what it holds."""
  return ("%s has no model weights this loader reads: it holds %s; read "
          "are %s%s." % (folder, folder_contents(folder),
                         ", ".join(WEIGHT_FILES), also))


def _read_file(path, reader):
  """{key: array} of one weights file; UserError naming it if broken."""
  try:
    if reader == "safetensors":
      return safetensors_io.load(path)
    data = io_utils.read_bytes(path)
  except (OSError, ValueError, KeyError, TypeError) as e:
    raise UserError("%s cannot be read (broken or truncated?): %s: %s" % (
        path, type(e).__name__, e))
  return (torch_pickle.load if reader == "torch" else tf_h5.load)(path, data)


def _shards(index_path):
  """{shard path: [keys]} of an index's "weight_map"; UserError naming
  the index if it is broken or names a missing shard."""
  try:
    weight_map = io_utils.read_json(index_path)["weight_map"]
    if not all(isinstance(k, str) and isinstance(v, str)
               for k, v in weight_map.items()):
      raise ValueError("weight_map is not {tensor name: file name}")
  except (ValueError, KeyError, TypeError, AttributeError) as e:
    raise UserError("%s is not a valid index (JSON with a \"weight_map\"): "
                    "%s: %s" % (index_path, type(e).__name__, e))
  folder = posixpath.dirname(index_path)
  shards = {}
  for key, name in weight_map.items():
    if "/" in name or "\\" in name or name.startswith("."):
      raise UserError("%s names the shard %r, which is not a file name in "
                      "its folder." % (index_path, name))
    shards.setdefault(posixpath.join(folder, name), []).append(key)
  for path in sorted(shards):
    if not io_utils.is_file(path):
      raise UserError("%s lists the shard %s, which is missing; download "
                      "it too." % (index_path, posixpath.basename(path)))
  return shards


def read_weights(folder):
  """Reads the preferred weights layout of `folder`.

  Args:
    folder: a Hugging Face model folder (any gfile path).
  Returns (tensors {PyTorch state-dict key: numpy array}, a short
    description of the file(s) read, e.g. "pytorch_model.bin" or
    "model.safetensors.index.json (3 shards)").
  Raises UserError when the folder has no layout, or a file is broken,
  refused (a pickle that would run code) or lacks what its index says.
  """
  found = find_weights(folder)
  if found is None:
    raise UserError(no_weights_message(folder))
  if not found.name.endswith(".index.json"):
    return _read_file(found.path, found.reader), found.name
  tensors = {}
  shards = _shards(found.path)
  for path, keys in sorted(shards.items()):
    part = _read_file(path, found.reader)
    absent = [k for k in keys if k not in part]
    if absent:
      raise UserError("%s: %s does not hold %s, which the index places "
                      "there." % (found.path, posixpath.basename(path),
                                  ", ".join(sorted(absent)[:3])))
    tensors.update(part)
  return tensors, "%s (%d shards)" % (found.name, len(shards))
