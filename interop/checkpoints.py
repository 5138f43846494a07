"""Checkpoint paths shared by pre-training and fine-tuning.

Pre-training writes `tf.train.Checkpoint(model=ElectraPretrainer,
optimizer=..., step=...)`; the pre-training model keeps its discriminator
encoder at `model.discriminator.encoder`. Fine-tuning restores that encoder
alone (with the embeddings it owns) through the same object path, so the
generator, the heads and the optimizer slots are not needed.
"""

import os
import re

import tensorflow as tf

from util.errors import UserError


def resolve_checkpoint(path, log=None):
  """A checkpoint prefix from a prefix, a directory of checkpoints (its
  newest intact one, `latest_intact`) or a pre-training model directory
  holding `checkpoints/`. The prefix is checked readable (`verify`): a
  corrupt or truncated one is a UserError naming its files."""
  # A prefix first: on ram:// every prefix of a file name is a "directory".
  if path and tf.io.gfile.exists(path + ".index"):
    verify(path)
    return path
  if (path and tf.io.gfile.isdir(path) and not _numbered(path)
      and tf.io.gfile.isdir(pretrained_checkpoint_dir(path))):
    path = pretrained_checkpoint_dir(path)
  if path and tf.io.gfile.isdir(path):
    latest = latest_intact(path, log=log)
    if latest is None:
      raise UserError("no checkpoint found in directory %s." % path)
    return latest
  if not path or not tf.io.gfile.exists(path + ".index"):
    raise UserError("checkpoint %s not found (expected %s.index)." %
                    (path, path))
  return path


_NUMBERED = re.compile(r"-(\d+)\.index$")


def _numbered(directory):
  """[(step, prefix)] of the `<name>-N.index` checkpoints in `directory`,
  newest first."""
  found = []
  for index in tf.io.gfile.glob(os.path.join(directory, "*.index")):
    match = _NUMBERED.search(index)
    if match:
      found.append((int(match.group(1)), index[:-len(".index")]))
  return sorted(found, reverse=True)


def newest_on_disk(directory):
  """The prefix of the highest-numbered checkpoint file in `directory`,
  whether or not the state file names it (unverified), or None."""
  numbered = _numbered(directory)
  return numbered[0][1] if numbered else None


def verify(prefix):
  """Reads every tensor of the checkpoint at `prefix`; a UserError naming
  it and the fault when its `.index` or a `.data` shard is missing,
  truncated or corrupt (TensorFlow checks lengths and checksums)."""
  reader = load_checkpoint(prefix)
  try:
    for name, dtype in reader.get_variable_to_dtype_map().items():
      if dtype != tf.variant:  # An input iterator's state: no numpy form.
        reader.get_tensor(name)
  except (tf.errors.OpError, ValueError, IndexError) as e:
    raise UserError(
        "checkpoint %s is damaged: %s.data-* cannot be read (%s). Point at "
        "another checkpoint (its directory takes the newest intact one)." % (
            prefix, prefix,
            getattr(e, "message", None) or str(e).splitlines()[0]))


def _remove_orphans(directory, log):
  """Removes the `<prefix>_temp/` folders a save killed midway left."""
  for path in tf.io.gfile.glob(os.path.join(directory, "*_temp")):
    if tf.io.gfile.isdir(path):
      tf.io.gfile.rmtree(path)
      log("removed %s, left by a save that did not finish" % path)


def latest_intact(directory, log=None, repair=False):
  """The newest checkpoint in `directory` whose files all read, or None.

  The checkpoint files are the truth, not the `checkpoint` state file: a
  state file that is missing or names a checkpoint that is gone or damaged
  does not hide the intact ones. Each checkpoint skipped is named with the
  reason, through `log`.

  Args:
    directory: a directory of `<name>-N` checkpoints.
    log: gets one line per checkpoint skipped and per repair.
    repair: rewrite the state file to name the checkpoint found, and remove
      orphan `_temp` folders (the writer of the directory does this).
  Raises UserError when checkpoints exist but none is intact.
  """
  log = log or (lambda _: None)
  numbered = _numbered(directory)
  skipped = []
  for _, prefix in numbered:
    try:
      verify(prefix)
    except UserError as e:
      skipped.append(prefix)
      log("skipped checkpoint %s: %s" % (prefix, str(e).split(": ", 1)[-1]))
      continue
    state = tf.train.get_checkpoint_state(directory)
    named = state.model_checkpoint_path if state else None
    if repair and (named is None or os.path.basename(named) !=
                   os.path.basename(prefix)):
      # Relative names, as tf.train.CheckpointManager writes them.
      tf.compat.v1.train.update_checkpoint_state(
          directory, os.path.basename(prefix), all_model_checkpoint_paths=[
              os.path.basename(p) for _, p in reversed(numbered)
              if p not in skipped])
      log("the checkpoint state file of %s named %s; it now names %s, the "
          "newest intact checkpoint" % (directory, named or "nothing",
                                        prefix))
    if repair:
      _remove_orphans(directory, log)
    return prefix
  if numbered:
    raise UserError(
        "no checkpoint in %s can be read (%s): each is damaged. Nothing was "
        "changed; move them away (or choose another --model-name) to start "
        "over." % (directory, ", ".join(p for _, p in numbered)))
  return None


