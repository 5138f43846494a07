"""Entry-point helpers: TensorFlow start-up settings, user errors -> exit 2."""

import errno
import os
import sys

from util import interrupt
from util import xla_fusion
from util.errors import Interrupted
from util.errors import UserError


def tensorflow_startup():
  """Start-up settings of every entry script; call before TensorFlow is
  imported.

  `tf.keras` is tf_keras (TF_USE_LEGACY_KERAS=1, unless the user set it):
  the project uses tf_keras only, as tf-models-official asks, and otherwise
  `import tensorflow` also loads Keras 3 and, through it, scikit-learn, which
  costs every start about 1.5 s on a 2-core CPU.

  TF_XLA_FLAGS gets the flags of hparam `fuse_elementwise`
  (util/xla_fusion.py), which do nothing until a run turns it on.

  TensorFlow's C++ start-up log lines are hidden unless the user asked for
  them. With TF_CPP_MIN_LOG_LEVEL unset, INFO and
  WARNING lines are hidden (level 2); on a machine without an NVIDIA driver,
  ERROR lines too (level 3), since there the only one TensorFlow prints at
  start-up is "failed call to cuInit", which reads like a failure but only
  means "no GPU". Errors that matter still reach the user as Python
  exceptions. Set TF_CPP_MIN_LOG_LEVEL=0 to see every log line.
  """
  os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
  xla_fusion.prepare_environment()
  if "TF_CPP_MIN_LOG_LEVEL" in os.environ:
    return
  has_nvidia_driver = (os.path.exists("/proc/driver/nvidia") or
                       not sys.platform.startswith("linux"))
  os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2" if has_nvidia_driver else "3"


def run_main(main, argv=None):
  """Calls `main(argv)`; a `UserError` prints its message and exits with its
  code (2 for bad input). A stop signal (Ctrl-C, SIGTERM, SIGHUP;
  util/interrupt.py) outside a training loop that saves on it unwinds the
  work (locks released, temporary files removed), prints one line and
  exits 128 + its number (130, 143, 129), without a traceback."""
  interrupt.install_stop_handlers()
  try:
    return main(argv)
  except UserError as e:
    _say("%s: %s\n" % (
        "stopped" if isinstance(e, Interrupted) else "error", e))
    sys.exit(e.exit_code)
  except Exception as e:  # pylint: disable=broad-except
    message = full_disk_message(e)
    if message is None:
      raise
    _say("error: %s\n" % message)
    sys.exit(2)
  except KeyboardInterrupt as e:
    signum = interrupt.stop_signal(e)
    _say("stopped: interrupted (%s); the last checkpoint or output written "
         "before it is kept.\n" % interrupt.signal_name(signum))
    sys.exit(128 + signum)


_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_FULL_TEXTS = ("No space left on device", "Disk quota exceeded",
               "File too large")


def full_disk_message(error):
  """The one line for an error that is a full disk (an OSError of ENOSPC,
  EDQUOT or EFBIG, or TensorFlow's error of one), else None."""
  text = str(error)
  if not (isinstance(error, OSError) and error.errno in _FULL_ERRNOS or
          any(t in text for t in _FULL_TEXTS)):
    return None
  where = getattr(error, "filename", None)
  return ("the disk is full (%s)%s. What was finished before is kept "
          "(checkpoints and outputs are written whole, or not at all); free "
          "space and re-run the same command." % (
              text.splitlines()[0] if text else type(error).__name__,
              ": %s could not be written" % where if where else ""))


def log_line(line):
  """Prints `line` to standard output, flushed. Once the reader of the
  output has gone (`... | head`), standard output is pointed at /dev/null
  and the run goes on: in a training loop the SIGPIPE that the failed
  write sent is a stop request (util/interrupt.py), so the loop saves the
  step reached and ends with exit 141 (128 + SIGPIPE)."""
  try:
    print(line, flush=True)
  except BrokenPipeError:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _say(line):
  try:
    sys.stderr.write(line)
  except OSError:
    pass  # A hung-up terminal (SIGHUP) takes no more output.


def require_at_least(args, names, minimum=1):
  """A UserError "--flag-name must be >= minimum." for the first of the
  parsed flags `names` (attribute names of `args`) below `minimum`."""
  for name in names:
    if getattr(args, name) < minimum:
      raise UserError("--%s must be >= %d." % (name.replace("_", "-"),
                                               minimum))
