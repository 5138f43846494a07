"""Pre-training TFRecord shards: finding them and checking what they hold.

Each check raises a UserError naming the shard (or the glob and the hparam
it came from) and the fix: no shard matches, a shard is empty, corrupt or
truncated, holds records that are not pre-training examples, or was built
for another max_seq_length. `check_shards` reads one record per shard
before a run starts; `find_bad_shard` reads them all, to name the culprit
of an error met while training.
"""

import fnmatch
import posixpath
import re

from absl import logging
from google.protobuf.message import DecodeError
import tensorflow as tf

from util import io_utils
from text import vocab_fingerprint
from text import vocab_layout
from util.errors import UserError

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")
MANIFEST = "manifest.json"
_REBUILD = ("rebuild the shards with build_pretraining_dataset.py into an "
            "empty --output-dir (or with --overwrite)")

# What TF's example parser says when a record has the wrong features.
_PARSE_ERROR = re.compile(r"ParseExample|ParseSingleExample|serialized Example")


def feature_spec(max_seq_length):
  """The parse spec of a pre-training example: each feature int64
  [max_seq_length]."""
  return {name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
          for name in FEATURE_NAMES}


def is_parse_error(error):
  """Whether a tf.errors.OpError is the example parser's (a bad record)."""
  return _PARSE_ERROR.search(error.message) is not None


def find_shards(file_pattern, hparam="pretrain_tfrecords"):
  """Sorted list of the files matching `file_pattern`; an error if none.

  `hparam` is the config key the pattern came from, named in the error.
  """
  try:
    files = sorted(tf.io.gfile.glob(file_pattern))
  except tf.errors.OpError as e:
    raise UserError("cannot list TFRecord shards %r (hparam %r): %s" % (
        file_pattern, hparam, _short_message(e)))
  if not files:
    raise UserError("no TFRecord shards match %r (hparam %r); %s" % (
        file_pattern, hparam, _NO_SHARDS_FIX[hparam]))
  return files


_NO_SHARDS_FIX = {
    "pretrain_tfrecords": "build them with build_pretraining_dataset.py, or "
                          "point hparam 'pretrain_tfrecords' at them.",
    "eval_tfrecords": "build held-out shards with build_pretraining_dataset.py "
                      "--heldout-fraction 0.05, point hparam 'eval_tfrecords' "
                      "at existing shards (e.g. the training ones), or set "
                      "hparam 'do_eval' to false.",
}


def check_shards(files, max_seq_length, hparam="pretrain_tfrecords"):
  """Reads the first record of each shard and checks its features.

  Cheap (one record per file); a shard corrupted or truncated further in is
  found during iteration by `InputFn.data_errors`.

  Args:
    files: shard paths, sorted.
    max_seq_length: the length every feature must have.

  Returns:
    (files, file_ids): the non-empty shards and their indices in `files`
    (empty shards are skipped with a warning; they hold no data).
  """
  kept, ids = [], []
  for index, path in enumerate(files):
    try:
      first = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
    except tf.errors.OpError as e:
      raise UserError("shard %s is corrupt, truncated or not a TFRecord file "
                      "(%s); rebuild it with build_pretraining_dataset.py." %
                      (path, _short_message(e)))
    if not first:
      logging.warning("shard %s holds no examples; skipped.", path)
      continue
    _check_example(path, first[0], max_seq_length)
    kept.append(path)
    ids.append(index)
  if not kept:
    raise UserError("all %d shards (%s ...) of hparam %r are empty; %s" % (
        len(files), files[0], hparam, _NO_SHARDS_FIX[hparam]))
  return kept, ids


def check_vocabulary(files, vocab_file, hparam="pretrain_tfrecords"):
  """Refuses shards whose manifest.json (beside them, when the builder
  wrote one) records another vocabulary than `vocab_file` (a vocab.txt or
  a SentencePiece model): by fingerprint, or for older manifests by size.
  Their ids would mean other tokens."""
  manifest_path = posixpath.join(posixpath.dirname(files[0]), MANIFEST)
  manifest = read_manifest(manifest_path)
  if manifest is None:
    return
  settings = manifest["settings"]
  theirs = settings.get("sentencepiece_model") or settings.get("vocab_file")
  recorded = settings.get("vocab_fingerprint")
  if recorded is not None:
    ours = vocab_fingerprint.fingerprint(vocab_file)
    if ours == recorded:
      return
    what = "another vocabulary (fingerprint %s; %s has %s)" % (
        recorded, vocab_file, ours)
  else:
    size = settings.get("vocab_size")
    if size is None:
      return
    ours = vocab_layout.vocabulary_size(vocab_file)
    if ours == size:
      return
    what = "a vocabulary of %d tokens (%s has %d)" % (size, vocab_file, ours)
  raise UserError(
      "the shards of hparam %r (%s) were built with %s%s: their token ids "
      "would mean other tokens. Rebuild them with build_pretraining_dataset.py "
      "%s %s, or train with the vocabulary they were built with "
      "(hparam 'vocab_file')." % (
          hparam, manifest_path, what,
          " from %s" % theirs if theirs else "",
          "--sentencepiece-model" if vocab_layout.is_sentencepiece(vocab_file)
          else "--vocab-file", vocab_file))


def recorded_casing(file_pattern):
  """(manifest path, {"do_lower_case", "strip_accents"}) that the manifest
  beside the shards of `file_pattern` records for a WordPiece build; None
  when nothing matches, there is no manifest, or the shards are of a
  SentencePiece model (its own normalisation applies)."""
  files = sorted(io_utils.glob(file_pattern))
  if not files:
    return None
  path = posixpath.join(posixpath.dirname(files[0]), MANIFEST)
  manifest = read_manifest(path)
  settings = (manifest or {}).get("settings", {})
  lower = settings.get("do_lower_case")
  if settings.get("sentencepiece_model") or not isinstance(lower, bool):
    return None
  strip = settings.get("strip_accents")
  return path, dict(do_lower_case=lower,
                    strip_accents=lower if strip is None else bool(strip))


