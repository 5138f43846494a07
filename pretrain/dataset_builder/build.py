"""build_dataset: a corpus directory -> training (+ held-out) shards, manifest.

The files are read in corpus order and cut into chunks (text.py); the chunks'
examples are built, possibly by worker processes (parallel.py), and dealt
round-robin to the shards in corpus order (pretrain/tfrecord_shards.py), so
the output is the same whatever the number of processes. Shards are written
under temporary names and renamed only when the whole build succeeded.
"""

import collections
import os
import sys
import time

from pretrain.dataset_builder import output
from pretrain.dataset_builder import parallel
from pretrain.dataset_builder import text as text_lib
from pretrain.dataset_builder.examples import ExampleBuilder
from pretrain.dataset_builder.progress import Progress
from pretrain.tfrecord_shards import ShardWriter
from pretrain.tfrecord_shards import hold_out_tail
from text import casing
from util import corpus as corpus_lib
from util.errors import UserError

_RESULT_COUNTS = ("train_tokens", "heldout_tokens", "corpus_tokens",
                  "documents", "positions", "unk_tokens")
# The share of the written tokens that may be [UNK] (--max-unk-fraction).
MAX_UNK_FRACTION = 0.5


def cpu_seconds():
  """CPU time of this process and its finished children (user + system)."""
  t = os.times()
  return t.user + t.system + t.children_user + t.children_system


def _check_settings(max_seq_length, num_processes, num_shards,
                    heldout_fraction):
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


class Tally(object):
  """What the build has read and written so far, and the progress line.

  Args:
    files: the corpus files (util.corpus entries with path, relpath, size).
    skipped: (relpath, reason) of the files listing skipped already; files
      found unreadable later are appended.
    progress_stream: where the progress line goes (default stderr).

  Attributes:
    totals: Counter of train_examples, heldout_examples and _RESULT_COUNTS.
    per_file: relpath -> stats (path, bytes, documents, tokens, chunks) of
      each file read, in corpus order.
  """

  # The refusal of a vocabulary that leaves most tokens [UNK]
  # (build_dataset sets both).
  max_unk_fraction = MAX_UNK_FRACTION
  vocabulary = None
  unknown_hint = None  # text/casing.py's cause, for a WordPiece vocabulary.

  def __init__(self, files, skipped, progress_stream=None):
    self.num_files = len(files)
    self.num_listed_skipped = len(skipped)
    self.skipped = skipped
    self.totals = collections.Counter()
    self.per_file = collections.OrderedDict()
    self._files = files
    self._sizes = {f.relpath: f.size for f in files}
    self._remaining_chunks = {}
    self._files_done = 0
    self._bytes_done = 0.0
    self._progress = Progress(len(files), sum(f.size for f in files),
                              progress_stream)

  def tasks(self):
    """Yields (relpath, chunk_index, chunk) of every readable file, in order."""
    for f in self._files:
      text, reason = corpus_lib.read_text(f.path)
      if text is None:
        corpus_lib.warn_skipped(f.relpath, reason)
        self.skipped.append((f.relpath, reason))
        self._files_done += 1
        self._bytes_done += f.size
        continue
      chunks = text_lib.chunk_text(text)
      self.per_file[f.relpath] = {"path": f.relpath, "bytes": f.size,
                                  "documents": 0, "tokens": 0,
                                  "chunks": len(chunks)}
      self._remaining_chunks[f.relpath] = len(chunks)
      for i, chunk in enumerate(chunks):
        yield (f.relpath, i, chunk)

  def add(self, relpath, result):
    """Counts one chunk's result (ExampleBuilder.build) of file relpath."""
    self.totals["train_examples"] += len(result["train"])
    self.totals["heldout_examples"] += len(result["heldout"])
    for key in _RESULT_COUNTS:
      self.totals[key] += result[key]
    stats = self.per_file[relpath]
    stats["documents"] += result["documents"]
    stats["tokens"] += result["corpus_tokens"]
    self._remaining_chunks[relpath] -= 1
    self._bytes_done += self._sizes[relpath] / stats["chunks"]
    if not self._remaining_chunks[relpath]:
      self._files_done += 1
    self._progress.update(self._files_done, self._bytes_done)

  def finish(self):
    self._progress.update(self.num_files, self._progress.total_bytes,
                          final=True)

  def move_to_heldout(self, examples, tokens):
    self.totals["train_examples"] -= examples
    self.totals["heldout_examples"] += examples
    self.totals["train_tokens"] -= tokens
    self.totals["heldout_tokens"] += tokens


