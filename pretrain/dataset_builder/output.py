"""The builder's output directory: its file names, its checks, manifest.json."""

import contextlib
import posixpath
import sys

from pretrain.dataset_builder.tfrecord_encoding import FEATURES
from util import io_utils
from util import run_lock
from util.errors import UserError
from util.io_utils import write_json_atomic

TRAIN_PREFIX = "pretrain_data.tfrecord"
HELDOUT_PREFIX = "heldout_data.tfrecord"
MANIFEST = "manifest.json"
# Every temporary file of a build starts so (ShardWriter's, the manifest's).
TMP_PREFIX = ".tmp-"


@contextlib.contextmanager
def locked_output_dir(output_dir, stream=None):
  """Creates `output_dir` and holds its lock inside the `with` block: a
  second builder on it exits 2 naming this one's pid. Temporary files left
  by a killed build are removed, with a note; a directory this build
  created is removed again when it fails with nothing in it."""
  created = not io_utils.exists(output_dir)
  io_utils.output_entries(output_dir, "--output-dir")  # Not a file.
  io_utils.check_writable(output_dir, "choose another --output-dir, or fix "
                          "its permissions")
  try:
    with run_lock.locked(output_dir, what="output directory",
                         fix="choose another --output-dir"):
      _remove_leftovers(output_dir, stream)
      yield
  except BaseException:
    if (created and io_utils.is_dir(output_dir) and
        not io_utils.listdir(output_dir)):
      io_utils.remove_tree(output_dir)
    raise


def _remove_leftovers(output_dir, stream):
  """Deletes the `.tmp-*` files of a build that was killed (under the
  lock, no live build owns them), saying so."""
  leftovers = [n for n in io_utils.listdir(output_dir)
               if n.startswith(TMP_PREFIX)]
  for name in leftovers:
    io_utils.remove(posixpath.join(output_dir, name))
  if leftovers:
    print("note: removed %d temporary file(s) (e.g. %s) that an earlier "
          "build of %s left when it was killed or failed; it wrote no "
          "shards." % (len(leftovers), leftovers[0], output_dir),
          file=stream or sys.stderr, flush=True)


def prepare_output_dir(output_dir, overwrite):
  """Refuses a non-empty output directory unless --overwrite; creates it.
  Call it holding the lock (`locked_output_dir`).

  Returns:
    the sorted names already in output_dir (empty when it was created),
    the lock file left out.
  """
  existing = [n for n in io_utils.output_entries(output_dir, "--output-dir")
              if n != run_lock.LOCK_NAME]
  if existing and not overwrite:
    raise UserError(
        "output directory %s is not empty (%d entries, e.g. %s); pass "
        "--overwrite to replace its shards and manifest, or choose another "
        "--output-dir." % (output_dir, len(existing), existing[0]))
  io_utils.check_writable(output_dir, "choose another --output-dir, or fix "
                          "its permissions")
  return existing


def remove_old_outputs(output_dir):
  """Deletes the shards and manifest of an earlier build (nothing else)."""
  for name in io_utils.listdir(output_dir):
    if (name.startswith(TRAIN_PREFIX + "-") or
        name.startswith(HELDOUT_PREFIX + "-") or name == MANIFEST):
      io_utils.remove(posixpath.join(output_dir, name))


def _files_summary(tally):
  """The manifest's "files": counts, and the files read and skipped."""
  return {
      "total": tally.num_files + tally.num_listed_skipped,
      "read": len(tally.per_file),
      "skipped": len(tally.skipped),
      "read_files": list(tally.per_file.values()),
      "skipped_files": [{"path": p, "reason": r} for p, r in tally.skipped],
  }


def _shard_bytes(output_dir, *writers):
  """{name: size in bytes} of every committed shard: pre-training compares
  them with the files it finds (pretrain/shards.py), so shards rebuilt,
  deleted or mixed in from another build are named before a run reads
  them."""
  return {name: io_utils.file_size(posixpath.join(output_dir, name))
          for w in writers if w for name in w.names}


def write_manifest(output_dir, tally, settings, tokenizer, timings, train,
                   heldout, heldout_unit):
  """Writes manifest.json (atomically) and returns it.

  Args:
    output_dir: the build's output directory.
    tally: the build's build.Tally (totals, files read and skipped).
    settings: every setting of the build (a dict; max_seq_length among them).
    tokenizer: the tokenizer (vocab_size and the special ids are recorded).
    timings: dict of elapsed_seconds, cpu_seconds, setup_seconds.
    train, heldout: the committed ShardWriters (heldout None without one).
    heldout_unit: "document", "example" or None (no held-out set).
  Returns:
    the manifest, a dict.
  """
  totals = tally.totals
  elapsed = timings["elapsed_seconds"]
  total_bytes = sum(s["bytes"] for s in tally.per_file.values())
  written = totals["train_tokens"] + totals["heldout_tokens"]
  num_examples = totals["train_examples"] + totals["heldout_examples"]
  manifest = {
      "examples": {"train": totals["train_examples"],
                   "heldout": totals["heldout_examples"]},
      "tokens_written": {"train": totals["train_tokens"],
                         "heldout": totals["heldout_tokens"],
                         "total": written},
      "corpus_tokens": totals["corpus_tokens"],
      # Share of the corpus tokens written as themselves: [UNK] does not
      # count (a vocabulary that maps most tokens to it covers little).
      "coverage": (written - totals["unk_tokens"]) / totals["corpus_tokens"],
      "unk_tokens": totals["unk_tokens"],
      # Share of the example positions holding tokens (not padding).
      "fill": totals["positions"] / (num_examples *
                                     settings["max_seq_length"]),
      "documents": totals["documents"],
      "files": _files_summary(tally),
      "bytes_read": total_bytes,
      "settings": dict(settings, vocab_size=tokenizer.vocab_size),
      "format": {"features": list(FEATURES), "dtype": "int64",
                 "layout": "[CLS] A [SEP] B [SEP] [PAD]...",
                 "pad_id": tokenizer.pad_id, "cls_id": tokenizer.cls_id,
                 "sep_id": tokenizer.sep_id},
      "elapsed_seconds": round(elapsed, 3),
      "cpu_seconds": round(timings["cpu_seconds"], 3),
      "setup_seconds": round(timings["setup_seconds"], 3),
      "mb_per_second": round(total_bytes / 1e6 / max(elapsed, 1e-9), 2),
      "shards": {"train": train.summary(),
                 "heldout": heldout.summary() if heldout else []},
      "shard_bytes": _shard_bytes(output_dir, train, heldout),
      # "document": whole documents drawn with the fraction; "example": the
      # draw picked no document, so the last examples were held out.
      "heldout_unit": heldout_unit,
      "notes": [n for n in (train.note(), heldout and heldout.note()) if n],
  }
  write_json_atomic(posixpath.join(output_dir, MANIFEST), manifest)
  return manifest
