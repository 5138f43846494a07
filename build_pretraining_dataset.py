"""Writes pre-training examples (TFRecord shards) from a directory of raw text.

Each example is `[CLS] A [SEP] B [SEP]` padded to max_seq_length, with the
int64 features input_ids, input_mask and segment_ids, as in ELECTRA's
build_pretraining_dataset.py. What differs from the original:

  * No text is dropped. The original appends whole lines until an example is
    full and truncates the overflow, which loses most of a corpus whose lines
    are long (a speech or a chapter per line). Here long lines are split into
    sentences, and the sentence that overflows an example continues in the
    next one. The manifest reports the coverage (tokens written / corpus
    tokens).
  * Segments stay in text order: once a sentence went to segment B, the rest
    follow it (the original could move a short later sentence into A).
  * The output is the same for a seed whatever --num-processes is: files are
    cut into fixed chunks (at blank lines where possible), each chunk's random
    choices come from a generator seeded by (seed, file, chunk), and examples
    are dealt to the shards round-robin in corpus order.
  * Unreadable, binary, non-UTF-8 and empty files are skipped with a warning
    and listed in manifest.json; optionally a fraction of the documents goes
    to held-out shards.

Usage:
  python build_pretraining_dataset.py --corpus-dir data/corpus \
      --vocab-file vocab.txt --output-dir data/pretrain_tfrecords
"""

import argparse
import collections
import concurrent.futures
import functools
import gc
import hashlib
import multiprocessing
import os
import random
import re
import sys
import time

import numpy as np

from util.cli import quiet_tensorflow_startup

quiet_tensorflow_startup()

from model import tokenization  # pylint: disable=g-import-not-at-top
from pretrain.tfrecord_shards import ShardWriter
from pretrain.tfrecord_shards import hold_out_tail
from util import corpus as corpus_lib
from util.cli import run_main
from util.errors import UserError
from util.io_utils import write_json_atomic

TRAIN_PREFIX = "pretrain_data.tfrecord"
HELDOUT_PREFIX = "heldout_data.tfrecord"
MANIFEST = "manifest.json"
FEATURES = ("input_ids", "input_mask", "segment_ids")

# Files are processed in chunks of about this many characters, cut at a blank
# line where one is near. Part of the output's definition (packing restarts at
# a chunk boundary), so it must not depend on the number of processes.
CHUNK_CHARS = 1 << 18

# Lines longer than this are split into sentences; shorter ones (hard-wrapped
# text) are packed whole, like the original packs lines.
LONG_LINE_CHARS = 200

# A sentence ends at . ! or ? (possibly followed by a closing quote or
# bracket) and white space.
_SENTENCE_END = re.compile(r"([.!?][\"'\u201d\u2019)\]]?)\s+")


def split_sentences(line):
  """Splits a stripped line into sentence-like pieces (no text is lost)."""
  parts = _SENTENCE_END.split(line)
  if len(parts) == 1:
    return parts
  sentences = [a + b for a, b in zip(parts[0::2], parts[1::2])]
  sentences.append(parts[-1])
  return sentences


def chunk_text(text, size=None):
  """Cuts text into pieces of about `size` (CHUNK_CHARS) characters at lines.

  A cut goes after a blank line found within [size, 2 * size) of the chunk
  start (documents stay whole), else after the first line break past `size`.
  """
  size = size or CHUNK_CHARS
  chunks = []
  start = 0
  while len(text) - start > size:
    cut = text.find("\n\n", start + size, start + 2 * size)
    if cut >= 0:
      cut += 1
    else:
      cut = text.find("\n", start + size)
    if cut < 0:
      break
    chunks.append(text[start:cut + 1])
    start = cut + 1
  chunks.append(text[start:])
  return chunks


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
  """Packs a document's sentences into examples, ELECTRA-style, dropping nothing.

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


def serialize_examples(input_ids, input_mask, segment_ids):
  """Serialized tf.train.Example protos, written directly in the wire format.

  Parses back to the same features as tf.train.Example.SerializeToString
  would give (the tests check it), but ~20x faster, and with a fixed byte
  order (protobuf leaves map order unspecified). A record is: a head that
  depends only on the size of the input_ids payload, the input_ids varints,
  then the input_mask and segment_ids entries (one byte per 0/1 value).

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


