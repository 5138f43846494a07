"""Which of our variables is which tensor in Google's TF1 and in HF checkpoints.

One `Entry` per variable of our model, with its name in Google's TF1 ELECTRA
layout (model/modeling.py and run_pretraining.py of google-research/electra)
and in Hugging Face's (`ElectraForPreTraining`, `ElectraForMaskedLM`). Values
convert losslessly (reshape and transpose only):

  * our attention kernels are [hidden, heads, head_dim] (query/key/value) and
    [heads, head_dim, hidden] (output), biases [heads, head_dim]; TF1 keeps
    them as 2-D [in, out] dense kernels and 1-D biases;
  * HF (torch `nn.Linear`) keeps every dense kernel transposed, [out, in];
    LayerNorm gamma/beta are `weight`/`bias`, embedding tables are as ours.

The architectures agree tensor for tensor: embeddings = LayerNorm(word +
position + token type) at embedding_size, an `embeddings_project` dense to
hidden_size when the sizes differ, post-LayerNorm BERT blocks (epsilon 1e-12),
discriminator head dense(hidden, act) -> dense(1), generator head
dense(embedding_size, act) -> LayerNorm -> h E^T + output_bias.
"""

import collections

import numpy as np

from util.errors import UserError

# tf1: name in Google's layout; hf: name in an HF state dict (role-relative,
# see `model_entries`); variable: ours; role: "discriminator" or "generator",
# the HF folder (and TF1 tower) holding it.
Entry = collections.namedtuple("Entry", "tf1 hf variable role")

# TF1 scope of the HP sampling head (ours only; Google has none).
SAMPLING_SCOPE = "sampling_predictions"

# Sub-paths of one TransformerScaffold block (ours -> TF1), below layer_<i>/.
_BLOCK = (
    ("self_attention/query/", "attention/self/query/"),
    ("self_attention/key/", "attention/self/key/"),
    ("self_attention/value/", "attention/self/value/"),
    ("self_attention/attention_output/", "attention/output/dense/"),
    ("self_attention_layer_norm/", "attention/output/LayerNorm/"),
    ("intermediate/", "intermediate/dense/"),
    ("output/", "output/dense/"),
    ("output_layer_norm/", "output/LayerNorm/"),
)
_LEAF_TF1 = {"kernel:0": "kernel", "bias:0": "bias", "gamma:0": "gamma",
             "beta:0": "beta"}
_LEAF_HF = {"kernel": "weight", "bias": "bias", "gamma": "weight",
            "beta": "bias"}


def _relative_name(variable, layer):
  """`variable`'s name below `layer`'s scope, e.g. "output/kernel:0"."""
  name = "/" + variable.name
  marker = "/" + layer.name + "/"
  if marker not in name:
    raise ValueError("variable %s is not under layer %s" % (variable.name,
                                                           layer.name))
  return name.split(marker, 1)[1]


def tf1_to_hf(tf1_name):
  """The HF state-dict name of a TF1 name."""
  parts = tf1_name.split("/")
  head = parts[0]
  if head == "discriminator_predictions":
    layer = {"dense": "dense", "dense_1": "dense_prediction"}[parts[1]]
    return "discriminator_predictions.%s.%s" % (layer, _LEAF_HF[parts[2]])
  if head == SAMPLING_SCOPE:
    return "%s.%s" % (head, ".".join(
        [_LEAF_HF.get(p, p) for p in parts[1:]]))
  if head == "generator_predictions":
    if parts[1] == "output_bias":
      return "generator_lm_head.bias"
    if parts[1] == "output_embeddings":
      return "generator_lm_head.weight"
    return "generator_predictions.%s.%s" % (parts[1], _LEAF_HF[parts[2]])
  # A tower: electra/... or generator/... (HF names both "electra." in their
  # own folders).
  rest = parts[1:]
  if rest[0] == "embeddings" and len(rest) == 2:
    return "electra.embeddings.%s.weight" % rest[1]
  if rest[-1] in _LEAF_HF:
    rest = rest[:-1] + [_LEAF_HF[rest[-1]]]
  if rest[0] == "encoder":
    rest = ["encoder", "layer", rest[1].split("_")[1]] + rest[2:]
  return "electra." + ".".join(rest)


def _entry(tf1, variable, role):
  return Entry(tf1, tf1_to_hf(tf1), variable, role)


def embedding_entries(embeddings, scope, role):
  """Entries of an `ElectraEmbeddings` under TF1 scope `scope/embeddings`."""
  prefix = scope + "/embeddings/"
  return [
      _entry(prefix + "word_embeddings", embeddings.word_embeddings.embeddings,
             role),
      _entry(prefix + "position_embeddings",
             embeddings.position_embeddings.weights[0], role),
      _entry(prefix + "token_type_embeddings",
             embeddings.type_embeddings.embeddings, role),
      _entry(prefix + "LayerNorm/gamma", embeddings.layer_norm.gamma, role),
      _entry(prefix + "LayerNorm/beta", embeddings.layer_norm.beta, role),
  ]


