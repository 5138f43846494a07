"""An export's completion marker: written last, checked by every loader.

Every export (each format of export_model.py, and the library functions
behind it) is written inside `writing(directory, format)`: first a hidden
`.export-in-progress` file, then the export, then `EXPORT_COMPLETE.json`
({"format", "completed"}: the format and the UTC time) and the hidden file
is removed. A local export_model.py writes into a temporary sibling and
swaps it in when complete (export/output_dir.py), so a folder missing its
marker is one left by a killed export on an object store (gs://), a
temporary folder, or an export of a version that wrote no marker.

`check(directory)` is the one test of every loader of our exports: the
TFLite runner (export/tflite.py `TfliteClassifier`) requires the marker
(nothing else writes those folders; so should a server of the
SavedModels); the checkpoint loader (interop/loader.py) reads Hugging
Face folders and Google TF1 checkpoints from anywhere, so it refuses only
a folder marked in progress that has no marker.

It sits in util/, below interop/ (which writes the HF and TF1 exports)
and export/. It imports TensorFlow only for a path on an object store, so
the TFLite runner (export/tflite.py) stays free of it.
"""

import contextlib
import datetime
import os
import posixpath

from util.errors import UserError

MARKER = "EXPORT_COMPLETE.json"
IN_PROGRESS = ".export-in-progress"
# Both names, for export/output_dir.py (files an export writes).
NAMES = (MARKER, IN_PROGRESS)


def _exists(path):
  if "://" in path:
    from util import io_utils  # pylint: disable=g-import-not-at-top
    return io_utils.exists(path)
  return os.path.exists(path)


@contextlib.contextmanager
def writing(directory, fmt):
  """Marks `directory` in progress, runs the `with` block (which writes
  the export of format `fmt` there), then writes the marker; an exception
  leaves the folder marked in progress."""
  from util import io_utils  # pylint: disable=g-import-not-at-top
  io_utils.make_dirs(directory)
  io_utils.write_text_atomic(posixpath.join(directory, IN_PROGRESS),
                             "export_model.py is writing this %s export\n" %
                             fmt)
  yield
  io_utils.write_json_atomic(posixpath.join(directory, MARKER), dict(
      format=fmt, completed=datetime.datetime.now(
          datetime.timezone.utc).isoformat(timespec="seconds")))
  io_utils.remove(posixpath.join(directory, IN_PROGRESS))


def check(directory, required=True):
  """Refuses an export that was not finished.

  Args:
    directory: the export's folder (where `writing` put the marker).
    required: whether a folder without the marker is refused (our own
      formats); with False only one marked in progress is (a Hugging Face
      folder or TF1 checkpoint may come from elsewhere).
  Raises:
    UserError: one line naming the folder (exit 2 in the scripts).
  """
  if _exists(posixpath.join(directory, MARKER)):
    return
  started = _exists(posixpath.join(directory, IN_PROGRESS))
  if started or required:
    raise UserError(
        "incomplete export %s: it has no %s, which export_model.py writes "
        "last (%s); re-run export_model.py." % (
            directory, MARKER, "the export was killed or failed before it "
            "finished" if started else "the export was killed or failed "
            "before it finished, or was written by a version without the "
            "marker"))
