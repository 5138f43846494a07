"""One loader for every checkpoint kind: `load_into(model, source)`.

Sources it detects:
  * an HF folder (config.json and weights in any layout of
    interop/weight_files.py: model.safetensors, pytorch_model.bin,
    tf_model.h5, sharded safetensors or .bin): ELECTRA
    (`ElectraForPreTraining`, `ElectraForMaskedLM`, `ElectraModel`) or BERT
    (`BertModel`, `BertForMaskedLM`: the encoder loads as the
    discriminator's, its MLM head as the generator's when the shapes fit);
  * a folder holding HF `discriminator/` and `generator/` folders (what
    export_model.py --format hf writes): both networks;
  * a Google TF1 ELECTRA checkpoint (interop/tf1.py);
  * our own checkpoints (prefix, directory, or pre-training model dir).

Every variable of the target is loaded or logged as "not in the source,
initialised fresh"; source tensors nothing reads are logged too.
"""

import posixpath

import tensorflow as tf

from interop import checkpoints
from interop import hf
from interop import names
from interop import tf1
from interop import weight_files
from util import export_marker
from util import io_utils
from util.errors import UserError


def detect(source):
  """"hf", "hf_pair", "tf1" or "ours" (UserError if none fits; for a
  directory with a config.json, one naming what it holds and the weight
  files an HF folder needs)."""
  if hf.is_hf_folder(source):
    return "hf"
  if (io_utils.is_dir(source) and
      any(hf.is_hf_folder(posixpath.join(source, role))
          for role in hf.ARCHITECTURES)):
    return "hf_pair"
  if tf1.is_tf1_checkpoint(source):
    return "tf1"
  try:
    checkpoints.resolve_checkpoint(source)  # UserError when nothing is.
  except UserError:
    if (source and io_utils.is_file(posixpath.join(source, "config.json"))
        and not checkpoints.newest_on_disk(source) and
        not checkpoints.newest_on_disk(
            checkpoints.pretrained_checkpoint_dir(source))):
      raise UserError(weight_files.no_weights_message(
          source, also=" (Hugging Face) or a TensorFlow checkpoint (ours "
          "or Google's)")) from None
    raise
  return "ours"


def is_foreign(source):
  """Whether `source` is an HF folder (or pair) or a TF1 checkpoint."""
  try:
    return bool(source) and detect(source) != "ours"
  except UserError:
    return False


def read_source(source, num_attention_heads=None):
  """The tensors of an HF or TF1 source in the layout of `hf.read_hf_folder`.

  `num_attention_heads` ({role: heads}) fills in what a TF1 checkpoint
  without a config beside it cannot tell. An export of ours that did not
  finish (util/export_marker.py) is a UserError naming it.
  """
  kind = detect(source)
  _check_finished(source, kind)
  if kind == "hf":
    return hf.read_hf_folder(source)
  if kind == "tf1":
    return tf1.read_tf1(source, num_attention_heads)
  if kind == "hf_pair":
    merged = dict(tensors={}, sizes={}, ignored=[], optional=set(),
                  description="Hugging Face folders in %s" % source)
    for role in hf.ARCHITECTURES:
      folder = posixpath.join(source, role)
      if not hf.is_hf_folder(folder):
        continue
      part = hf.read_hf_folder(folder)
      # Each folder offers its own network: a BERT/discriminator folder under
      # generator/ would be a mix-up, so take it for the role it names.
      tensors = part["tensors"].get(role) or next(iter(
          part["tensors"].values()))
      merged["tensors"][role] = tensors
      merged["sizes"][role] = next(iter(part["sizes"].values()))
      merged["ignored"] += part["ignored"]
    return merged
  raise ValueError("read_source takes HF or TF1 sources, not %s" % kind)


def _check_finished(source, kind):
  """Refuses an unfinished export: the folder export_model.py wrote (an HF
  role folder's parent, a TF1 checkpoint's directory) is marked in
  progress and has no completion marker. Folders from elsewhere have
  neither, and load."""
  folder = source if io_utils.is_dir(source) else posixpath.dirname(source)
  if kind == "hf" and posixpath.basename(folder.rstrip("/")) in (
      hf.ARCHITECTURES):
    export_marker.check(posixpath.dirname(folder.rstrip("/")),
                        required=False)
  export_marker.check(folder, required=False)


def target_sizes(model):
  """{role: our size hparams} of an `ElectraPretrainer` or encoder."""
  def encoder_sizes(encoder):
    c = dict(encoder.get_config(), **encoder.embeddings.get_config())
    return {key: c[key] for key in hf.SIZE_KEYS}
  if not hasattr(model, "discriminator"):
    return {"discriminator": encoder_sizes(model)}
  return {"discriminator": encoder_sizes(model.discriminator.encoder),
          "generator": encoder_sizes(model.generator.encoder)}


def check_sizes(ours, theirs, description):
  """UserError naming every size hparam that differs from the source's."""
  diffs = []
  for role in sorted(set(ours) & set(theirs)):
    for key in hf.SIZE_KEYS:
      if key in theirs[role] and theirs[role][key] != ours[role][key]:
        diffs.append("%s %s: %r in the source, %r in this model" % (
            role, key, theirs[role][key], ours[role][key]))
  if diffs:
    raise UserError("%s does not match this model's sizes (%s). Build the "
                    "model with the source's sizes (the scripts adopt them: "
                    "interop/adoption.py)." % (description, "; ".join(diffs)))


