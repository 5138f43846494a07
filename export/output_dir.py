"""An export's output directory: checked before any work, cleared of earlier
exports only with --overwrite, and then only of the files exports write.

Every format of export_model.py writes a known set of names (below). A
non-empty directory is refused unless the user passes --overwrite; then the
files of earlier exports, of any format, are removed (so a TF1 export into
an HF export's folder does not leave both formats mixed) and nothing else
is touched.
"""

import posixpath

from util import io_utils
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


def _ours(directory):
  """The paths under `directory` that an export of any format wrote."""
  found = []
  for name in io_utils.listdir(directory):
    path = posixpath.join(directory, name)
    if name in _HF_FOLDERS and io_utils.is_dir(path):
      found += [posixpath.join(path, f) for f in _HF_FILES
                if io_utils.is_file(posixpath.join(path, f))]
    elif (name in _TF1_FILES or name in _SAVED_MODEL
          or name.startswith("model.ckpt-")):
      found.append(path)
  return found


def check_output(directory, overwrite):
  """Before any work: `directory` is new, empty, or (with `overwrite`) is
  cleared of earlier exports; a UserError naming it otherwise."""
  entries = io_utils.output_entries(directory, "--output")
  if entries and not overwrite:
    raise UserError(
        "--output %s is not empty (%s); pass --overwrite to replace the "
        "exports in it (only files an export writes are removed), or choose "
        "another directory." % (directory, ", ".join(entries[:5]) + (
            ", ..." if len(entries) > 5 else "")))
  io_utils.check_writable(directory, "choose another --output, or fix its "
                          "permissions")
  for path in _ours(directory) if entries else ():
    if io_utils.is_dir(path):
      io_utils.remove_tree(path)
    else:
      io_utils.remove(path)
  for folder in _HF_FOLDERS:
    path = posixpath.join(directory, folder)
    if io_utils.is_dir(path) and not io_utils.listdir(path):
      io_utils.remove_tree(path)
