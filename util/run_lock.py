"""A lock file that says which process works in a directory.

`run_pretraining.py` and `run_finetuning.py` hold `<model_dir>/.lock` while
they run, so a second run on the same model directory stops at once
instead of writing beside the first; the study runner claims its runs the
same way. The file holds "<pid> <host>". A lock whose process is dead on
this host is stale and taken over; one held on another host is left alone
(its process cannot be checked from here). Only local paths are locked:
object stores (gs://, ram://) have no exclusive create.
"""

import contextlib
import os
import socket
import time

from util.errors import UserError

LOCK_NAME = ".lock"


def _is_local(path):
  return "://" not in path


def holder(path):
  """(pid, host) written in lock file `path`, or None while it is being
  written (empty) or when it is gone."""
  try:
    with open(path) as f:
      fields = f.read().split()
  except OSError:
    return None
  if not fields or not fields[0].isdigit():
    return None
  return int(fields[0]), fields[1] if len(fields) > 1 else socket.gethostname()


def _alive(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    pass  # Alive, under another user.
  return True


def is_held_by(pid):
  """Whether process `pid` of this host is alive."""
  return _alive(pid)


# An empty or unreadable lock younger than this is being written; older,
# it was left by a writer that failed (a full disk) and is stale.
_WRITING_SECONDS = 10.0


def is_held(path):
  """Whether a live process (or one on another host) holds `path`."""
  found = holder(path)
  if found is None:
    try:
      return time.time() - os.path.getmtime(path) < _WRITING_SECONDS
    except OSError:
      return False  # Gone.
  pid, host = found
  return host != socket.gethostname() or _alive(pid)


def _stale_reason(path):
  """Why the lock at `path`, not held, is stale (for the take-over line)."""
  found = holder(path)
  if found is None:
    return "it names no process (empty or unreadable)"
  return "its process %d on this host is gone" % found[0]


def try_acquire(path, log=None):
  """Creates lock file `path` for this process; False when a live process
  holds it. A stale lock (its process dead on this host, or empty or
  garbage and not being written) is taken over, with one line to `log`. A
  lock that cannot be written (a full disk) is removed again: UserError."""
  for _ in range(2):
    try:
      fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
      if is_held(path):
        return False
      reason = _stale_reason(path)
      try:
        os.remove(path)
      except FileNotFoundError:
        continue
      if log:
        log("lock file %s: %s; taken over" % (path, reason))
      continue
    try:
      with os.fdopen(fd, "w") as f:
        f.write("%d %s" % (os.getpid(), socket.gethostname()))
    except OSError as e:
      os.remove(path)  # Never leave an empty lock behind.
      raise UserError("cannot write lock file %s (%s); free space or fix "
                      "the directory, then re-run." % (path, e)) from None
    return True
  return False


def release(path):
  """Removes lock file `path` if this process holds it."""
  found = holder(path)
  if found and found == (os.getpid(), socket.gethostname()):
    try:
      os.remove(path)
    except FileNotFoundError:
      pass


@contextlib.contextmanager
def locked(directory, enabled=True, what="model directory",
           fix="use another --model-name", name=LOCK_NAME):
  """Holds `<directory>/<name>` (".lock") inside the `with` block; a
  UserError naming the holder's pid and host, and `fix`, when another live
  process holds it. Nothing is locked when not `enabled` (a worker that is
  not the chief) or for a non-local directory."""
  if not enabled or not _is_local(directory):
    yield None
    return
  os.makedirs(directory, exist_ok=True)  # Callers checked it is writable.
  path = os.path.join(directory, name)
  if not try_acquire(path, log=lambda line: print(line, flush=True)):
    pid, host = holder(path) or (None, None)
    raise UserError(
        "%s %s is in use by another run (pid %s on host %s; lock file %s). "
        "Wait for it to finish, or %s; if that process is gone, remove the "
        "lock file." % (what, directory, pid, host, path, fix))
  try:
    yield path
  finally:
    release(path)
