"""Errors that reach the user as one clear paragraph instead of a traceback."""


class UserError(Exception):
  """Bad input the user can fix (a file, a flag, a hyperparameter).

  Entry scripts catch it, print the message and exit with code 2.
  """

  exit_code = 2


class Interrupted(UserError):
  """The user pressed Ctrl-C: exit code 130 (128 + SIGINT), as shells
  expect. The message says what was saved and how to resume."""

  exit_code = 130


class TrainingDivergedError(UserError):
  """The loss became NaN or Inf (pre-training or fine-tuning): exit code 3.

  Pre-training keeps the last good checkpoint; the message names it.
  """

  exit_code = 3
