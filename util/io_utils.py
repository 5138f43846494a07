"""Atomic file writes and small I/O helpers shared by every stage."""

import json
import os
import tempfile

from util.errors import UserError


def write_bytes_atomic(path, data):
  """Writes `data` to `path` so readers see the old file or the new one, never half.

  The bytes go to a temporary file in the same directory, are flushed to disk
  and renamed over `path` (rename is atomic within one filesystem).
  """
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
  try:
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files.
    with os.fdopen(fd, "wb") as f:
      f.write(data)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise


def check_writable(directory):
  """Creates `directory` if needed; a UserError if files cannot be made there."""
  try:
    os.makedirs(directory, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".tmp-write-check-", dir=directory)
    os.close(fd)
    os.remove(probe)
  except OSError as e:
    raise UserError("cannot write to %s (%s); choose another --data-dir or "
                    "--model-name, or fix its permissions." % (
                        directory, e.strerror or e))


def write_text_atomic(path, text):
  write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path, obj):
  write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")