def _assign(entries, source, log):
  """Assigns source tensors to entries, each variable once.

  Returns (refs of the assigned variables, their TF1 names, the source
  keys "role:name" nothing read).
  """
  done, loaded = set(), []
  used = set()
  for entry in entries:
    tensors = source["tensors"].get(entry.role, {})
    key = entry.hf
    if key not in tensors and key == "generator_lm_head.weight":
      key = "electra.embeddings.word_embeddings.weight"  # Tied source.
    if key not in tensors:
      continue
    if entry.variable.ref() in done:
      used.add((entry.role, key))  # Shared by both roles, loaded once.
      continue
    try:
      value = names.from_hf_layout(entry, tensors[key])
    except ValueError as e:
      if (entry.role, key) in source["optional"]:
        log("not loaded (shapes differ), initialised fresh: %s (%s)" % (
            entry.tf1, e))
        continue
      raise UserError("%s does not fit this model: %s." % (
          source["description"], e))
    entry.variable.assign(value.astype(entry.variable.dtype.as_numpy_dtype))
    done.add(entry.variable.ref())
    used.add((entry.role, key))
    loaded.append(entry.tf1)
  unused = sorted("%s:%s" % (role, key)
                  for role, tensors in source["tensors"].items()
                  for key in tensors if (role, key) not in used)
  return done, loaded, unused


_LAYER_PREFIX = "electra.encoder.layer.%d."


def _generator_from_encoder_layers(model, data, log):
  """Offers an encoder-only source's bottom layers to the generator.

  A source without a generator transformer (BertModel, ElectraModel, a
  sentence-embedding folder) leaves an untied generator fresh, unless the
  generator has the discriminator's width, heads and FFN: then its k blocks
  start from the source's k bottom blocks (docs/method.md §15), and only
  its MLM head is new. Adds those tensors under the "generator" role of
  `data` in place.
  """
  if not hasattr(model, "generator"):
    return
  gen_encoder = model.generator.encoder
  if gen_encoder is model.discriminator.encoder:
    return
  source = data["tensors"].get("discriminator", {})
  generator = data["tensors"].get("generator", {})
  if not source or any(k.startswith("electra.encoder.") for k in generator):
    return
  sizes = target_sizes(model)
  shape_keys = ("hidden_size", "num_attention_heads", "intermediate_size",
                "hidden_act")
  theirs = data["sizes"].get("discriminator", {})
  if any(sizes["generator"][k] != theirs.get(k) for k in shape_keys):
    return
  layers = sizes["generator"]["num_hidden_layers"]
  offered = {k: v for k, v in source.items() for i in range(layers)
             if k.startswith(_LAYER_PREFIX % i)}
  if not offered:
    return
  data["tensors"]["generator"] = dict(generator, **offered)
  log("generator: its %d transformer layers start from the source's bottom "
      "%d encoder layers (the source has no generator)" % (layers, layers))


def _log_unused(keys, log, shown=4):
  """One line per role ("generator:..." keys) of source tensors not read."""
  by_role = {}
  for key in keys:
    by_role.setdefault(key.split(":")[0] if ":" in key else "other",
                       []).append(key)
  for role, role_keys in sorted(by_role.items()):
    more = len(role_keys) - shown
    log("in the source, not used: %d %s tensors (%s%s)" % (
        len(role_keys), role, ", ".join(role_keys[:shown]),
        ", and %d more" % more if more > 0 else ""))


def load_into(model, source, num_attention_heads=None, log=print):
  """Loads `source` into a built `model` (variables exist).

  Args:
    model: an `ElectraPretrainer` or an `ElectraEncoder`.
    source: any source `detect` recognises.
    num_attention_heads: {role: heads} for a TF1 source without a config.
    log: called with one line per finding.
  Returns dict(kind, loaded, fresh, unused): loaded and fresh variables
    (fresh: not in the source, left as initialised), unused source keys.
  Raises UserError on a missing source, other sizes or shapes.
  """
  kind = detect(source)
  variables = model.variables
  if kind == "ours":
    prefix = checkpoints.resolve_checkpoint(source)
    if hasattr(model, "discriminator"):
      try:
        tf.train.Checkpoint(model=model).restore(
            prefix).expect_partial().assert_existing_objects_matched()
      except (AssertionError, ValueError) as e:
        raise UserError("checkpoint %s does not match this model (other "
                        "sizes or sampling mode in hparams?): %s" % (
                            prefix, str(e).splitlines()[0]))
    else:
      checkpoints.restore_discriminator(model, prefix)
    log("loaded our checkpoint %s" % prefix)
    return dict(kind=kind, loaded=[v.name for v in variables], fresh=[],
                unused=[])
  if getattr(model, "relative_position_bias", None) is not None or getattr(
      getattr(model, "config", None), "relative_position", False):
    raise UserError("%s has no relative position bias; set hparam "
                    "relative_position to false to load it." % source)
  data = read_source(source, num_attention_heads)
  check_sizes(target_sizes(model), data["sizes"], data["description"])
  _generator_from_encoder_layers(model, data, log)
  done, loaded, unused = _assign(names.model_entries(model), data, log)
  fresh = [v.name for v in variables if v.ref() not in done]
  log("loaded %d tensors from %s" % (len(loaded), data["description"]))
  for name in fresh:
    log("not in the source, initialised fresh: %s" % name)
  _log_unused(unused + data["ignored"], log)
  return dict(kind=kind, loaded=loaded, fresh=fresh,
              unused=unused + data["ignored"])