def load_checkpoint(prefix):
  """A `tf.train.CheckpointReader` of the checkpoint at `prefix`.

  `tf.train.load_checkpoint` takes a prefix that `tf.io.gfile.isdir` calls a
  directory for one (on ram://, where every prefix of a file name is one),
  so this opens the prefix itself. A file that is not a checkpoint (corrupt,
  truncated, another format) is a UserError naming it.
  """
  try:
    return tf.compat.v1.train.NewCheckpointReader(prefix)
  except (tf.errors.OpError, ValueError) as e:
    raise UserError(
        "checkpoint %s cannot be read (%s): %s.index or its data files are "
        "corrupt, truncated or not a TensorFlow checkpoint. Point at another "
        "checkpoint (its directory takes the latest one)." % (
            prefix, getattr(e, "message", str(e)).splitlines()[0], prefix))


def save_checkpoint(manager, step):
  """`manager.save(checkpoint_number=step)` (a `tf.train.CheckpointManager`
  with the default name "ckpt"). A save that fails (a full disk, a
  directory gone read-only) removes its partial files and is a UserError
  naming the cause and the last good checkpoint, which stays registered."""
  try:
    return manager.save(checkpoint_number=step)
  except (tf.errors.OpError, OSError) as e:
    prefix = os.path.join(manager.directory, "ckpt-%d" % step)
    for path in tf.io.gfile.glob(prefix + "[._]*"):
      try:
        if tf.io.gfile.isdir(path):
          tf.io.gfile.rmtree(path)
        else:
          tf.io.gfile.remove(path)
      except tf.errors.OpError:
        pass  # Best effort: the state file never named it.
    raise UserError(
        "could not save checkpoint %s (%s). The last good checkpoint, %s, is "
        "kept; free space or fix the directory, then re-run the same command "
        "to resume." % (prefix, getattr(e, "message", None) or str(e),
                        manager.latest_checkpoint or "(none yet)"))


def discriminator_checkpoint(encoder):
  """A `tf.train.Checkpoint` mapping `encoder` to the pre-training path."""
  return tf.train.Checkpoint(model=tf.train.Checkpoint(
      discriminator=tf.train.Checkpoint(encoder=encoder)))


def restore_discriminator(encoder, path):
  """Loads pre-trained discriminator weights into a built `ElectraEncoder`.

  Args:
    encoder: an `ElectraEncoder` already called once (variables exist).
    path: a checkpoint prefix or a directory holding checkpoints.
  Returns: the checkpoint prefix that was restored.
  Raises UserError if the checkpoint is missing or has other shapes.
  """
  prefix = resolve_checkpoint(path)
  # An encoder without the bias would restore "fine" and silently drop it.
  has_relative = any(
      name.startswith("model/discriminator/encoder/relative_position_bias/")
      for name in load_checkpoint(prefix).get_variable_to_shape_map())
  if has_relative and encoder.relative_position_bias is None:
    raise UserError("checkpoint %s was pre-trained with a relative position "
                    "bias; set hparam 'relative_position' to true (and the "
                    "pre-training relative_num_buckets and "
                    "relative_max_distance)." % prefix)
  try:
    status = discriminator_checkpoint(encoder).restore(prefix)
    status.expect_partial().assert_existing_objects_matched()
  except (AssertionError, ValueError) as e:
    raise UserError("checkpoint %s does not match this model's "
                    "discriminator (different sizes or not an electra-hp "
                    "checkpoint): %s" % (prefix, str(e).splitlines()[0]))
  return prefix


def pretrained_checkpoint_dir(model_dir):
  """Where pre-training keeps its checkpoints."""
  return os.path.join(model_dir, "checkpoints")


def dropout_rng_checkpoint(model):
  """A `tf.train.Checkpoint` of the state of every dropout layer's RNG.

  tf_keras keeps the `tf.random.Generator` of a random layer out of the
  layer's checkpoint (it is exported to SavedModel only), so without this a
  resumed run would draw other dropout masks than an uninterrupted one.
  Layers are numbered in `model.submodules` order, which is fixed by the code.
  """
  generators = {}
  for layer in model.submodules:
    generator = getattr(getattr(layer, "_random_generator", None),
                        "_generator", None)
    if isinstance(generator, tf.random.Generator):
      generators["layer_%d" % len(generators)] = generator
  return tf.train.Checkpoint(**generators)
