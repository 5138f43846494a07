"""Everything a run's source determines is adopted from the source.

A run that starts from a source (`init_checkpoint` of pre-training or
fine-tuning, fine-tuning's default: the pre-trained model of
`--model-name`; `export_model.py --checkpoint`) takes from it, through
`adopt`:
  * every size it records (interop/convert.describe): vocabulary,
    embedding, hidden, layers, heads, FFN, positions, token types,
    activation, and the generator's width, depth, FFN and heads; how the
    networks share tables and the casing, where the user set nothing; our
    own runs' relative position settings;
  * its vocabulary (a vocab.txt, or our own runs' sentencepiece.model):
    copied to `<data-dir>/vocab.txt` (`sentencepiece.model`) when the data
    directory has none (one line says so), an error naming both files when
    the data directory's (or hparam `vocab_file`) holds other tokens.
A size the user set that contradicts the source is an error naming both
values; one line "adopted from SOURCE: key=value, ..." lists what came from
the source, and the config records it (`adopted_from`, saved in config.json).
"""

import posixpath

from interop import checkpoints
from interop import convert
from interop.safetensors_io import copy_atomic
from util import io_utils
from text import vocab_fingerprint
from text import vocab_layout
from util.errors import UserError
from util.hparams import ConfigError

# G's sizes and the hparams that set them (besides D's, which G follows).
_GENERATOR_HPARAMS = dict(
    hidden_size="generator_hidden_size", num_hidden_layers="generator_layers",
    intermediate_size="generator_intermediate_size",
    num_attention_heads="generator_num_attention_heads")
_OVERRIDES = "model_hparam_overrides"


def finetuning_source(user_hparams, data_dir, model_name):
  """Where fine-tuning reads its weights: `init_checkpoint`, else the
  pre-trained model's checkpoints when they exist; None for random
  initialisation or no checkpoint (the runner reports that)."""
  source = user_hparams.get("init_checkpoint")
  if source == "none":
    return None
  if source:
    return source
  model_dir = user_hparams.get("model_dir") or posixpath.join(
      data_dir, "models", model_name)
  directory = checkpoints.pretrained_checkpoint_dir(model_dir)
  try:
    checkpoints.resolve_checkpoint(directory)
  except UserError:
    return None
  return directory


def _adopted(found, user, fields):
  """The hparams of `found` the user left unset, as hparams."""
  adopted = {k: v for k, v in found.items()
             if k in fields and k not in user and k != _OVERRIDES}
  mine = user.get(_OVERRIDES, {})
  overrides = {k: v for k, v in found.get(_OVERRIDES, {}).items()
               if k not in mine}
  if overrides:
    adopted[_OVERRIDES] = overrides
  return adopted


def _flat(hparams):
  """`hparams` as "key=value" items, the overrides' keys among them."""
  items = dict(hparams.get(_OVERRIDES, {}))
  items.update((k, v) for k, v in hparams.items() if k != _OVERRIDES)
  return ", ".join("%s=%s" % (k, items[k]) for k in sorted(items))


def _set_by(user, config, role, key):
  """The user's hparams ("name value") that set `role`'s size `key`."""
  mine = user.get(_OVERRIDES, {})
  own_ffn = (role == "generator" and key == "intermediate_size" and
             getattr(config, "untied_generator", False))
  names = []
  if key in user:  # vocab_size, embedding_size.
    names.append("%s %r" % (key, user[key]))
  if role == "generator":
    name = _GENERATOR_HPARAMS.get(key)
    for hparam in (name, "untied_generator"):
      if hparam in user:
        names.append("%s %r" % (hparam, user[hparam]))
  if key in mine and not own_ffn:  # D's size, which G's follows too.
    names.append("%s.%s %r" % (_OVERRIDES, key, mine[key]))
  return names


def _networks(config, found):
  """(role, "generator " or "", the source's sizes, the config's network
  hparams) of each network both have (fine-tuning has no generator)."""
  for role, theirs in sorted(found["sizes"].items()):
    if role == "discriminator" or hasattr(config, "generator_hparams"):
      yield (role, "generator " if role == "generator" else "", theirs,
             config.network_hparams(role))


def _contradictions(config, found, user):
  """"what: theirs in the source, ours here (hparam ...)" per difference."""
  diffs = []
  for role, prefix, theirs, ours in _networks(config, found):
    for key in sorted(theirs):
      if theirs[key] == ours[key]:
        continue
      setters = _set_by(user, config, role, key)
      diffs.append("%s%s: %r in the source, %r here%s" % (
          prefix, key, theirs[key], ours[key],
          " (from hparam %s)" % ", ".join(setters) if setters else ""))
  for key in convert.STRICT_KEYS:
    if key in found["hparams"] and key in user and (
        user[key] != found["hparams"][key]):
      diffs.append("%s: %r in the source, %r in hparams" % (
          key, found["hparams"][key], user[key]))
  return diffs