@functools.lru_cache(maxsize=None)
def _example_head(ids_payload_size, length):
  """Example bytes before the input_ids payload (the rest is fixed-size)."""
  ids_prefix = _entry_prefix(FEATURES[0], ids_payload_size)
  body = (len(ids_prefix) + ids_payload_size +
          len(_entry_prefix(FEATURES[1], length)) +
          len(_entry_prefix(FEATURES[2], length)) + 2 * length)
  return b"\x0a" + _varint(body) + ids_prefix


class ExampleBuilder(object):
  """Turns chunks of raw text into serialized examples (runs in the workers).

  Args:
    tokenizer: a model.tokenization tokenizer.
    max_seq_length: tokens per example, [CLS]/[SEP] included.
    blanks_separate_docs: a blank line ends a document (else a file is one).
    heldout_fraction: probability that a document goes to the held-out set.
    seed: base of every random choice.
  """

  def __init__(self, tokenizer, max_seq_length, blanks_separate_docs=True,
               heldout_fraction=0.0, seed=0):
    self.tokenizer = tokenizer
    self.max_seq_length = max_seq_length
    self.blanks_separate_docs = blanks_separate_docs
    self.heldout_fraction = heldout_fraction
    self.seed = seed

  def _documents(self, text):
    """Sentences (or short lines) of the text, and where documents start."""
    units = []
    doc_starts = [0]
    for line in text.splitlines():
      line = line.strip()
      if not line:
        if self.blanks_separate_docs and len(units) > doc_starts[-1]:
          doc_starts.append(len(units))
      elif len(line) > LONG_LINE_CHARS:
        units.extend(split_sentences(line))
      else:
        units.append(line)
    if len(doc_starts) > 1 and doc_starts[-1] == len(units):
      doc_starts.pop()
    return units, doc_starts + [len(units)]

  def build(self, relpath, chunk_index, text):
    """Examples of one chunk of a file.

    Returns:
      dict with train / heldout (lists of serialized examples), their token
      counts (without [CLS]/[SEP]/padding), corpus_tokens and documents.
    """
    units, bounds = self._documents(text)
    ids, splits = self.tokenizer.encode_ragged(units)
    lengths = np.diff(splits).tolist()
    splits = splits.tolist()
    rng = random.Random(derive_seed(self.seed, relpath, chunk_index, "pack"))
    heldout_rng = random.Random(
        derive_seed(self.seed, relpath, chunk_index, "heldout"))
    spans = {"train": [], "heldout": []}
    documents = 0
    fraction = self.heldout_fraction
    for d in range(len(bounds) - 1):
      u0, u1 = bounds[d], bounds[d + 1]
      heldout = fraction > 0 and heldout_rng.random() < fraction
      doc = pack_document(lengths[u0:u1], splits[u0], rng,
                          self.max_seq_length)
      if doc:
        documents += 1
        spans["heldout" if heldout else "train"].extend(doc)
    result = {"corpus_tokens": int(splits[-1]), "documents": documents,
              "positions": 0}
    for split, split_spans in spans.items():
      examples, tokens, positions = self._serialize(ids, split_spans)
      result[split] = examples
      result[split + "_tokens"] = tokens
      result["positions"] += positions
    return result

  def _serialize(self, ids, spans):
    """Serialized examples of the spans, their text tokens and positions.

    Text tokens exclude [CLS], [SEP] and padding (counted from the laid-out
    arrays, independently of the packing); positions include [CLS]/[SEP].
    """
    if not spans:
      return [], 0, 0
    tok = self.tokenizer
    input_ids, input_mask, segment_ids = layout_examples(
        ids, spans, self.max_seq_length, tok.cls_id, tok.sep_id, tok.pad_id)
    positions = int(input_mask.sum(dtype=np.int64))
    num_special = 2 * len(spans) + int((segment_ids.max(axis=1) > 0).sum())
    return (serialize_examples(input_ids, input_mask, segment_ids),
            positions - num_special, positions)


