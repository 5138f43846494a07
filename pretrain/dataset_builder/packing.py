"""Packing: a document's sentences -> example spans -> laid-out token arrays.

ELECTRA's rules (target length, where segment A ends, 5% short and 10% A-only
examples) with two changes: the sentence that overflows an example continues
in the next one instead of being truncated, and segment B is the text that
follows segment A.
"""

import hashlib

import numpy as np


def derive_seed(*parts):
  """A 64-bit seed from strings/ints (stable across processes and runs)."""
  key = "\x00".join(str(p) for p in parts).encode("utf-8")
  return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")


def _segment_split(unit_ends, start, target, rng):
  """Where segment A ends, by ELECTRA's rule, for units ending at unit_ends.

  A takes units while it is empty, while it stays under (target - 3) // 2
  tokens, or (half the time) one unit more; 10% of the examples are
  A-only. Unlike the original, B is contiguous: once a unit went to B, all
  later ones do.
  """
  if rng.random() < 0.1:
    return unit_ends[-1]
  first_target = (target - 3) // 2
  a = start
  for end in unit_ends:
    first_len = a - start
    if (first_len == 0 or end - start < first_target or
        (first_len < first_target and rng.random() < 0.5)):
      a = end
    else:
      break
  return a


def pack_document(lengths, start, rng, max_seq_length):
  """Packs a document's sentences into examples, ELECTRA-style, losing none.

  Sentences fill an example up to target_length - 3 tokens (room for [CLS]
  and two [SEP]); the sentence that overflows it continues in the next
  example (the original truncated it). As in ELECTRA, 5% of the examples get
  a random target length in [5, max_seq_length].

  Args:
    lengths: token counts of the document's sentences, in order (list of int).
    start: index of the document's first token in the chunk's token array.
    rng: random.Random of the chunk.
    max_seq_length: example length.
  Returns:
    list of (s, a, e): segment A is tokens [s, a), segment B is [a, e) (empty
    when a == e).
  """
  examples = []
  target = max_seq_length
  ex_start = pos = start
  unit_ends = []
  for n in lengths:
    while n:
      take = min(n, target - 3 - (pos - ex_start))
      pos += take
      n -= take
      unit_ends.append(pos)
      if pos - ex_start == target - 3:
        examples.append((ex_start, _segment_split(unit_ends, ex_start, target,
                                                  rng), pos))
        ex_start = pos
        unit_ends = []
        target = (rng.randint(5, max_seq_length) if rng.random() < 0.05
                  else max_seq_length)
  if pos > ex_start:
    examples.append((ex_start, _segment_split(unit_ends, ex_start, target, rng),
                     pos))
  return examples


def layout_examples(ids, spans, max_seq_length, cls_id, sep_id, pad_id):
  """Lays out [CLS] A [SEP] B [SEP] [PAD]... for every span at once.

  Args:
    ids: [num_tokens] token ids of a chunk.
    spans: list of (s, a, e) from pack_document.
    max_seq_length: example length.
    cls_id, sep_id, pad_id: the special tokens' ids.
  Returns:
    input_ids [n, max_seq_length] int64; input_mask and segment_ids
    [n, max_seq_length] uint8.
  """
  n = len(spans)
  spans = np.asarray(spans, np.int64).reshape([n, 3])
  s, a, e = spans[:, 0], spans[:, 1], spans[:, 2]
  len_a, len_b = a - s, e - a
  has_b = len_b > 0
  length = 2 + len_a + len_b + has_b  # real positions, specials included
  rows = np.arange(n)
  input_ids = np.full([n, max_seq_length], pad_id, np.int64)
  # Token t of example i sits at column 1 + t, one more when it is in B.
  lens = e - s
  owner = np.repeat(rows, lens)
  offset = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
  in_b = offset >= np.repeat(len_a, lens)
  input_ids[owner, 1 + offset + in_b] = ids[np.repeat(s, lens) + offset]
  input_ids[:, 0] = cls_id
  input_ids[rows, 1 + len_a] = sep_id
  input_ids[rows[has_b], length[has_b] - 1] = sep_id
  columns = np.arange(max_seq_length)[None, :]
  input_mask = (columns < length[:, None]).astype(np.uint8)
  segment_ids = (has_b[:, None] & (columns >= (2 + len_a)[:, None]) &
                 (columns < length[:, None])).astype(np.uint8)
  return input_ids, input_mask, segment_ids
