"""Reads and writes `.safetensors` files with numpy alone.

The format (huggingface/safetensors docs): an 8-byte little-endian header
length N, N bytes of JSON {name: {"dtype", "shape", "data_offsets": [begin,
end]}, "__metadata__": {str: str}}, then the tensors' raw little-endian
bytes, offsets relative to the end of the header. Written here so that
exporting needs no extra runtime package; the tests check the files against
the `safetensors` library and transformers.
"""

import json
import struct

import numpy as np

from util import io_utils
from util.errors import UserError
from util.io_utils import write_bytes_atomic

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64,
           "I64": np.int64, "I32": np.int32, "I8": np.int8, "U8": np.uint8,
           "BOOL": np.bool_}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def save(path, tensors, metadata=None):
  """Writes {name: numpy array} to `path` atomically.

  `metadata` ({str: str}) goes to "__metadata__"; transformers needs
  {"format": "pt"} there.
  """
  header = {}
  chunks = []
  offset = 0
  for name in sorted(tensors):
    array = np.ascontiguousarray(tensors[name])
    if array.dtype not in _NAMES:
      raise ValueError("unsupported dtype %s of %s" % (array.dtype, name))
    data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    header[name] = dict(dtype=_NAMES[array.dtype], shape=list(array.shape),
                        data_offsets=[offset, offset + len(data)])
    chunks.append(data)
    offset += len(data)
  if metadata:
    header["__metadata__"] = dict(metadata)
  text = json.dumps(header, separators=(",", ":")).encode("utf-8")
  text += b" " * (-len(text) % 8)  # The spec's recommended 8-byte alignment.
  write_bytes_atomic(path, struct.pack("<Q", len(text)) + text +
                     b"".join(chunks))


def load(path):
  """{name: numpy array} from a `.safetensors` file (UserError if broken)."""
  data = io_utils.read_bytes(path)
  try:
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length].decode("utf-8"))
  except (struct.error, ValueError, UnicodeDecodeError) as e:
    raise UserError("%s is not a safetensors file: %s" % (path, e))
  body = data[8 + length:]
  tensors = {}
  for name, info in header.items():
    if name == "__metadata__":
      continue
    begin, end = info["data_offsets"]
    if info["dtype"] == "BF16":  # bfloat16 is float32's upper 16 bits.
      bits = np.frombuffer(body[begin:end], dtype="<u2").astype(np.uint32)
      tensors[name] = (bits << 16).view(np.float32).reshape(info["shape"])
      continue
    if info["dtype"] not in _DTYPES:
      raise UserError("%s: tensor %s has dtype %s, which this loader does "
                      "not read; save the model as float32." % (
                          path, name, info["dtype"]))
    dtype = np.dtype(_DTYPES[info["dtype"]]).newbyteorder("<")
    tensors[name] = np.frombuffer(body[begin:end], dtype=dtype).reshape(
        info["shape"]).astype(dtype.newbyteorder("="))
  return tensors


def copy_atomic(source, destination):
  """Copies a file (a vocab.txt) through `write_bytes_atomic`."""
  write_bytes_atomic(destination, io_utils.read_bytes(source))
