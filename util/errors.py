"""Errors that reach the user as one clear paragraph instead of a traceback."""


class UserError(Exception):
  """Bad input the user can fix (a file, a flag, a hyperparameter).

  Entry scripts catch it, print the message and exit with code 2.
  """

  exit_code = 2
