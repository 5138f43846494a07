"""What a loadable source determines, as our hparams.

`describe(source)` reads what an `init_checkpoint` or `--checkpoint`
records: an HF folder's config.json (and tokenizer files), a TF1
checkpoint's tensor shapes (and the bert_config.json beside it), or the
config.json our own runs save beside their checkpoints. It returns our
hparams for those sizes, the sizes per network as the loader compares them
(`loader.target_sizes`), and the source's vocab.txt; interop/adoption.py
applies them to a run. `with_source_hparams` is the plain merge for HF and
TF1 sources (no file written, nothing logged); `pretraining_config` builds
the config of a run of ours from its saved and the user's hparams.
"""

import posixpath

import numpy as np

import configure
from interop import checkpoints
from interop import hf
from interop import hf_tokenizer
from interop import loader
from interop import saved_config
from util import io_utils
from util.errors import UserError

_ENCODER_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "max_position_embeddings",
                 "type_vocab_size", "hidden_act")
# Top-level hparams our own config.json records that fix the weights' shapes
# (strict: a user value that differs is refused) or are defaults the user
# may change (how the networks share weights, the text's casing).
STRICT_KEYS = ("relative_position", "relative_num_buckets",
               "relative_max_distance")
_DEFAULT_KEYS = ("untied_generator", "untied_generator_embeddings",
                 "untied_mlm_output", "do_lower_case", "strip_accents")
_WORD = "electra.embeddings.word_embeddings.weight"
# generator_lr_multiplier for a source without a generator.
ENCODER_ONLY_GENERATOR_LR_MULTIPLIER = 10.0


def _network_hparams(disc, gen):
  """Our size hparams for D's sizes `disc` and G's `gen` (None: the source
  has no generator), each a dict of `hf.SIZE_KEYS`."""
  hparams = dict(vocab_size=disc["vocab_size"],
                 embedding_size=disc["embedding_size"],
                 model_hparam_overrides={k: disc[k] for k in _ENCODER_KEYS
                                         if k in disc})
  default_length = configure.PretrainingConfig.FIELDS["max_seq_length"].default
  if disc["max_position_embeddings"] < default_length:
    hparams["max_seq_length"] = disc["max_position_embeddings"]
  if gen is not None:
    hparams.update(
        generator_hidden_size=float(gen["hidden_size"]) / disc["hidden_size"],
        generator_layers=(float(gen["num_hidden_layers"]) /
                          disc["num_hidden_layers"]),
        generator_intermediate_size=gen["intermediate_size"])
    if "num_attention_heads" in gen:
      hparams["generator_num_attention_heads"] = gen["num_attention_heads"]
  return hparams


def _tying_hparams(tensors):
  """untied_* hparams of an HF or TF1 source whose networks' tables differ.

  The MLM output matrix is compared with G's word table, or with D's when
  G has none of its own (a BERT masked-LM's head sits on its one encoder);
  a source that stores no output matrix ties it (HF drops tied copies).
  """
  gen, disc = tensors.get("generator", {}), tensors.get("discriminator", {})
  hparams = {}
  if _WORD in gen and _WORD in disc and not np.array_equal(gen[_WORD],
                                                           disc[_WORD]):
    hparams["untied_generator_embeddings"] = True
  output = gen.get("generator_lm_head.weight")
  table = gen.get(_WORD, disc.get(_WORD))
  if output is not None and (table is None or
                             not np.array_equal(output, table)):
    hparams["untied_mlm_output"] = True
  return hparams


def _source_folders(source):
  """The folders whose files describe an HF or TF1 source's tokenizer."""
  directory = (source if io_utils.is_dir(source) else
               posixpath.dirname(source))
  return [directory] + [posixpath.join(directory, role)
                        for role in ("discriminator", "generator")]


def _tokenizer_hparams(facts, max_positions):
  """Our hparams of a source's `hf_tokenizer.TokenizerFacts`."""
  hparams = {}
  if facts.do_lower_case is not None:
    hparams["do_lower_case"] = facts.do_lower_case
  if facts.strip_accents is not None:
    hparams["strip_accents"] = facts.strip_accents
  default_length = configure.PretrainingConfig.FIELDS["max_seq_length"].default
  if facts.model_max_length and facts.model_max_length < min(
      default_length, max_positions):
    hparams["max_seq_length"] = facts.model_max_length
  return hparams


