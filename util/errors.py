"""Errors that reach the user as one clear paragraph instead of a traceback."""


class UserError(Exception):
  """Bad input the user can fix (a file, a flag, a hyperparameter).

  Entry scripts catch it, print the message and exit with code 2.
  """

  exit_code = 2


class TrainingDivergedError(UserError):
  """The loss became NaN or Inf (pre-training or fine-tuning): exit code 3.

  Pre-training keeps the last good checkpoint; the message names it.
  """

  exit_code = 3