def encoder_entries(encoder, scope, role, embeddings_scope=None):
  """Entries of an `ElectraEncoder` (blocks, projection, embeddings).

  `scope` is "electra" (discriminator) or "generator"; the embeddings sit
  under `embeddings_scope` (default `scope`; "electra" for a generator that
  shares D's embeddings). Raises ValueError on a relative position bias (no
  TF1 or HF counterpart; callers turn it into a UserError first).
  """
  if encoder.relative_position_bias is not None:
    raise ValueError("relative position bias has no TF1/HF counterpart")
  entries = embedding_entries(encoder.embeddings, embeddings_scope or scope,
                              role)
  if encoder.embedding_projection is not None:
    for leaf in ("kernel", "bias"):
      entries.append(_entry(
          "%s/embeddings_project/%s" % (scope, leaf),
          getattr(encoder.embedding_projection, leaf), role))
  for i, layer in enumerate(encoder.transformer_layers):
    for variable in layer.weights:
      relative = _relative_name(variable, layer)
      sub, leaf = relative.rsplit("/", 1)
      tf1_sub = dict(_BLOCK)[sub + "/"]
      entries.append(_entry("%s/encoder/layer_%d/%s%s" % (
          scope, i, tf1_sub, _LEAF_TF1[leaf]), variable, role))
  return entries


def discriminator_head_entries(head):
  """Entries of a `ReplacedTokenHead`."""
  return [
      _entry("discriminator_predictions/dense/kernel", head.dense.kernel,
             "discriminator"),
      _entry("discriminator_predictions/dense/bias", head.dense.bias,
             "discriminator"),
      _entry("discriminator_predictions/dense_1/kernel", head.logit.kernel,
             "discriminator"),
      _entry("discriminator_predictions/dense_1/bias", head.logit.bias,
             "discriminator"),
  ]


def generator_head_entries(head, scope="generator_predictions"):
  """Entries of a generator `VocabularyHead` (untied: + its table).

  `scope` "generator_predictions" is the MLM head; `SAMPLING_SCOPE` the
  sampling head of HP modes (our extension of Google's layout).
  """
  p = scope + "/"
  entries = [
      _entry(p + "dense/kernel", head.dense.kernel, "generator"),
      _entry(p + "dense/bias", head.dense.bias, "generator"),
      _entry(p + "LayerNorm/gamma", head.layer_norm.gamma, "generator"),
      _entry(p + "LayerNorm/beta", head.layer_norm.beta, "generator"),
      _entry(p + "output_bias", head.output_bias, "generator"),
  ]
  if head.output_embeddings is not None:
    # Not in Google's code (always tied); HF's untied generator_lm_head.
    entries.append(_entry(p + "output_embeddings", head.output_embeddings,
                          "generator"))
  return entries


def model_entries(model, with_sampling_head=True):
  """Every mapped variable of `model`, discriminator's first.

  `model` is an `ElectraPretrainer` (both networks and heads) or an
  `ElectraEncoder` (fine-tuning: the discriminator's encoder only). A
  variable shared by both networks (the tied embeddings, or the whole
  encoder when `untied_generator` is false) appears once per role, so that
  each HF folder is complete; loaders assign it once. The HP sampling
  head (`with_sampling_head`) has no HF or Google counterpart: TF1 exports
  keep it under `SAMPLING_SCOPE`, HF exports leave it out.
  Returns a list of `Entry`.
  """
  if not hasattr(model, "discriminator"):
    return encoder_entries(model, "electra", "discriminator")
  disc = model.discriminator
  entries = encoder_entries(disc.encoder, "electra", "discriminator")
  entries += discriminator_head_entries(disc.head)
  gen_encoder = model.generator.encoder
  if gen_encoder is disc.encoder:
    gen_scope, emb_scope = "electra", "electra"
  else:
    gen_scope = "generator"
    emb_scope = ("generator" if gen_encoder.embeddings is not
                 disc.encoder.embeddings else "electra")
  entries += encoder_entries(gen_encoder, gen_scope, "generator", emb_scope)
  entries += generator_head_entries(model.generator.mlm_head)
  sampling_head = getattr(model.generator, "sampling_head", None)
  if with_sampling_head and sampling_head is not None:
    entries += generator_head_entries(sampling_head, SAMPLING_SCOPE)
  return entries


def tf1_layout(entry, value):
  """Our value -> its TF1 array (2-D dense kernels, 1-D biases)."""
  value = np.asarray(value)
  name = entry.tf1
  if name.endswith("/bias") and value.ndim > 1:
    return value.reshape(-1)
  if name.endswith("/kernel") and value.ndim == 3:
    if "/attention/output/" in name:
      return value.reshape(-1, value.shape[-1])
    return value.reshape(value.shape[0], -1)
  return value


def hf_layout(entry, value):
  """Our value -> its HF array (TF1 layout, dense kernels transposed)."""
  value = tf1_layout(entry, value)
  if entry.tf1.endswith("/kernel"):
    return value.T
  return value


def from_tf1_layout(entry, array):
  """A TF1-layout array -> our variable's shape (ValueError if it cannot)."""
  array = np.asarray(array)
  shape = tuple(entry.variable.shape)
  expected = tf1_layout(entry, np.zeros(shape, np.float32)).shape
  if tuple(array.shape) != tuple(expected):
    raise ValueError("%s has shape %s where this model needs %s" % (
        entry.tf1, list(array.shape), list(expected)))
  return array.reshape(shape)


def from_hf_layout(entry, array):
  """An HF-layout array -> our variable's shape."""
  array = np.asarray(array)
  if entry.tf1.endswith("/kernel"):
    array = array.T
  return from_tf1_layout(entry, array)


def refuse_relative_position(network, fmt):
  """UserError for a model with a relative position bias (neither Google's
  nor HF's ELECTRA has one), before anything is written.

  Args:
    network: the model's configure_specs.NetworkSpec.
    fmt: the export format, "hf" or "tf1".
  """
  if network.relative_position:
    raise UserError("this model uses a relative position bias "
                    "(relative_position true), which %s ELECTRA does not "
                    "have; it cannot be exported to %s." % (
                        "Hugging Face" if fmt == "hf" else "Google's", fmt))