def _describe_foreign(source, num_attention_heads):
  data = loader.read_source(source, num_attention_heads)
  sizes = data["sizes"]
  disc = sizes.get("discriminator") or sizes.get("generator")
  hparams = _network_hparams(disc, sizes.get("generator"))
  hparams.update(_tying_hparams(data["tensors"]))
  if "generator" not in sizes:
    # An encoder-only source: G starts fresh beside a trained D and must
    # catch up (docs/method.md §3, measured in
    # studies/configs/released_minilm.md).
    hparams["generator_lr_multiplier"] = ENCODER_ONLY_GENERATOR_LR_MULTIPLIER
  facts = hf_tokenizer.tokenizer_of(_source_folders(source))
  hparams.update(_tokenizer_hparams(facts, disc["max_position_embeddings"]))
  return dict(description=data["description"], hparams=hparams,
              sizes=sizes, vocab_file=facts.vocab_file, notes=facts.notes)


def _describe_ours(source):
  prefix = checkpoints.resolve_checkpoint(source)
  path = saved_config.config_beside(prefix)
  if path is None:  # Nothing recorded: the sizes are the hparams'.
    return dict(description="checkpoint %s" % prefix, hparams={}, sizes={},
                vocab_file=None)
  saved = saved_config.read_saved(path)
  keys = hf.SIZE_KEYS
  disc = saved_config.saved_network_hparams(saved)
  sizes = {"discriminator": {k: disc[k] for k in keys if k in disc}}
  if "generator_hparams" in saved:
    gen = saved_config.saved_network_hparams(saved, "generator")
    sizes["generator"] = {k: gen[k] for k in keys if k in gen}
  hparams = _network_hparams(sizes["discriminator"], sizes.get("generator"))
  relative = STRICT_KEYS if saved.get("relative_position") else STRICT_KEYS[:1]
  hparams.update((k, saved[k]) for k in relative + _DEFAULT_KEYS
                 if saved.get(k) is not None)
  vocab = saved.get("vocab_file")
  return dict(description="checkpoint %s (its config %s)" % (prefix, path),
              hparams=hparams, sizes=sizes,
              vocab_file=vocab if vocab and io_utils.is_file(vocab) else None,
              vocab_fingerprint=saved.get("vocab_fingerprint"))


def describe(source, num_attention_heads=None):
  """What `source` (any kind `loader.detect` knows) determines.

  Args:
    source: an HF folder (or pair), a TF1 checkpoint, or ours.
    num_attention_heads: {role: heads} for a TF1 source without a config.
  Returns dict: `description` (for messages); `hparams`, our hparams it
    sets (sizes, generator sizes, tying, casing, relative position);
    `sizes` {role: `hf.SIZE_KEYS` it records}, as the loader checks them;
    `vocab_file`, its vocab.txt or None.
  Raises UserError when there is no such source.
  """
  if loader.detect(source) == "ours":
    return _describe_ours(source)
  return _describe_foreign(source, num_attention_heads)


def source_hparams(source, num_attention_heads=None):
  """Our hparams for `source`, with `vocab_file` its vocab.txt if any."""
  found = describe(source, num_attention_heads)
  hparams = dict(found["hparams"])
  if found["vocab_file"]:
    hparams["vocab_file"] = found["vocab_file"]
  return hparams


def merge_hparams(source, user):
  """`source` hparams under the user's; model_hparam_overrides merged."""
  merged = dict(source)
  merged.update(user)
  if "model_hparam_overrides" in source and "model_hparam_overrides" in user:
    merged["model_hparam_overrides"] = dict(
        source["model_hparam_overrides"], **user["model_hparam_overrides"])
  return merged


def heads_given(user_hparams):
  """{role: heads} the user set, for a TF1 source that records none."""
  heads = {"discriminator": user_hparams.get(
      "model_hparam_overrides", {}).get("num_attention_heads"),
           "generator": user_hparams.get("generator_num_attention_heads")}
  return {role: n for role, n in heads.items() if n}


def with_source_hparams(user_hparams, fields):
  """`user_hparams` with what an HF or TF1 `init_checkpoint` records (sizes,
  tying, its vocab.txt) filled in where the user set nothing; only keys of
  `fields` (a config class's FIELDS). Our own checkpoints and "none" add
  nothing. Neither checks nor logs: the scripts adopt sources with
  interop/adoption.py.
  """
  source = user_hparams.get("init_checkpoint")
  if not source or source == "none" or not loader.is_foreign(source):
    return user_hparams
  found = source_hparams(source, heads_given(user_hparams))
  return merge_hparams({k: v for k, v in found.items() if k in fields},
                       user_hparams)


def pretraining_config(model_name, data_dir, hparams):
  """A `PretrainingConfig` of `hparams` (UserError naming bad ones)."""
  try:
    return configure.PretrainingConfig(model_name, data_dir, **hparams)
  except configure.ConfigError as e:
    raise UserError("%s (hparams taken from the model's config.json and "
                    "--hparams)" % e)
