"""Errors that reach the user as one clear paragraph instead of a traceback."""

import signal


class UserError(Exception):
  """Bad input the user can fix (a file, a flag, a hyperparameter).

  Entry scripts catch it, print the message and exit with code 2.
  """

  exit_code = 2


class Interrupted(UserError):
  """A stop signal (Ctrl-C, SIGTERM, SIGHUP; util/interrupt.py) ended the
  run: exit code 128 + the signal's number (130, 143, 129), as shells
  expect. The message says what was saved and how to resume."""

  exit_code = 130

  def __init__(self, message, signum=signal.SIGINT):
    super().__init__(message)
    self.exit_code = 128 + int(signum)


class TrainingDivergedError(UserError):
  """The loss became NaN or Inf (pre-training or fine-tuning): exit code 3.

  Pre-training keeps the last good checkpoint; the message names it.
  """

  exit_code = 3
