"""The slow-first order of tests/conftest.py names files that exist."""

import os

from tests import conftest
from tests import paths


def test_every_slow_file_named_first_exists():
  missing = [p for p in conftest.SLOW_FILES_FIRST
             if not os.path.isfile(os.path.join(paths.REPO, p))]
  assert not missing, (
      f"tests/conftest.py SLOW_FILES_FIRST names files that do not exist "
      f"(renamed or moved?): {missing}")


def test_slow_files_are_named_once():
  assert len(set(conftest.SLOW_FILES_FIRST)) == len(conftest.SLOW_FILES_FIRST)
