"""Google TF1 ELECTRA checkpoints: export ours, read Google's.

Variable names are those of google-research/electra (model/modeling.py,
run_pretraining.py): `electra/embeddings/word_embeddings`,
`electra/embeddings_project/kernel`,
`electra/encoder/layer_0/attention/self/query/kernel`,
`discriminator_predictions/dense/kernel` (and `dense_1`), the generator tower
under `generator/` (sharing `electra/embeddings` unless its embeddings are
untied) and `generator_predictions/{dense,LayerNorm,output_bias}`. Dense
kernels are 2-D [in, out]. `global_step` and optimizer slots are ignored.

TF1 checkpoints carry no config: sizes come from the tensors' shapes, the
number of heads and `hidden_act` from a `bert_config.json` (or
`config.json`) beside the checkpoint, the generator's from
`generator_config.json` (written by `export_tf1`), else from the caller.
"""

import posixpath
import re

import numpy as np
import tensorflow as tf

from interop import checkpoints
from interop import names
from interop.safetensors_io import copy_atomic
from util import export_marker
from util import io_utils
from text import vocab_layout
from util.errors import UserError
from util.io_utils import write_json_atomic
from util.io_utils import write_text_atomic

_WORD = "electra/embeddings/word_embeddings"
_IGNORED = re.compile(r"(^global_step$|/adam_[mv]$|^beta[12]_power)")
_CONFIGS = {"discriminator": ("bert_config.json", "config.json"),
            "generator": ("generator_config.json",)}


def _prefix(path):
  """The checkpoint prefix of `path` (a prefix or a directory), or None."""
  if io_utils.is_dir(path):
    return tf.train.latest_checkpoint(path)
  if tf.io.gfile.exists(path + ".index"):
    return path
  return None


def is_tf1_checkpoint(path):
  """Whether `path` is (or holds) a checkpoint with Google's names."""
  prefix = _prefix(path)
  if prefix is None:
    return False
  return _WORD in checkpoints.load_checkpoint(
      prefix).get_variable_to_shape_map()


def _tower_sizes(shapes, scope, embeddings_scope):
  """Sizes readable from the shapes of one tower (None if it is absent)."""
  query = "%s/encoder/layer_0/attention/self/query/kernel" % scope
  if query not in shapes:
    return None
  layers = sum(1 for name in shapes if re.match(
      r"%s/encoder/layer_\d+/attention/self/query/kernel$" % scope, name))
  emb = embeddings_scope + "/embeddings/"
  return dict(
      vocab_size=shapes[emb + "word_embeddings"][0],
      embedding_size=shapes[emb + "word_embeddings"][1],
      max_position_embeddings=shapes[emb + "position_embeddings"][0],
      type_vocab_size=shapes[emb + "token_type_embeddings"][0],
      hidden_size=shapes[query][1], num_hidden_layers=layers,
      intermediate_size=shapes[
          "%s/encoder/layer_0/intermediate/dense/kernel" % scope][1])


def _config_beside(directory, role):
  for name in _CONFIGS[role]:
    path = posixpath.join(directory, name)
    if io_utils.is_file(path):
      try:
        return io_utils.read_json(path), path
      except ValueError as e:
        raise UserError("%s is not valid JSON: %s" % (path, e))
  return None, None


