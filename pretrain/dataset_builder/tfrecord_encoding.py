"""tf.train.Example records written directly in protobuf's wire format.

About 20x faster than building tf.train.Example objects, and with a fixed byte
order (protobuf leaves the order of a map's entries unspecified), which is
what makes the builder's output byte-identical across runs.
"""

import functools

import numpy as np

FEATURES = ("input_ids", "input_mask", "segment_ids")


def _varint(n):
  out = bytearray()
  while n > 0x7F:
    out.append((n & 0x7F) | 0x80)
    n >>= 7
  out.append(n)
  return bytes(out)


def _varints(rows):
  """Protobuf varint encoding of every value of a non-negative int matrix.

  Args:
    rows: [num_rows, width] ints, values in [0, 2**32).
  Returns:
    (data, sizes): data is uint8 [total_bytes], the varints of all values in
    row-major order; sizes is int64 [num_rows], the bytes of each row.
  """
  rows = np.asarray(rows)
  if rows.size and (rows.min() < 0 or rows.max() >= 1 << 32):
    raise ValueError("ids must be in [0, 2**32)")
  rows = rows.astype(np.uint32)
  groups = max(1, (int(rows.max(initial=0)).bit_length() + 6) // 7)
  num_bytes = np.ones(rows.shape, np.uint8)
  for k in range(1, groups):
    num_bytes += rows >= (1 << (7 * k))
  # Byte k holds bits 7k..7k+6; its high bit says another byte follows.
  data = np.empty(rows.shape + (groups,), np.uint8)
  for k in range(groups):
    data[..., k] = (((rows >> (7 * k)) & 0x7F).astype(np.uint8) |
                    ((num_bytes > k + 1).view(np.uint8) << 7))
  keep = np.arange(groups, dtype=np.uint8) < num_bytes[..., None]
  return data[keep], num_bytes.sum(axis=1, dtype=np.int64)


@functools.lru_cache(maxsize=None)
def _entry_prefix(name, payload_size):
  """Bytes before an int64 payload of payload_size bytes in a Features entry.

  The entry is Features.feature {key: name, value: Feature {int64_list:
  Int64List {value (packed)}}}; every length is a varint before its field.
  """
  key = name.encode("ascii")
  int64_list = 1 + len(_varint(payload_size)) + payload_size
  feature = 1 + len(_varint(int64_list)) + int64_list
  entry = 2 + len(key) + 1 + len(_varint(feature)) + feature
  return (b"\x0a" + _varint(entry) + b"\x0a" + _varint(len(key)) + key +
          b"\x12" + _varint(feature) + b"\x1a" + _varint(int64_list) +
          b"\x0a" + _varint(payload_size))


@functools.lru_cache(maxsize=None)
def _example_head(ids_payload_size, length):
  """Example bytes before the input_ids payload (the rest is fixed-size)."""
  ids_prefix = _entry_prefix(FEATURES[0], ids_payload_size)
  body = (len(ids_prefix) + ids_payload_size +
          len(_entry_prefix(FEATURES[1], length)) +
          len(_entry_prefix(FEATURES[2], length)) + 2 * length)
  return b"\x0a" + _varint(body) + ids_prefix


def serialize_examples(input_ids, input_mask, segment_ids):
  """Serialized tf.train.Example protos with the three int64 FEATURES.

  Parses back to the same features as tf.train.Example.SerializeToString
  would give (the tests check it). A record is: a head that depends only on
  the size of the input_ids payload, the input_ids varints, then the
  input_mask and segment_ids entries (one byte per 0/1 value).

  Args:
    input_ids: [n, max_seq_length] non-negative ints.
    input_mask, segment_ids: [n, max_seq_length], values 0 or 1.
  Returns:
    list of n bytes.
  """
  input_ids = np.asarray(input_ids, np.int64)
  n, length = input_ids.shape
  payload, payload_sizes = _varints(input_ids)
  payload = payload.tobytes()
  mask_prefix = _entry_prefix(FEATURES[1], length)
  segment_prefix = _entry_prefix(FEATURES[2], length)
  tails = np.concatenate([
      np.broadcast_to(np.frombuffer(mask_prefix, np.uint8),
                      (n, len(mask_prefix))),
      np.asarray(input_mask, np.uint8),
      np.broadcast_to(np.frombuffer(segment_prefix, np.uint8),
                      (n, len(segment_prefix))),
      np.asarray(segment_ids, np.uint8)], axis=1)
  tail_size = tails.shape[1]
  tails = tails.tobytes()
  heads = {}
  out = []
  start = 0
  for i, end in enumerate(np.cumsum(payload_sizes).tolist()):
    head = heads.get(end - start)
    if head is None:
      head = heads[end - start] = _example_head(end - start, length)
    out.append(b"".join((head, payload[start:end],
                         tails[i * tail_size:(i + 1) * tail_size])))
    start = end
  return out
