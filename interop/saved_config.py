"""A model directory's config.json: reading it back, and checking a resume.

Every run writes its whole config to `<model_dir>/config.json`. Export and
fine-tuning rebuild a model from it (`saved_hparams`,
`saved_network_hparams`); a run starting from a checkpoint finds it there
(`config_beside`) and adopts its sizes (interop/adoption.py); pre-training
refuses to resume checkpoints written by a model of another shape
(`check_saved_config`).
"""

import json
import os


from interop import checkpoints as checkpoints_lib
from model.transformer_hparams import EMBEDDING_KEYS
from util import io_utils
from util import shard_identity
from util.errors import UserError


def saved_hparams(saved, fields):
  """The user-settable hparams of a saved config.json dict, to rebuild it.

  Paths and derived sizes are left out (recomputed); older files listing
  the embedding sizes among the overrides too are read (their top-level
  values are the effective ones).
  """
  skip = ("model_dir", "max_predictions_per_seq")
  hparams = {k: v for k, v in saved.items()
             if k in fields and k not in skip and v is not None}
  hparams["model_hparam_overrides"] = {
      k: v for k, v in hparams.get("model_hparam_overrides", {}).items()
      if k not in EMBEDDING_KEYS}
  return hparams


def saved_network_hparams(saved, role="discriminator"):
  """`network_hparams(role)` of a saved config.json dict.

  Reads config.json files of every version: older ones also kept
  `vocab_size` and `embedding_size` inside model_hparams; the top-level
  values win.
  """
  key = "generator_hparams" if role == "generator" else "model_hparams"
  hparams = dict(saved.get(key, {}))
  hparams.update({k: saved[k] for k in EMBEDDING_KEYS if k in saved})
  return hparams


def config_beside(prefix):
  """The config.json of the run that wrote checkpoint `prefix`, or None.

  Looked for beside the checkpoint and one directory up (a pre-training
  model directory holds `config.json` and `checkpoints/`).
  """
  checkpoint_dir = os.path.dirname(prefix)
  for directory in (checkpoint_dir, os.path.dirname(checkpoint_dir)):
    path = os.path.join(directory, "config.json")
    if io_utils.is_file(path):
      return path
  return None


def read_saved(path):
  """A saved config.json as a dict (UserError if it is not JSON)."""
  try:
    return io_utils.read_json(path)
  except ValueError as e:
    raise UserError("%s is not valid JSON: %s" % (path, e))


# Config fields that decide the shapes of the checkpointed variables.
# Besides the networks' sizes (`network_hparams`).
SHAPE_KEYS = ("sampling", "relative_position", "relative_num_buckets",
              "untied_generator", "untied_generator_embeddings",
              "untied_mlm_output",
              "electra_objective")


def checkpoint_step(prefix):
  """The step in a checkpoint prefix ".../ckpt-<step>", or None."""
  tail = prefix.rsplit("-", 1)[-1]
  return int(tail) if tail.isdigit() else None


def _check_data_identity(config, saved, path, ckpt_dir):
  """Refuses a resume with another vocabulary than the checkpoints were
  trained with (its ids would mean other tokens), or on other training
  shards unless hparam accept_new_data (both as config.json records
  them)."""
  recorded = saved.get("vocab_fingerprint")
  ours = config.to_dict().get("vocab_fingerprint")
  if recorded and ours and recorded != ours:
    raise UserError(
        "the checkpoints in %s were trained with another vocabulary "
        "(fingerprint %s of %s, recorded in %s) than %s (fingerprint %s): "
        "their token ids would mean other tokens. Restore that vocabulary, "
        "or pre-train this one under another --model-name." % (
            ckpt_dir, recorded, saved.get("vocab_file"), path,
            config.vocab_file, ours))
  before, now = saved.get("train_shards"), config.train_shards
  if (isinstance(before, dict) and now and not config.accept_new_data and
      before.get("fingerprint") != now["fingerprint"]):
    raise UserError(
        "the training shards (hparam 'pretrain_tfrecords', %s) are not the "
        "ones the checkpoints in %s were trained on (fingerprint %s recorded "
        "in %s, now %s: %s); they were rebuilt, added or removed. Restore "
        "them, set hparam 'accept_new_data' to true to continue on these "
        "(the data stream restarts at the same example offset), or use "
        "another --model-name." % (
            config.pretrain_tfrecords, ckpt_dir, before.get("fingerprint"),
            path, now["fingerprint"],
            shard_identity.shard_set_changes(before, now)))


def _same(a, b):
  if isinstance(a, (int, float)) and isinstance(b, (int, float)):
    return float(a) == float(b)
  return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _resumed(config):
  """(config.json path, checkpoint directory, latest checkpoint) of the
  run `config` resumes, or None when its model directory holds no
  checkpoint or no config.json."""
  path = os.path.join(config.model_dir, "config.json")
  ckpt_dir = checkpoints_lib.pretrained_checkpoint_dir(config.model_dir)
  # The files, not the state file, say whether there is a run to resume.
  latest = checkpoints_lib.newest_on_disk(ckpt_dir)
  if not (io_utils.exists(path) and latest):
    return None
  return path, ckpt_dir, latest


def changed_on_resume(config, fields):
  """["key saved -> now", ...]: the hparams among `fields` (the
  user-settable ones) that a resumed run changes from its config.json,
  shapes aside (`check_saved_config` refuses those). Empty when the model
  directory holds no checkpoint to resume."""
  resumed = _resumed(config)
  if resumed is None:
    return []
  theirs = saved_hparams(read_saved(resumed[0]), fields)
  ours = config.to_dict()
  return ["%s %s -> %s" % (k, json.dumps(theirs[k]), json.dumps(ours.get(k)))
          for k in sorted(theirs)
          if k not in SHAPE_KEYS and k != "model_hparam_overrides" and
          not _same(theirs[k], ours.get(k))]


def check_saved_config(config):
  """Refuses to resume a model directory written with other model shapes,
  or whose checkpoint is past `num_train_steps` (resuming would rewrite
  config.json with a step count the checkpoint has already passed)."""
  resumed = _resumed(config)
  if resumed is None:
    return
  path, ckpt_dir, latest = resumed
  step = checkpoint_step(latest)
  if step is not None and step > config.num_train_steps:
    raise UserError(
        "the checkpoint %s is at step %d, past num_train_steps %d: there is "
        "nothing to train, and %s keeps its %d. Give num_train_steps >= %d "
        "to continue or to re-evaluate, or another --model-name." % (
            latest, step, config.num_train_steps, path,
            io_utils.read_json(path).get("num_train_steps", step), step))
  saved = read_saved(path)
  _check_data_identity(config, saved, path, ckpt_dir)
  current = config.to_dict()
  differing = [k for k in SHAPE_KEYS
               if k in saved and not _same(saved[k], current[k])]
  for role, prefix in (("discriminator", ""), ("generator", "generator ")):
    ours = config.network_hparams(role)
    theirs = saved_network_hparams(saved, role)
    differing += ["%s%s (%r saved, %r now)" % (prefix, k, theirs[k], ours[k])
                  for k in sorted(ours) if k in theirs and theirs[k] != ours[k]]
  if differing:
    raise UserError(
        "the checkpoints in %s were written by a model of another shape "
        "(differs in: %s; see %s). Use another --model-name, or the "
        "hyperparameters of that run." % (ckpt_dir, ", ".join(differing),
                                          path))
