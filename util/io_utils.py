"""File I/O through `tf.io.gfile`, shared by every stage.

Every path may be local or on any filesystem TensorFlow knows (`gs://`,
`ram://`, ...), so that data, vocabularies, configs, checkpoints and results
can live in a Cloud Storage bucket for a Cloud TPU run. TensorFlow is
imported on first use, so that importing this module (configure.py does)
stays cheap and leaves TensorFlow's start-up to the entry points.
"""

import json
import posixpath
import uuid

from util.errors import UserError


def _tf():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf


def write_bytes_atomic(path, data):
  """Writes `data` to `path`: readers see the old file or the new, never half.

  The bytes go to a temporary name in the same directory (created if
  missing), which is then renamed over `path` with
  `tf.io.gfile.rename(overwrite=True)`. On a local disk (and `ram://`) the
  rename is atomic. On object stores without atomic rename, such as GCS,
  gfile's rename copies the temporary object to `path` and deletes it: an
  object only ever appears whole, so readers still never see half a file,
  but for a moment both names exist, and two concurrent writers of one
  path leave whichever copy finished last. The data is not fsync'ed.
  """
  tf = _tf()
  directory = posixpath.dirname(path)
  if directory:
    tf.io.gfile.makedirs(directory)
  tmp = posixpath.join(directory, ".tmp-%s-%s" % (posixpath.basename(path),
                                                  uuid.uuid4().hex))
  try:
    with tf.io.gfile.GFile(tmp, "wb") as f:
      f.write(data)
    tf.io.gfile.rename(tmp, path, overwrite=True)
  except BaseException:
    if tf.io.gfile.exists(tmp):
      tf.io.gfile.remove(tmp)
    raise


def check_writable(directory, fix="choose another --data-dir or "
                   "--model-name, or fix its permissions", depth=0):
  """Creates `directory` if needed; a UserError naming it and `fix` if files
  cannot be made there, or in any directory already under it down to
  `depth` levels (a resumed run writes into its `checkpoints/`, `results/`,
  ...: a read-only one is found before training, not at the first save)."""
  tf = _tf()
  pending = [(directory, 0)]
  while pending:
    folder, level = pending.pop(0)
    try:
      if level == 0:
        tf.io.gfile.makedirs(folder)
      _probe_write(tf, folder)
    except tf.errors.OpError as e:
      raise UserError("cannot write to %s (%s); %s." % (folder, e.message,
                                                        fix))
    if level < depth:
      pending.extend((posixpath.join(folder, name.rstrip("/")), level + 1)
                     for name in sorted(tf.io.gfile.listdir(folder))
                     if tf.io.gfile.isdir(posixpath.join(folder, name)))


def _probe_write(tf, directory):
  """Writes and removes an empty file in `directory`."""
  probe = posixpath.join(directory, ".tmp-write-check-" + uuid.uuid4().hex)
  with tf.io.gfile.GFile(probe, "wb") as f:
    f.write(b"")
  tf.io.gfile.remove(probe)


def output_entries(directory, flag):
  """The names already in output directory `directory` ([] when it does not
  exist yet); a UserError naming command-line `flag` when it is a file."""
  if exists(directory) and not is_dir(directory):
    raise UserError("%s %s is a file, not a directory." % (flag, directory))
  return listdir(directory) if is_dir(directory) else []


def exists(path):
  """Whether a file or directory is at `path` (any gfile path)."""
  return _tf().io.gfile.exists(path)


def is_dir(path):
  """Whether `path` (any gfile path) is a directory."""
  return _tf().io.gfile.isdir(path)


def is_file(path):
  """Whether a file (not a directory) is at `path` (any gfile path)."""
  return exists(path) and not is_dir(path)


def listdir(path):
  """The names in directory `path` (any gfile path), sorted."""
  return sorted(name.rstrip("/") for name in _tf().io.gfile.listdir(path))


def make_dirs(path):
  """Creates directory `path` and its parents (any gfile path), if missing."""
  _tf().io.gfile.makedirs(path)


def remove(path):
  """Deletes the file at `path` (any gfile path)."""
  _tf().io.gfile.remove(path)


def rename(source, target):
  """Moves `source` to `target`, replacing it (any gfile paths; on GCS a
  copy and a delete, see `write_bytes_atomic`)."""
  _tf().io.gfile.rename(source, target, overwrite=True)


def remove_tree(path):
  """Deletes the directory `path` and everything in it, if it exists."""
  if is_dir(path):
    _tf().io.gfile.rmtree(path)


def iter_lines(path, block_size=1 << 20):
  """Yields the lines of the file at `path` as bytes, each with its b"\n"
  (the last one without, if the file does not end in one). Read in blocks,
  so a large file is never held whole."""
  with _tf().io.gfile.GFile(path, "rb") as f:
    rest = b""
    while True:
      block = f.read(block_size)
      if not block:
        break
      lines = (rest + block).split(b"\n")
      rest = lines.pop()
      for line in lines:
        yield line + b"\n"
  if rest:
    yield rest


def file_size(path):
  """The size in bytes of the file at `path` (any gfile path)."""
  return _tf().io.gfile.stat(path).length


def glob(pattern):
  """The paths matching `pattern` (any gfile path), sorted."""
  return sorted(_tf().io.gfile.glob(pattern))


def read_bytes(path):
  """The bytes of the file at `path` (any gfile path); FileNotFoundError
  when there is none, OSError when it cannot be read."""
  tf = _tf()
  try:
    with tf.io.gfile.GFile(path, "rb") as f:
      return f.read()
  except tf.errors.NotFoundError:
    raise FileNotFoundError(path) from None
  except tf.errors.OpError as e:
    raise OSError(e.message) from None


def read_text(path, encoding="utf-8"):
  """The text of the file at `path` (any gfile path), decoded."""
  return read_bytes(path).decode(encoding)


def read_json(path):
  """The JSON document of the file at `path` (any gfile path)."""
  return json.loads(read_text(path))


def write_text_atomic(path, text):
  write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path, obj):
  write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")
