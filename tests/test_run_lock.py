"""Locks that heal (util/run_lock.py): an empty, garbage or stale lock is
taken over with one line; a lock being written or held by a live process
is still refused; a lock that cannot be written is not left behind."""

import os
import time

import pytest

from util import run_lock
from util.errors import UserError


def _aged(path, text, seconds):
  with open(path, "w") as f:
    f.write(text)
  past = time.time() - seconds
  os.utime(path, (past, past))


@pytest.mark.parametrize("text, reason", [
    ("", "it names no process (empty or unreadable)"),
    ("garbage\n", "it names no process (empty or unreadable)"),
    ("999999999 %s" % os.uname().nodename, "its process 999999999 on this "
     "host is gone")])
def test_a_stale_lock_is_taken_over_with_one_line(tmp_path, text, reason):
  path = str(tmp_path / ".lock")
  _aged(path, text, 60)
  lines = []
  assert run_lock.try_acquire(path, log=lines.append)
  assert lines == ["lock file %s: %s; taken over" % (path, reason)]
  assert run_lock.holder(path)[0] == os.getpid()


def test_a_lock_being_written_or_alive_is_refused(tmp_path):
  path = str(tmp_path / ".lock")
  _aged(path, "", 0)  # Just created by another process, not yet written.
  assert not run_lock.try_acquire(path)
  _aged(path, "%d %s" % (os.getppid(), os.uname().nodename), 3600)
  with pytest.raises(UserError, match="in use by another run"):
    with run_lock.locked(str(tmp_path)):
      pass


def test_a_lock_that_cannot_be_written_is_removed(tmp_path, monkeypatch):
  def full(fd, mode):
    os.close(fd)
    raise OSError(28, "No space left on device")
  monkeypatch.setattr(run_lock.os, "fdopen", full)
  path = str(tmp_path / ".lock")
  with pytest.raises(UserError, match="cannot write lock file"):
    run_lock.try_acquire(path)
  assert not os.path.exists(path)
