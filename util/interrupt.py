"""Ctrl-C as a request to stop cleanly at the next loop boundary.

Inside `stop_requests()`, the first SIGINT only sets `requested`: the
training loop sees it after its current loop of steps, saves a checkpoint
of the step reached and stops (util.errors.Interrupted, exit 130). A second
SIGINT raises KeyboardInterrupt at once; checkpoint saves are atomic, so the
last registered checkpoint stays usable.
"""

import contextlib
import signal
import sys
import threading


class StopRequest(object):
  """Whether the user asked to stop (`requested`)."""

  def __init__(self):
    self.requested = False

  def _handle(self, signum, frame):
    del signum, frame
    if self.requested:
      raise KeyboardInterrupt
    self.requested = True
    sys.stderr.write("\nCtrl-C: stopping after the current loop of steps, "
                     "with a checkpoint (Ctrl-C again to abort now).\n")
    sys.stderr.flush()


@contextlib.contextmanager
def stop_requests():
  """Yields a `StopRequest` that SIGINT sets while the block runs (the
  previous handler is restored after). Outside the main thread, where
  Python cannot install handlers, nothing is ever requested."""
  request = StopRequest()
  if threading.current_thread() is not threading.main_thread():
    yield request
    return
  previous = signal.signal(signal.SIGINT, request._handle)  # pylint: disable=protected-access
  try:
    yield request
  finally:
    signal.signal(signal.SIGINT, previous)
