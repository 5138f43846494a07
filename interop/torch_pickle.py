"""Reads a PyTorch `torch.save` state dict (`pytorch_model.bin`) without torch.

PyTorch's zip format (torch/serialization.py): a zip archive whose entries
sit under one top folder (its name varies: "archive", "pytorch_model"...),
`data.pkl` a pickle of the state dict, `data/<key>` the raw bytes of each
storage and optionally `byteorder` ("little" or "big"; little when absent).
In the pickle a tensor is `torch._utils._rebuild_tensor_v2(storage,
storage_offset, size, stride, requires_grad, backward_hooks)`, and a storage
a persistent id ("storage", torch.<Type>Storage, key, location, numel).

A pickle can call any importable function, so the unpickler here resolves
only an allow-list of names (OrderedDict, the tensor and parameter
rebuilders, the typed storage classes) to local stand-ins; any other global
is refused before anything runs. Tensors come back as numpy arrays in their
stored dtype, except bfloat16, which becomes float32 (as safetensors_io
reads it). The legacy (non-zip) torch format is refused with a way out.
"""

import collections
import io
import pickle
import zipfile

import numpy as np
from numpy.lib import stride_tricks

from util.errors import UserError

_STORAGE_DTYPES = {
    "FloatStorage": "f4", "HalfStorage": "f2", "BFloat16Storage": "u2",
    "DoubleStorage": "f8", "LongStorage": "i8", "IntStorage": "i4",
    "ShortStorage": "i2", "CharStorage": "i1", "ByteStorage": "u1",
    "BoolStorage": "?"}
_StorageType = collections.namedtuple("_StorageType", "name dtype")
_Storage = collections.namedtuple("_Storage", "array key")
_LEGACY_MAGIC = b"\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"


def _rebuild_tensor(storage, storage_offset, size, stride, requires_grad,
                    backward_hooks, metadata=None):
  """The numpy array (a copy) of a tensor viewing `storage` (a _Storage)."""
  del requires_grad, backward_hooks  # Autograd state, not data.
  if not isinstance(storage, _Storage) or metadata:
    raise ValueError("a tensor that is not a plain view of a storage")
  size, stride = tuple(size), tuple(stride)
  values = (storage_offset,) + size + stride
  if len(size) != len(stride) or not all(
      isinstance(v, int) and v >= 0 for v in values):
    raise ValueError("tensor size %r, stride %r, offset %r" % (
        size, stride, storage_offset))
  array = storage.array
  if 0 in size:
    return np.zeros(size, array.dtype)
  last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
  if last >= array.size or np.prod(size, dtype=object) > array.size:
    raise ValueError("a tensor reaching past the end of storage %s, or "
                     "larger than it" % storage.key)
  base = array[storage_offset:]
  view = stride_tricks.as_strided(
      base, size, [s * array.itemsize for s in stride], writeable=False)
  return np.array(view)


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
  """An nn.Parameter is its data here."""
  del requires_grad, backward_hooks, state
  if not isinstance(data, np.ndarray):
    raise ValueError("a parameter of something else than a tensor")
  return data


_ALLOWED = {("collections", "OrderedDict"): collections.OrderedDict,
            ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
            ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
            ("torch._utils", "_rebuild_parameter_with_state"):
            _rebuild_parameter}
_ALLOWED.update({("torch", name): _StorageType(name, dtype)
                 for name, dtype in _STORAGE_DTYPES.items()})


class _Unpickler(pickle.Unpickler):
  """Resolves only the globals of `_ALLOWED`; storages from the zip."""

  def __init__(self, data, archive, prefix, byteorder, path):
    super().__init__(io.BytesIO(data))
    self._archive, self._prefix, self._path = archive, prefix, path
    self._order = "<" if byteorder == "little" else ">"
    self._storages = {}

  def find_class(self, module, name):
    found = _ALLOWED.get((module, name))
    if found is None:
      raise UserError(
          "%s: refused to load: its pickle asks for the global %s.%s, which "
          "a state dict of tensors never needs (it needs only torch's "
          "tensor rebuilders, storage types and collections.OrderedDict); "
          "it may be made to run code. Use the model's safetensors file or "
          "one from a source you trust." % (self._path, module, name))
    return found

  def persistent_load(self, pid):
    if (not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage"
        or not isinstance(pid[1], _StorageType) or not isinstance(
            pid[2], str) or not isinstance(pid[4], int)):
      raise ValueError("unknown persistent id %r" % (pid,))
    storage_type, key, numel = pid[1], pid[2], pid[4]
    if key not in self._storages:
      data = self._archive.read(self._prefix + "data/" + key)
      dtype = np.dtype(storage_type.dtype).newbyteorder(self._order)
      if len(data) < numel * dtype.itemsize:
        raise ValueError("storage %s holds %d bytes, not %d" % (
            key, len(data), numel * dtype.itemsize))
      array = np.frombuffer(data, dtype, count=numel).astype(
          dtype.newbyteorder("="), copy=False)
      if storage_type.name == "BFloat16Storage":  # float32's upper half.
        array = (array.astype(np.uint32) << 16).view(np.float32)
      self._storages[key] = _Storage(array, key)
    return self._storages[key]


def _open_zip(data, path):
  """(the ZipFile, the prefix of its data.pkl) of a torch zip file."""
  if not data.startswith(b"PK"):
    if _LEGACY_MAGIC in data[:64] or data[257:262] == b"ustar":
      raise UserError(
          "%s is in PyTorch's legacy (pre-1.6) format, which this loader "
          "does not read. Re-save it with a current torch "
          "(torch.save(model.state_dict(), path)) or as safetensors "
          "(model.save_pretrained(folder, safe_serialization=True))." % path)
    raise UserError("%s is not a PyTorch zip file (torch.save)." % path)
  try:
    archive = zipfile.ZipFile(io.BytesIO(data))
  except zipfile.BadZipFile as e:
    raise UserError("%s is a broken or truncated zip file (%s); download it "
                    "again." % (path, e))
  pickles = [n for n in archive.namelist() if n.endswith("/data.pkl")
             and n.count("/") == 1]
  if len(pickles) != 1:
    raise UserError("%s: expected one <folder>/data.pkl in the zip, found "
                    "%d; is it a torch.save file?" % (path, len(pickles)))
  return archive, pickles[0][:-len("data.pkl")]


def load(path, data):
  """{state-dict key: numpy array} of the torch.save file `path`.

  Args:
    path: the file's path, for messages.
    data: its bytes.
  Returns the arrays in the pickle's order.
  Raises UserError naming `path` for a refused global, a legacy or broken
  file, or a pickle that is not a dict of tensors.
  """
  archive, prefix = _open_zip(data, path)
  try:
    names = set(archive.namelist())
    byteorder = "little"
    if prefix + "byteorder" in names:
      byteorder = archive.read(prefix + "byteorder").decode().strip()
    state = _Unpickler(archive.read(prefix + "data.pkl"), archive, prefix,
                       byteorder, path).load()
  except UserError:
    raise
  except Exception as e:  # pylint: disable=broad-except
    # A broken member or pickle: zipfile, zlib, pickle and our checks
    # raise many kinds; each names the fault.
    raise UserError("%s cannot be read as a PyTorch state dict: %s: %s" % (
        path, type(e).__name__, e))
  if not isinstance(state, dict):
    raise UserError("%s holds a %s, not a state dict." % (
        path, type(state).__name__))
  for key, value in state.items():
    if not isinstance(key, str) or not isinstance(value, np.ndarray):
      raise UserError("%s: entry %r is not a tensor." % (path, key))
  return dict(state)