def _adopt_vocab(config, user, found, log):
  """Makes the source's vocab.txt the run's: copied to the config's
  `vocab_file` (the data directory's) when that does not exist; a
  UserError naming both files when it holds other tokens."""
  theirs, ours = found["vocab_file"], config.vocab_file
  _check_fingerprint(ours, found)
  if theirs is None or ours == theirs:
    return
  if io_utils.is_file(ours):
    if (vocab_fingerprint.fingerprint(ours) !=
        vocab_fingerprint.fingerprint(theirs)):
      raise UserError(
          "%s holds other tokens than the source's vocabulary %s (the "
          "source's token ids would mean other words). Use the source's "
          "%s (remove %s to have it copied there), or another source." % (
              ours, theirs, posixpath.basename(theirs), ours))
  elif "vocab_file" not in user:  # A missing hparam file is reported later.
    # The data directory's file of the source's kind (text/vocab_layout.py).
    ours = posixpath.join(config.data_dir, vocab_layout.SENTENCEPIECE_FILE
                          if vocab_layout.is_sentencepiece(theirs) else
                          vocab_layout.WORDPIECE_FILE)
    copy_atomic(theirs, ours)
    log("vocabulary: copied the source's %s to %s" % (theirs, ours))


def _check_fingerprint(ours, found):
  """Our own source records its vocabulary's fingerprint (config.json): a
  vocab file with other tokens, even at the same path, is refused."""
  recorded = found.get("vocab_fingerprint")
  if not recorded or not io_utils.is_file(ours):
    return
  fingerprint = vocab_fingerprint.fingerprint(ours)
  if fingerprint != recorded:
    raise UserError(
        "%s holds another vocabulary (fingerprint %s) than the one %s was "
        "pre-trained with (%s, fingerprint %s): its token ids would mean "
        "other words. Use the vocabulary the model was trained with." % (
            ours, fingerprint, found["description"],
            found["vocab_file"] or "its vocab_file", recorded))


def _check_vocab_size(config, adopted, found):
  """The source's vocab_size against the lines of the vocab file used."""
  if "vocab_size" not in adopted or not io_utils.is_file(config.vocab_file):
    return
  size = vocab_layout.vocabulary_size(config.vocab_file)
  if size != config.vocab_size:
    raise UserError("%s has vocab_size %d but %s has %d tokens%s." % (
        found["description"], config.vocab_size, config.vocab_file, size,
        "; this project needs them equal" if found["vocab_file"] else
        ": it is not the source's vocabulary; use the vocab.txt the source "
        "was trained with"))


def _unrecorded(found, config):
  """Sizes a source leaves to hparams (a TF1 checkpoint's heads)."""
  return ["%s%s=%s" % (prefix, key, ours[key])
          for _, prefix, theirs, ours in _networks(config, found)
          for key in ("num_attention_heads", "hidden_act")
          if key not in theirs]


def adopt(config_cls, model_name, data_dir, user_hparams, source,
          into_data_dir=True, log=print):
  """`user_hparams` with everything `source` determines.

  Args:
    config_cls: `configure.PretrainingConfig` or `FinetuningConfig`.
    model_name, data_dir: the run's.
    user_hparams: the user's hparams (dict).
    source: any source `loader.detect` knows.
    into_data_dir: copy the source's vocab.txt to the data directory when
      it has none; False: use the source's file where the user set none.
    log: gets the "adopted from" line and the vocabulary's.
  Returns (hparams, record): the hparams to build the config from, and
    {"source": source, "hparams": what the source set} for the config's
    `adopted_from` (None when it set nothing).
  Raises UserError for a user hparam that contradicts the source, a
    vocabulary other than the source's, or a missing source.
  """
  found = convert.describe(source, convert.heads_given(user_hparams))
  adopted = _adopted(found["hparams"], user_hparams, config_cls.FIELDS)
  if found["vocab_file"] and not into_data_dir and (
      "vocab_file" not in user_hparams):
    adopted["vocab_file"] = found["vocab_file"]
  hparams = convert.merge_hparams(adopted, user_hparams)
  for note in found.get("notes", ()):
    log(note)
  if adopted:
    log("adopted from %s: %s" % (source, _flat(adopted)))
  try:
    config = config_cls(model_name, data_dir, **hparams)
  except ConfigError as e:
    if not adopted:
      raise
    raise UserError("%s (with the sizes adopted from %s)." % (
        str(e).rstrip("."), source))
  diffs = _contradictions(config, found, user_hparams)
  if diffs:
    raise UserError("hparams contradict %s: %s. Drop those hparams to take "
                    "the source's values." % (found["description"],
                                              "; ".join(diffs)))
  unrecorded = _unrecorded(found, config)
  if unrecorded:
    log("not recorded by %s, taken from hparams or defaults: %s" % (
        source, ", ".join(unrecorded)))
  _adopt_vocab(config, user_hparams, found, log)
  _check_vocab_size(config, adopted, found)
  return hparams, (dict(source=source, hparams=adopted) if adopted else None)