def _check_written(tally, corpus_dir, heldout_fraction):
  """UserError when the corpus gave no tokens or no training example."""
  if not tally.totals["corpus_tokens"]:
    if tally.per_file:
      raise UserError(
          "corpus directory %s has no usable text: its %d readable file(s) "
          "hold no tokens (--corpus-dir)." % (corpus_dir, len(tally.per_file)))
    raise corpus_lib.no_text_error(corpus_dir, tally.num_files, tally.skipped)
  if not tally.totals["train_examples"]:
    raise UserError(
        "every document went to the held-out set (--heldout-fraction %g); "
        "lower it or add text." % heldout_fraction)
  _check_unknown_tokens(tally)


def _check_unknown_tokens(tally):
  """UserError when more than `tally.max_unk_fraction` of the tokens
  written are [UNK]: the vocabulary does not cover this corpus (a model
  would learn to predict [UNK])."""
  written = tally.totals["train_tokens"] + tally.totals["heldout_tokens"]
  unk = tally.totals["unk_tokens"]
  if written and unk / written > tally.max_unk_fraction:
    hint = tally.unknown_hint or (
        "learn a vocabulary from it with build_vocab.py")
    raise UserError(
        "%.1f%% of the %d tokens written are [UNK] (more than "
        "--max-unk-fraction %g): the vocabulary %s does not cover this "
        "corpus; %s. Or raise --max-unk-fraction to build anyway; nothing "
        "was written." % (100.0 * unk / written, written,
                          tally.max_unk_fraction,
                          tally.vocabulary or "given", hint))


def _hold_out_examples(train, heldout, tally, heldout_fraction, output_dir,
                       stream):
  """The example-level hold-out when the document draw picked none.

  Returns:
    (the training ShardWriter to commit, the manifest's heldout_unit).
  """
  if heldout is None:
    return train, None
  if tally.totals["heldout_examples"]:
    return train, "document"
  train, moved, moved_tokens = hold_out_tail(train, heldout, heldout_fraction,
                                             output_dir)
  tally.move_to_heldout(moved, moved_tokens)
  print("note: --heldout-fraction %g picked none of the %d documents; "
        "held out the last %d of %d examples instead (whole examples, "
        "not documents)." % (heldout_fraction, tally.totals["documents"], moved,
                             tally.totals["train_examples"] + moved),
        file=stream or sys.stderr, flush=True)
  return train, "example"


def _write_shards(builder, tally, corpus_dir, output_dir, num_shards,
                  num_processes, heldout_fraction, progress_stream):
  """Writes and commits the train (and held-out) shards of all documents.

  On any error the shards written so far are discarded (an output
  directory the build created and left empty is removed by
  `output.locked_output_dir`). Returns (train writer, held-out writer or
  None, held-out unit).
  """
  train = heldout = None
  try:
    train = ShardWriter(output_dir, output.TRAIN_PREFIX, num_shards)
    if heldout_fraction > 0:
      heldout = ShardWriter(output_dir, output.HELDOUT_PREFIX, num_shards)
    for (relpath, _, _), result in parallel.ordered_results(
        builder, tally.tasks(), num_processes):
      train.write(result["train"])
      if heldout is not None:
        heldout.write(result["heldout"])
      tally.add(relpath, result)
    tally.finish()
    _check_written(tally, corpus_dir, heldout_fraction)
    train.close()
    train, heldout_unit = _hold_out_examples(
        train, heldout, tally, heldout_fraction, output_dir, progress_stream)
    if heldout is not None:
      heldout.close()
    output.remove_old_outputs(output_dir)
    for w in (train, heldout):
      if w is not None:
        w.commit()
  except BaseException:
    for w in (train, heldout):
      if w is not None:
        w.discard()
    raise
  return train, heldout, heldout_unit