def read_tf1(path, num_attention_heads=None):
  """Reads a TF1 checkpoint in the layout of `hf.read_hf_folder`'s result.

  Args:
    path: checkpoint prefix or directory.
    num_attention_heads: {role: heads} used where no config file says.
  """
  prefix = _prefix(path)
  reader = checkpoints.load_checkpoint(prefix)
  shapes = reader.get_variable_to_shape_map()
  has_gen_tower = any(n.startswith("generator/encoder/") for n in shapes)
  gen_emb = ("generator" if any(n.startswith("generator/embeddings/")
                                for n in shapes) else "electra")
  tensors = {"discriminator": {}, "generator": {}}
  ignored = []
  for name in sorted(shapes):
    if _IGNORED.search(name):
      continue
    top = name.split("/")[0]
    if top == "electra" or top == "discriminator_predictions":
      roles = ["discriminator"]
      if top == "electra" and (not has_gen_tower or (
          gen_emb == "electra" and name.startswith("electra/embeddings/"))):
        roles.append("generator")
    elif top in ("generator", "generator_predictions",
                 names.SAMPLING_SCOPE):
      roles = ["generator"]
    else:
      ignored.append(name)
      continue
    value = reader.get_tensor(name)
    if name.endswith("/kernel"):
      value = value.T  # Stored in HF layout, as hf.read_hf_folder does.
    for role in roles:
      tensors[role][names.tf1_to_hf(name)] = value
  sizes = {}
  directory = posixpath.dirname(prefix)
  for role, scope, emb in (("discriminator", "electra", "electra"),
                           ("generator", "generator", gen_emb)):
    role_sizes = _tower_sizes(shapes, scope, emb)
    if role_sizes is None:
      continue
    config, _ = _config_beside(directory, role)
    heads = (config or {}).get("num_attention_heads") or (
        num_attention_heads or {}).get(role)
    if heads:
      role_sizes["num_attention_heads"] = int(heads)
    if config and "hidden_act" in config:
      # Google's "gelu" is the tanh approximation: our "gelu" too.
      role_sizes["hidden_act"] = config["hidden_act"]
    sizes[role] = role_sizes
  return dict(tensors={r: t for r, t in tensors.items() if t}, sizes=sizes,
              ignored=ignored, optional=set(),
              description="TF1 checkpoint %s" % prefix)


def _bert_config(m):
  return {key: m[key] for key in (
      "vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
      "num_attention_heads", "intermediate_size", "hidden_act",
      "hidden_dropout_prob", "attention_probs_dropout_prob",
      "max_position_embeddings", "type_vocab_size", "initializer_range")}


def export_tf1(model, network, vocabulary, output_dir, step=0, log=print):
  """Writes `model` as a TF1 checkpoint `output_dir/model.ckpt-<step>`.

  Args:
    model: a built `ElectraPretrainer`.
    network: its configure_specs.NetworkSpec (sizes for the config files).
    vocabulary: its configure_specs.VocabularySpec (the vocabulary file
      copied beside them).
    step: the value of `global_step`.
  Also writes `bert_config.json` (the discriminator, Google's format),
  `generator_config.json` and the vocabulary (`vocab.txt`, or
  `sentencepiece.model`), and util/export_marker.py's marker last.
  Returns the checkpoint prefix.
  """
  names.refuse_relative_position(network, "tf1")
  values = {}
  for entry in names.model_entries(model):
    values.setdefault(entry.tf1, names.tf1_layout(
        entry, entry.variable.numpy()))
  with export_marker.writing(output_dir, "tf1"):
    path = _write_tf1(values, network, vocabulary.vocab_file, output_dir,
                      step)
  log("exported %d tensors -> %s" % (len(values), path))
  return path


def _write_tf1(values, network, vocab_file, output_dir, step):
  """export_tf1's files: {TF1 name: array} `values` as the checkpoint
  `output_dir/model.ckpt-<step>`, the config files (of the NetworkSpec),
  the vocabulary (`vocab_file`, when it exists)."""
  path = posixpath.join(output_dir, "model.ckpt-%d" % int(step))
  # The name-based V2 checkpoint a TF1 Saver writes, written directly: no
  # graph holding every tensor as a constant (and no .meta file), so
  # ELECTRA-Large exports in a few GB of memory.
  tensor_names = sorted(values) + ["global_step"]
  tf.raw_ops.SaveV2(
      prefix=path, tensor_names=tensor_names,
      shape_and_slices=[""] * len(tensor_names),
      tensors=[np.asarray(values[n]) for n in sorted(values)] + [
          np.int64(step)])
  # The `checkpoint` state file a Saver keeps (tf.train.latest_checkpoint).
  write_text_atomic(posixpath.join(output_dir, "checkpoint"),
                    "model_checkpoint_path: \"%s\"\n"
                    "all_model_checkpoint_paths: \"%s\"\n" % (
                        (posixpath.basename(path),) * 2))
  write_json_atomic(posixpath.join(output_dir, "bert_config.json"),
                    _bert_config(network.network_hparams("discriminator")))
  write_json_atomic(posixpath.join(output_dir, "generator_config.json"),
                    _bert_config(network.network_hparams("generator")))
  if io_utils.is_file(vocab_file):  # vocab.txt or sentencepiece.model
    copy_atomic(vocab_file, posixpath.join(
        output_dir, vocab_layout.SENTENCEPIECE_FILE if
        vocab_layout.is_sentencepiece(vocab_file) else
        vocab_layout.WORDPIECE_FILE))
  return path