def read_manifest(path):
  """The builder's manifest.json at `path` as a dict, or None when there
  is none; a UserError when it is truncated or not a manifest."""
  if not io_utils.is_file(path):
    return None
  try:
    manifest = io_utils.read_json(path)
  except (ValueError, OSError) as e:
    raise UserError("%s is truncated or not JSON (%s): %s, or delete it "
                    "to train on the shards unchecked." % (path, e, _REBUILD))
  if not _is_manifest(manifest):
    raise UserError("%s is not a manifest of build_pretraining_dataset.py "
                    "(it lacks the 'settings' and 'shards' it writes): %s, or "
                    "delete it to train on the shards unchecked." % (
                        path, _REBUILD))
  return manifest


def _is_manifest(manifest):
  """Whether a JSON document has the manifest's shape where it is read."""
  if not isinstance(manifest, dict):
    return False
  shards = manifest.get("shards")
  return (isinstance(manifest.get("settings"), dict) and
          isinstance(shards, dict) and
          isinstance(manifest.get("shard_bytes", {}), dict) and
          all(isinstance(entries, list) and
              all(isinstance(e, dict) and isinstance(e.get("file"), str)
                  for e in entries) for entries in shards.values()))


def check_manifest(files, pattern, hparam="pretrain_tfrecords"):
  """Compares the shards matching `pattern` with the manifest.json beside
  them: a shard it does not list (from another build), one it lists that
  is gone, or one whose size differs from the recorded one (rebuilt or
  changed) is a UserError naming it. No manifest: a warning (nothing to
  compare with)."""
  directory = posixpath.dirname(files[0])
  path = posixpath.join(directory, MANIFEST)
  manifest = read_manifest(path)
  if manifest is None:
    logging.warning("no %s beside the shards of hparam %r (%s): their "
                    "vocabulary and completeness cannot be checked.",
                    MANIFEST, hparam, pattern)
    return
  listed = {entry["file"] for entries in manifest["shards"].values()
            for entry in entries}
  present = {posixpath.basename(f): f for f in files
             if posixpath.dirname(f) == directory}
  foreign = sorted(set(present) - listed)
  if foreign:
    raise UserError(
        "shard %s is not listed in %s: it comes from another build (%d such "
        "file(s); shards of two builds are mixed in one folder). Remove the "
        "files the manifest does not list, or %s." % (
            present[foreign[0]], path, len(foreign), _REBUILD))
  missing = sorted(name for name in listed if name not in present and
                   fnmatch.fnmatchcase(name, posixpath.basename(pattern)))
  if missing:
    raise UserError(
        "shard %s, listed in %s, is missing (%d of the %d listed shards "
        "matching hparam %r are gone): %s." % (
            posixpath.join(directory, missing[0]), path, len(missing),
            len(missing) + len(present), hparam, _REBUILD))
  sizes = manifest.get("shard_bytes", {})
  for name in sorted(present):
    size = io_utils.file_size(present[name])
    if name in sizes and sizes[name] != size:
      raise UserError(
          "shard %s has %d bytes but %s records %d: it was rewritten or "
          "changed after that build: %s." % (present[name], size, path,
                                             sizes[name], _REBUILD))


def _check_example(path, serialized, max_seq_length):
  try:
    features = tf.train.Example.FromString(serialized).features.feature
  except DecodeError:
    raise UserError("shard %s does not hold tf.train.Example records; it is "
                    "not a pre-training shard." % path)
  for name in FEATURE_NAMES:
    if name not in features:
      raise UserError("shard %s has no feature %r (it has %s); it is not a "
                      "pre-training shard." % (path, name,
                                               ", ".join(sorted(features))))
    feature = features[name]
    if feature.WhichOneof("kind") != "int64_list":
      raise UserError("shard %s: feature %r is not an int64 list." %
                      (path, name))
    length = len(feature.int64_list.value)
    if length != max_seq_length:
      raise UserError(
          "shard %s: feature %r has %d values per example but "
          "max_seq_length is %d; set hparam 'max_seq_length' to %d or "
          "rebuild the shards with --max-seq-length %d." %
          (path, name, length, max_seq_length, length, max_seq_length))


def _short_message(error):
  """TF's error message without the function-node and op decorations."""
  message = re.sub(r"\{\{[^}]*\}\}\s*", "", error.message)
  message = re.sub(r"\s*\[Op:[^\]]*\].*$", "", message, flags=re.S)
  return message.strip()


def find_bad_shard(files, max_seq_length):
  """Reads every record of every shard; a UserError naming the first bad one.

  Returns None when all shards read and parse.
  """
  spec = feature_spec(max_seq_length)
  for path in files:
    records = tf.data.TFRecordDataset(path).map(
        lambda record: tf.io.parse_single_example(record, spec),
        num_parallel_calls=tf.data.AUTOTUNE)
    try:
      records.reduce(0, lambda count, _: count + 1)
    except tf.errors.DataLossError as e:
      return UserError("shard %s is corrupt or truncated (%s); rebuild it "
                       "with build_pretraining_dataset.py." %
                       (path, _short_message(e)))
    except tf.errors.InvalidArgumentError as e:
      return UserError("shard %s has a record that is not a pre-training "
                       "example with features %s of length max_seq_length "
                       "%d (%s)." % (path, ", ".join(FEATURE_NAMES),
                                     max_seq_length, _short_message(e)))
  return None