def build_dataset(corpus_dir, output_dir, tokenizer, max_seq_length=128,
                  num_processes=1, num_shards=8, blanks_separate_docs=True,
                  heldout_fraction=0.0, seed=1234, overwrite=False,
                  settings=None, progress_stream=None, start_time=None,
                  start_cpu=None, max_unk_fraction=MAX_UNK_FRACTION):
  """Builds the shards and manifest.json; returns the manifest (a dict).

  Args:
    corpus_dir: directory of text files (read recursively).
    output_dir: where the shards and manifest go (empty, missing, or
      `overwrite`).
    tokenizer: a text.tokenization tokenizer.
    max_seq_length, num_processes, num_shards, blanks_separate_docs,
    heldout_fraction, seed, overwrite: as the command-line flags.
    settings: more settings to record in the manifest (e.g. the vocab file).
    progress_stream: where the progress line and notes go (default stderr).
    start_time, start_cpu: time.time() and cpu_seconds() when the build began
      (default now), for the timings; the CLI passes them from before it
      built the tokenizer.
    max_unk_fraction: the build is refused (nothing written) when a larger
      share of the tokens written are [UNK].
  """
  start = start_time or time.time()
  start_cpu = cpu_seconds() if start_cpu is None else start_cpu
  _check_settings(max_seq_length, num_processes, num_shards, heldout_fraction)
  files, skipped = corpus_lib.list_corpus_files(corpus_dir)
  for relpath, reason in skipped:
    corpus_lib.warn_skipped(relpath, reason)
  with output.locked_output_dir(output_dir, progress_stream):
    output.prepare_output_dir(output_dir, overwrite)
    return _build_locked(
        corpus_dir, output_dir, tokenizer, files, skipped, start, start_cpu,
        dict(max_seq_length=max_seq_length, num_processes=num_processes,
             num_shards=num_shards, blanks_separate_docs=blanks_separate_docs,
             heldout_fraction=heldout_fraction, seed=seed),
        settings, progress_stream, max_unk_fraction)


def _build_locked(corpus_dir, output_dir, tokenizer, files, skipped, start,
                  start_cpu, flags, settings, progress_stream,
                  max_unk_fraction):
  """build_dataset's work once it holds the output directory; `flags`: the
  command-line settings (max_seq_length, ..., seed) by name."""
  max_seq_length, num_processes, num_shards = (
      flags["max_seq_length"], flags["num_processes"], flags["num_shards"])
  blanks_separate_docs, heldout_fraction, seed = (
      flags["blanks_separate_docs"], flags["heldout_fraction"], flags["seed"])
  builder = ExampleBuilder(tokenizer, max_seq_length, blanks_separate_docs,
                           heldout_fraction, seed)
  tally = Tally(files, skipped, progress_stream)
  tally.max_unk_fraction = max_unk_fraction
  tally.vocabulary = (settings or {}).get("sentencepiece_model") or (
      settings or {}).get("vocab_file")
  if tokenizer.kind == "wordpiece":
    tally.unknown_hint = casing.unknown_hint(
        tokenizer.vocab, tokenizer.do_lower_case,
        "build with --no-do-lower-case", "build with --do-lower-case")
  setup_seconds = time.time() - start
  train, heldout, heldout_unit = _write_shards(
      builder, tally, corpus_dir, output_dir, num_shards, num_processes,
      heldout_fraction, progress_stream)

  timings = {"elapsed_seconds": time.time() - start,
             "cpu_seconds": cpu_seconds() - start_cpu,
             "setup_seconds": setup_seconds}
  all_settings = dict(settings or {}, corpus_dir=corpus_dir,
                      output_dir=output_dir, **flags)
  return output.write_manifest(output_dir, tally, all_settings, tokenizer,
                               timings, train, heldout, heldout_unit)
