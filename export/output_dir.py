"""An export's output directory: checked before any work, its earlier
export replaced only with --overwrite, and then only the files exports
write. A local export is written into a temporary sibling and swapped in
when complete (`staged`): a kill mid-export keeps the earlier one. Every
export ends with its completion marker (util/export_marker.py).

Every format of export_model.py writes a known set of names (below). A
non-empty directory is refused unless the user passes --overwrite; then the
files of earlier exports, of any format, are removed (so a TF1 export into
an HF export's folder does not leave both formats mixed) and nothing else
is touched.
"""

import contextlib
import os
import posixpath

from util import export_marker
from util import io_utils
from util import run_lock
from util.errors import UserError

# The files `interop.hf.export_hf` writes in each of its role folders.
_HF_FILES = ("config.json", "model.safetensors", "vocab.txt",
             "special_tokens_map.json", "tokenizer_config.json",
             "tokenizer.json", "sentencepiece.model")
_HF_FOLDERS = ("discriminator", "generator")
# `interop.tf1.export_tf1`: plus model.ckpt-<step>.{index,data-*}.
_TF1_FILES = ("checkpoint", "bert_config.json", "generator_config.json",
              "vocab.txt", "sentencepiece.model")
# `tf.saved_model.save`.
_SAVED_MODEL = ("saved_model.pb", "fingerprint.pb", "keras_metadata.pb",
                "variables", "assets")
# export/tflite.py (MODEL_FILE, META_FILE).
_TFLITE = ("model.tflite", "tflite.json")


def _ours(directory):
  """The paths under `directory` that an export of any format wrote."""
  found = []
  for name in io_utils.listdir(directory):
    path = posixpath.join(directory, name)
    if name in _HF_FOLDERS and io_utils.is_dir(path):
      found += [posixpath.join(path, f) for f in _HF_FILES
                if io_utils.is_file(posixpath.join(path, f))]
    elif _is_export_name(name):
      found.append(path)
  return found


def check_output(directory, overwrite):
  """Before any work: `directory` is new, empty, or (with `overwrite`)
  holds earlier exports; a UserError naming it otherwise. A local export is
  then written beside it and swapped in when complete (`staged`); on an
  object store the earlier export's files are removed now."""
  entries = io_utils.output_entries(directory, "--output")
  if entries and not overwrite:
    raise UserError(
        "--output %s is not empty (%s); pass --overwrite to replace the "
        "exports in it (only files an export writes are removed), or choose "
        "another directory." % (directory, ", ".join(entries[:5]) + (
            ", ..." if len(entries) > 5 else "")))
  fix = "choose another --output, or fix its permissions"
  if _is_local(directory):
    created = not io_utils.exists(directory)
    io_utils.check_writable(directory, fix)
    if created:  # Made by the check: the export is swapped in at the end.
      os.rmdir(directory)
    return
  io_utils.check_writable(directory, fix)
  _remove_ours(directory, entries)


def _is_local(path):
  return "://" not in path


@contextlib.contextmanager
def staged(directory, log=print):
  """Yields (where to write, a log that names `directory` instead): a
  local export goes to a temporary sibling, `.<name>.tmp-export-<pid>`,
  renamed to `directory` once complete; an earlier export there is kept
  until then (a kill mid-export leaves it intact, and leaves nothing at
  `directory` that looks complete). The files of `directory` that are not
  an export's are kept."""
  if not _is_local(directory):
    yield directory, log
    return
  parent, name = os.path.split(os.path.abspath(directory))
  for stale in os.listdir(parent):  # Of exports killed before.
    pid = stale.rsplit("-", 1)[-1]
    if (stale.startswith(".%s.tmp-export-" % name) and pid.isdigit() and
        not run_lock.is_held_by(int(pid))):
      io_utils.remove_tree(os.path.join(parent, stale))
  tmp = os.path.join(parent, ".%s.tmp-export-%d" % (name, os.getpid()))
  io_utils.remove_tree(tmp)
  try:
    yield tmp, lambda line: log(line.replace(tmp, directory))
    _swap(tmp, directory)
  finally:
    io_utils.remove_tree(tmp)


def _swap(tmp, directory):
  """Puts the complete export `tmp` at `directory`, keeping the files of
  an earlier `directory` that no export wrote."""
  if not os.path.exists(directory):
    os.rename(tmp, directory)
    return
  old = "%s.old-export-%d" % (tmp.rsplit(".tmp-export-", 1)[0], os.getpid())
  os.rename(directory, old)
  os.rename(tmp, directory)
  for name in os.listdir(old):
    if name in _HF_FOLDERS and os.path.isdir(os.path.join(old, name)):
      for inner in os.listdir(os.path.join(old, name)):
        if inner not in _HF_FILES:
          _move_absent(os.path.join(old, name, inner),
                       os.path.join(directory, name, inner))
    elif not _is_export_name(name):
      _move_absent(os.path.join(old, name), os.path.join(directory, name))
  io_utils.remove_tree(old)


def _move_absent(source, target):
  """Moves `source` to `target` unless the new export wrote one there."""
  if not os.path.exists(target):
    os.makedirs(os.path.dirname(target), exist_ok=True)
    os.rename(source, target)


def _is_export_name(name):
  return (name in _HF_FOLDERS or name in _TF1_FILES or name in _SAVED_MODEL
          or name in _TFLITE or name in export_marker.NAMES or
          name.startswith("model.ckpt-"))


def _remove_ours(directory, entries):
  """Removes the files of earlier exports from `directory`."""
  for path in _ours(directory) if entries else ():
    if io_utils.is_dir(path):
      io_utils.remove_tree(path)
    else:
      io_utils.remove(path)
  for folder in _HF_FOLDERS:
    path = posixpath.join(directory, folder)
    if io_utils.is_dir(path) and not io_utils.listdir(path):
      io_utils.remove_tree(path)
