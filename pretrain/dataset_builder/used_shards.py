"""Shards a model was trained on: not rebuilt in place unless told.

Pre-training records the identity of its training shards in the model's
config.json (`train_shards`, util/shard_identity.py) beside the shard glob
(`pretrain_tfrecords`). Rebuilding those shards in place ends every resume
of that model in a refusal (interop/saved_config.py), so the dataset builder
looks, before any work, for the models under the data directory
(`<data-dir>/models/*/config.json`, the data directory being the output
directory's parent, as in `<data-dir>/pretrain_tfrecords`) whose recorded
shards live in its output directory, and refuses an `--overwrite` of them
without `--overwrite-used`.
"""

import os
import posixpath

from pretrain.dataset_builder.output import TRAIN_PREFIX
from util import io_utils
from util.errors import UserError


def _recorded_dir(saved, data_dir):
  """The directory of the training shards a config.json dict records,
  resolved: a relative glob (a run given a relative --data-dir) is read
  under the data directory the model sits in now."""
  directory = posixpath.dirname(saved.get("pretrain_tfrecords") or "")
  recorded_data = saved.get("data_dir") or ""
  if not directory:
    return None
  if not os.path.isabs(directory) and "://" not in directory:
    if recorded_data and not os.path.isabs(recorded_data):
      directory = os.path.join(
          data_dir, os.path.relpath(directory, recorded_data))
  return directory


def _same_dir(a, b):
  if "://" in a or "://" in b:
    return a.rstrip("/") == b.rstrip("/")
  return os.path.realpath(a) == os.path.realpath(b)


def models_using(output_dir):
  """The model directories under the output directory's parent's `models/`
  whose config.json records training shards in `output_dir`, sorted."""
  data_dir = posixpath.dirname(output_dir.rstrip("/")) or "."
  models = posixpath.join(data_dir, "models")
  if not io_utils.is_dir(models):
    return []
  found = []
  for name in io_utils.listdir(models):
    path = posixpath.join(models, name, "config.json")
    if not io_utils.is_file(path):
      continue
    try:
      saved = io_utils.read_json(path)
    except (OSError, ValueError):
      continue  # Not ours to judge here; the model's own run says so.
    if not (isinstance(saved, dict) and saved.get("train_shards")):
      continue
    recorded = _recorded_dir(saved, data_dir)
    if recorded and _same_dir(recorded, output_dir):
      found.append(posixpath.join(models, name))
  return found


def check_rebuild(output_dir, overwrite_used):
  """Refuses to replace the training shards in `output_dir` when a model
  records them, unless `overwrite_used` (call it when --overwrite is given;
  a folder without shards has nothing to lose).

  Raises:
    UserError: naming the models and the flag that accepts it.
  """
  if overwrite_used or not io_utils.is_dir(output_dir) or not any(
      n.startswith(TRAIN_PREFIX + "-") for n in io_utils.listdir(output_dir)):
    return
  users = models_using(output_dir)
  if users:
    more = " and %d more" % (len(users) - 3) if len(users) > 3 else ""
    raise UserError(
        "the shards in %s are the training data of %s (their config.json "
        "records them): rebuilt in place, those models can no longer "
        "resume on them. Choose another --output-dir, or pass "
        "--overwrite-used to rebuild them anyway (a resume then needs hparam "
        "accept_new_data)." % (output_dir, ", ".join(users[:3]) + more))