class Progress(object):
  """A progress line on stderr: files done / total, MB, MB/s and ETA."""

  def __init__(self, total_files, total_bytes, stream=None):
    self.total_files = total_files
    self.total_bytes = max(1, total_bytes)
    self.stream = stream or sys.stderr
    self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
    self.start = time.time()
    self._last = 0.0

  def update(self, files_done, bytes_done, final=False):
    now = time.time()
    if not final and now - self._last < (0.5 if self.tty else 10.0):
      return
    self._last = now
    elapsed = max(now - self.start, 1e-6)
    rate = bytes_done / elapsed
    eta = (self.total_bytes - bytes_done) / rate if rate > 0 else 0.0
    line = "[build] files %d/%d  %.1f/%.1f MB  %.1f MB/s  ETA %d:%02d" % (
        files_done, self.total_files, bytes_done / 1e6, self.total_bytes / 1e6,
        rate / 1e6, int(eta) // 60, int(eta) % 60)
    if self.tty:
      self.stream.write("\r" + line + ("\n" if final else ""))
    else:
      self.stream.write(line + "\n")
    self.stream.flush()


# The builder of a worker process (set before forking, or by _init_worker).
_WORKER_BUILDER = None


def _init_worker(builder):
  global _WORKER_BUILDER
  _WORKER_BUILDER = builder


def _build_in_worker(job):
  return [_WORKER_BUILDER.build(*task) for task in job]


def _jobs(tasks, size):
  """Groups consecutive chunks into jobs of about `size` characters.

  A corpus of many small files then costs few round trips to the workers.
  """
  job, chars = [], 0
  for task in tasks:
    job.append(task)
    chars += len(task[2])
    if chars >= size:
      yield job
      job, chars = [], 0
  if job:
    yield job


def _tf_runtime_started():
  """Whether this process has started the TensorFlow runtime (thread pools)."""
  if "tensorflow" not in sys.modules:
    return False
  try:
    from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top
    return bool(context.context()._initialized)  # pylint: disable=protected-access
  except Exception:  # pylint: disable=broad-except
    return True


def _start_method():
  """'fork' (cheap: TensorFlow is imported already) unless it is unsafe.

  A forked child of a process whose TF runtime runs would inherit its locks
  but not its threads, and can hang; then the workers are spawned (each
  imports TensorFlow: a few seconds more).
  """
  if ("fork" in multiprocessing.get_all_start_methods() and
      not _tf_runtime_started()):
    return "fork"
  return "spawn"


def _ordered_results(builder, tasks, num_processes):
  """Yields (task, result) in task order, with up to num_processes workers.

  Each worker makes its own single-threaded tokenizer ops on first use; at
  most 2 * num_processes jobs are in flight, so memory stays bounded. A
  worker that dies (killed, out of memory) makes the build fail instead of
  hang.
  """
  if num_processes == 1:
    for task in tasks:
      yield task, builder.build(*task)
    return
  method = _start_method()
  _init_worker(builder)
  if method == "fork":
    # Forked workers share this process's memory until they write to it;
    # keep the garbage collector from touching (and so copying) it all.
    gc.freeze()
  try:
    with concurrent.futures.ProcessPoolExecutor(
        num_processes, mp_context=multiprocessing.get_context(method),
        initializer=_init_worker, initargs=(builder,)) as pool:
      pending = collections.deque()
      for job in _jobs(tasks, CHUNK_CHARS):
        pending.append((job, pool.submit(_build_in_worker, job)))
        if len(pending) >= 2 * num_processes:
          job, future = pending.popleft()
          yield from zip(job, future.result())
      while pending:
        job, future = pending.popleft()
        yield from zip(job, future.result())
  except concurrent.futures.process.BrokenProcessPool as e:
    raise RuntimeError("a worker process of the builder died (out of "
                       "memory?); try fewer --num-processes") from e
  finally:
    gc.unfreeze()


def _prepare_output_dir(output_dir, overwrite):
  """Refuses a non-empty output directory unless --overwrite."""
  if os.path.exists(output_dir) and not os.path.isdir(output_dir):
    raise UserError("--output-dir %s is a file, not a directory." % output_dir)
  existing = sorted(os.listdir(output_dir)) if os.path.isdir(output_dir) else []
  if existing and not overwrite:
    raise UserError(
        "output directory %s is not empty (%d entries, e.g. %s); pass "
        "--overwrite to replace its shards and manifest, or choose another "
        "--output-dir." % (output_dir, len(existing), existing[0]))
  os.makedirs(output_dir, exist_ok=True)
  return existing


def _remove_old_outputs(output_dir):
  for name in os.listdir(output_dir):
    if (name.startswith(TRAIN_PREFIX + "-") or
        name.startswith(HELDOUT_PREFIX + "-") or name == MANIFEST):
      os.remove(os.path.join(output_dir, name))


def _cpu_seconds():
  """CPU time of this process and its finished children (user + system)."""
  t = os.times()
  return t.user + t.system + t.children_user + t.children_system


def build_dataset(corpus_dir, output_dir, tokenizer, max_seq_length=128,
                  num_processes=1, num_shards=8, blanks_separate_docs=True,
                  heldout_fraction=0.0, seed=1234, overwrite=False,
                  settings=None, progress_stream=None, start_time=None,
                  start_cpu=None):
  """Builds the shards and manifest.json; returns the manifest (a dict).

  start_time, start_cpu: time.time() and _cpu_seconds() when the build began
  (default now), for the timings; main() passes them from before it built
  the tokenizer.
  """
  start = start_time or time.time()
  start_cpu = _cpu_seconds() if start_cpu is None else start_cpu
  if max_seq_length < 5:
    raise UserError("--max-seq-length must be at least 5, got %d." %
                    max_seq_length)
  if num_processes < 1:
    raise UserError("--num-processes must be at least 1, got %d." %
                    num_processes)
  if num_shards < 1:
    raise UserError("--num-shards must be at least 1, got %d." % num_shards)
  if not 0.0 <= heldout_fraction < 1.0:
    raise UserError("--heldout-fraction must be in [0, 1), got %g." %
                    heldout_fraction)
  files, skipped = corpus_lib.list_corpus_files(corpus_dir)
  num_listed_skipped = len(skipped)
  for relpath, reason in skipped:
    corpus_lib.warn_skipped(relpath, reason)
  created = not os.path.exists(output_dir)
  _prepare_output_dir(output_dir, overwrite)
  builder = ExampleBuilder(tokenizer, max_seq_length, blanks_separate_docs,
                           heldout_fraction, seed)
  progress = Progress(len(files), sum(f.size for f in files), progress_stream)
  per_file = collections.OrderedDict()  # relpath -> stats of a read file
  remaining_chunks = {}
  state = {"files_done": 0, "bytes_done": 0.0}

  def tasks():
    for f in files:
      text, reason = corpus_lib.read_text(f.path)
      if text is None:
        corpus_lib.warn_skipped(f.relpath, reason)
        skipped.append((f.relpath, reason))
        state["files_done"] += 1
        state["bytes_done"] += f.size
        continue
      chunks = chunk_text(text)
      per_file[f.relpath] = {"path": f.relpath, "bytes": f.size,
                             "documents": 0, "tokens": 0, "chunks": len(chunks)}
      remaining_chunks[f.relpath] = len(chunks)
      for i, chunk in enumerate(chunks):
        yield (f.relpath, i, chunk)

  sizes = {f.relpath: f.size for f in files}
  train = heldout = None
  totals = collections.Counter()
  setup_seconds = time.time() - start
  try:
    train = ShardWriter(output_dir, TRAIN_PREFIX, num_shards)
    if heldout_fraction > 0:
      heldout = ShardWriter(output_dir, HELDOUT_PREFIX, num_shards)
    for (relpath, _, chunk), result in _ordered_results(builder, tasks(),
                                                        num_processes):
      train.write(result["train"])
      if heldout is not None:
        heldout.write(result["heldout"])
      totals["train_examples"] += len(result["train"])
      totals["heldout_examples"] += len(result["heldout"])
      for key in ("train_tokens", "heldout_tokens", "corpus_tokens",
                  "documents", "positions"):
        totals[key] += result[key]
      stats = per_file[relpath]
      stats["documents"] += result["documents"]
      stats["tokens"] += result["corpus_tokens"]
      remaining_chunks[relpath] -= 1
      state["bytes_done"] += sizes[relpath] / stats["chunks"]
      if not remaining_chunks[relpath]:
        state["files_done"] += 1
      progress.update(state["files_done"], state["bytes_done"])
    progress.update(len(files), progress.total_bytes, final=True)
    if not totals["corpus_tokens"]:
      if per_file:
        raise UserError(
            "corpus directory %s has no usable text: its %d readable file(s) "
            "hold no tokens (--corpus-dir)." % (corpus_dir, len(per_file)))
      raise corpus_lib.no_text_error(corpus_dir, len(files), skipped)
    if not totals["train_examples"]:
      raise UserError(
          "every document went to the held-out set (--heldout-fraction %g); "
          "lower it or add text." % heldout_fraction)
    train.close()
    heldout_unit = "document" if heldout is not None else None
    if heldout is not None and not totals["heldout_examples"]:
      train, moved, moved_tokens = hold_out_tail(train, heldout,
                                                 heldout_fraction, output_dir)
      heldout_unit = "example"
      totals["train_examples"] -= moved
      totals["heldout_examples"] += moved
      totals["train_tokens"] -= moved_tokens
      totals["heldout_tokens"] += moved_tokens
      print("note: --heldout-fraction %g picked none of the %d documents; "
            "held out the last %d of %d examples instead (whole examples, "
            "not documents)." % (heldout_fraction, totals["documents"], moved,
                                 totals["train_examples"] + moved),
            file=progress_stream or sys.stderr, flush=True)
    if heldout is not None:
      heldout.close()
    _remove_old_outputs(output_dir)
    for w in (train, heldout):
      if w is not None:
        w.commit()
  except BaseException:
    for w in (train, heldout):
      if w is not None:
        w.discard()
    if created and os.path.isdir(output_dir) and not os.listdir(output_dir):
      os.rmdir(output_dir)
    raise

  elapsed = time.time() - start
  total_bytes = sum(s["bytes"] for s in per_file.values())
  written = totals["train_tokens"] + totals["heldout_tokens"]
  num_examples = totals["train_examples"] + totals["heldout_examples"]
  manifest = {
      "examples": {"train": totals["train_examples"],
                   "heldout": totals["heldout_examples"]},
      "tokens_written": {"train": totals["train_tokens"],
                         "heldout": totals["heldout_tokens"],
                         "total": written},
      "corpus_tokens": totals["corpus_tokens"],
      "coverage": written / totals["corpus_tokens"],
      # Share of the example positions holding tokens (not padding).
      "fill": totals["positions"] / (num_examples * max_seq_length),
      "documents": totals["documents"],
      "files": {
          "total": len(files) + num_listed_skipped,
          "read": len(per_file),
          "skipped": len(skipped),
          "read_files": list(per_file.values()),
          "skipped_files": [{"path": p, "reason": r} for p, r in skipped],
      },
      "bytes_read": total_bytes,
      "settings": dict(settings or {}, corpus_dir=corpus_dir,
                       output_dir=output_dir, max_seq_length=max_seq_length,
                       num_processes=num_processes, num_shards=num_shards,
                       blanks_separate_docs=blanks_separate_docs,
                       heldout_fraction=heldout_fraction, seed=seed,
                       vocab_size=tokenizer.vocab_size),
      "format": {"features": list(FEATURES), "dtype": "int64",
                 "layout": "[CLS] A [SEP] B [SEP] [PAD]...",
                 "pad_id": tokenizer.pad_id, "cls_id": tokenizer.cls_id,
                 "sep_id": tokenizer.sep_id},
      "elapsed_seconds": round(elapsed, 3),
      "cpu_seconds": round(_cpu_seconds() - start_cpu, 3),
      "setup_seconds": round(setup_seconds, 3),
      "mb_per_second": round(total_bytes / 1e6 / max(elapsed, 1e-9), 2),
      "shards": {"train": train.summary(),
                 "heldout": heldout.summary() if heldout else []},
      # "document": whole documents drawn with the fraction; "example": the
      # draw picked no document, so the last examples were held out.
      "heldout_unit": heldout_unit,
      "notes": [n for n in (train.note(), heldout and heldout.note()) if n],
  }
  write_json_atomic(os.path.join(output_dir, MANIFEST), manifest)
  return manifest


def parse_args(argv=None):
  parser = argparse.ArgumentParser(
      description="Writes ELECTRA pre-training TFRecords from raw text.")
  parser.add_argument("--corpus-dir", required=True,
                      help="Directory of UTF-8 text files (read recursively).")
  parser.add_argument("--vocab-file",
                      help="WordPiece vocab.txt (see build_vocab.py).")
  parser.add_argument("--sentencepiece-model",
                      help="Use this SentencePiece model instead of "
                      "--vocab-file (its own normalization applies).")
  parser.add_argument("--output-dir", required=True,
                      help="Where the shards and manifest.json go.")
  parser.add_argument("--max-seq-length", type=int, default=128,
                      help="Tokens per example (default 128).")
  parser.add_argument("--num-processes", type=int, default=1,
                      help="Worker processes (default 1); the output does "
                      "not depend on it.")
  parser.add_argument("--num-shards", type=int, default=8,
                      help="Training shards (and held-out shards) to write.")
  parser.add_argument("--blanks-separate-docs",
                      action=argparse.BooleanOptionalAction, default=True,
                      help="Whether a blank line ends a document (default "
                      "yes); with --no-blanks-separate-docs a file is one "
                      "document and examples run across paragraphs.")
  parser.add_argument("--do-lower-case", action=argparse.BooleanOptionalAction,
                      default=True, help="Lower-case the text (default yes).")
  parser.add_argument("--strip-accents", action=argparse.BooleanOptionalAction,
                      default=None, help="Strip accents (default: same as "
                      "--do-lower-case, like BERT).")
  parser.add_argument("--heldout-fraction", type=float, default=0.0,
                      help="Fraction of documents written to "
                      "heldout_data.tfrecord-* for evaluation (default 0).")
  parser.add_argument("--seed", type=int, default=1234,
                      help="Seed of the packing and held-out choices.")
  parser.add_argument("--overwrite", action="store_true",
                      help="Replace the shards and manifest of a non-empty "
                      "--output-dir.")
  return parser.parse_args(argv)


def main(argv=None):
  start, start_cpu = time.time(), _cpu_seconds()
  args = parse_args(argv)
  if not args.vocab_file and not args.sentencepiece_model:
    raise UserError("give --vocab-file (a WordPiece vocab.txt) or "
                    "--sentencepiece-model.")
  tokenizer = tokenization.create_tokenizer(
      vocab_file=args.vocab_file, sentencepiece_model=args.sentencepiece_model,
      do_lower_case=args.do_lower_case, strip_accents=args.strip_accents,
      single_thread=True)
  settings = {"vocab_file": args.vocab_file,
              "sentencepiece_model": args.sentencepiece_model,
              "do_lower_case": args.do_lower_case,
              "strip_accents": getattr(tokenizer, "strip_accents", None)}
  manifest = build_dataset(
      args.corpus_dir, args.output_dir, tokenizer,
      max_seq_length=args.max_seq_length, num_processes=args.num_processes,
      num_shards=args.num_shards,
      blanks_separate_docs=args.blanks_separate_docs,
      heldout_fraction=args.heldout_fraction, seed=args.seed,
      overwrite=args.overwrite, settings=settings, start_time=start,
      start_cpu=start_cpu)
  print("wrote %d training and %d held-out examples to %s: %d of %d corpus "
        "tokens (coverage %.2f%%), %d files read, %d skipped, %.1f s, "
        "%.1f MB/s" % (
            manifest["examples"]["train"], manifest["examples"]["heldout"],
            args.output_dir, manifest["tokens_written"]["total"],
            manifest["corpus_tokens"], 100 * manifest["coverage"],
            manifest["files"]["read"], manifest["files"]["skipped"],
            manifest["elapsed_seconds"], manifest["mb_per_second"]))
  for note in manifest["notes"]:
    print("note: " + note)
  return 0


if __name__ == "__main__":
  run_main(main)
