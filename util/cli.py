"""Entry-point wrapper: user errors become a message and exit code 2."""

import sys

from util.errors import UserError


def run_main(main, argv=None):
  """Calls `main(argv)`; a `UserError` prints its message and exits with 2."""
  try:
    return main(argv)
  except UserError as e:
    sys.stderr.write("error: %s\n" % e)
    sys.exit(e.exit_code)
