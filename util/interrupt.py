"""Stop signals (Ctrl-C, SIGTERM, SIGHUP) as requests to stop cleanly.

Clusters stop a job with SIGTERM (Kubernetes, SLURM before its SIGKILL,
preemptible machines); a closed terminal sends SIGHUP; a user presses
Ctrl-C (SIGINT). All three mean the same here:

  * Inside `stop_requests()` (the pre-training loop), the first one only
    sets `requested`: the loop sees it after its current loop of steps,
    saves a checkpoint of the step reached and stops (util.errors.
    Interrupted, exit 128 + the signal's number). A second one raises
    `Stopped` at once; checkpoint saves are atomic, so the last registered
    checkpoint stays usable.
  * Anywhere else in an entry script (`install_stop_handlers`, called by
    util.cli.run_main), SIGTERM and SIGHUP raise `Stopped`, as SIGINT
    raises KeyboardInterrupt: `finally` blocks run (locks are released,
    temporary files removed) and run_main prints one line and exits
    128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
  * A parent that runs entry scripts as children (the study runner) passes
    each stop signal on to its child and waits for it (`run_child`).
"""

import contextlib
import ctypes
import signal
import subprocess
import sys
import threading

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# In a loop that saves on a stop, a closed standard output (`... | head`)
# is one more: the write that met it sends SIGPIPE (util/cli.log_line
# keeps the write itself from failing).
_LOOP_SIGNALS = STOP_SIGNALS + (signal.SIGPIPE,)
_NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM",
          signal.SIGHUP: "SIGHUP", signal.SIGPIPE: "closed output (SIGPIPE)"}


def signal_name(signum):
  """"Ctrl-C", "SIGTERM" or "SIGHUP" (another signal's own name)."""
  return _NAMES.get(signum) or signal.Signals(signum).name


class Stopped(KeyboardInterrupt):
  """A stop signal outside a loop that saves on it; `signum` says which."""

  def __init__(self, signum):
    super().__init__(signal_name(signum))
    self.signum = signum


def stop_signal(error):
  """The signal number behind a KeyboardInterrupt (SIGINT unless it is a
  `Stopped`)."""
  return getattr(error, "signum", signal.SIGINT)


def _raise_stopped(signum, frame):
  del frame
  raise Stopped(signum)


def _in_main_thread():
  return threading.current_thread() is threading.main_thread()


def install_stop_handlers():
  """SIGTERM and SIGHUP raise `Stopped` in the main thread from now on
  (SIGINT keeps Python's KeyboardInterrupt). No-op outside the main
  thread, where Python cannot install handlers."""
  if _in_main_thread():
    for signum in (signal.SIGTERM, signal.SIGHUP):
      signal.signal(signum, _raise_stopped)


class StopRequest(object):
  """Whether a stop signal arrived (`requested`), and which (`signum`)."""

  def __init__(self):
    self.requested = False
    self.signum = None

  def _handle(self, signum, frame):
    del frame
    if self.requested:
      raise Stopped(signum)
    self.requested = True
    self.signum = signum
    try:
      sys.stderr.write("\n%s: stopping after the current loop of steps, "
                       "with a checkpoint (again to abort now).\n"
                       % signal_name(signum))
      sys.stderr.flush()
    except OSError:
      pass  # A hung-up terminal (SIGHUP) takes no more output.


@contextlib.contextmanager
def stop_requests():
  """Yields a `StopRequest` that SIGINT, SIGTERM, SIGHUP and SIGPIPE (a
  closed standard output) set while the block runs (the previous handlers
  are restored after). Outside the main thread nothing is ever
  requested."""
  request = StopRequest()
  if not _in_main_thread():
    yield request
    return
  previous = {s: signal.signal(s, request._handle)  # pylint: disable=protected-access
              for s in _LOOP_SIGNALS}
  try:
    yield request
  finally:
    for signum, handler in previous.items():
      signal.signal(signum, handler)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _stop_with_parent():
  """In the child before exec: SIGTERM when the parent dies, so a parent
  killed without a chance to pass anything on (SIGKILL) leaves no orphan
  writing on (Linux only)."""
  if sys.platform.startswith("linux"):
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


def run_child(argv, **popen_kwargs):
  """Runs `argv` to its end and returns its exit code.

  The child has a session of its own, so a terminal's Ctrl-C reaches only
  this process; each stop signal this process gets (as KeyboardInterrupt
  or `Stopped`) is passed on to the child, which saves and exits, and once
  it has exited the first stop is raised here. On Linux the child gets
  SIGTERM if this process dies first.
  """
  proc = subprocess.Popen(argv, start_new_session=True,
                          preexec_fn=_stop_with_parent, **popen_kwargs)
  stop = None
  while True:
    try:
      code = proc.wait()
      break
    except KeyboardInterrupt as e:
      stop = stop or e
      proc.send_signal(stop_signal(e))
  if stop is not None:
    raise stop
  return code
