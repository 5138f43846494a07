"""Hugging Face folders: export ours, read ELECTRA and BERT ones.

An exported folder (`OUT/discriminator/`, `OUT/generator/`) holds
`config.json`, `model.safetensors`, `vocab.txt`, `tokenizer_config.json` and
`special_tokens_map.json`, and loads with transformers'
`ElectraForPreTraining` / `ElectraForMaskedLM.from_pretrained`. A model of
a SentencePiece vocabulary gets `tokenizer.json` (a fast tokenizer,
interop/hf_sentencepiece.py) and the model as `sentencepiece.model`
instead of `vocab.txt`.

Activation names differ: our "gelu" is the tanh approximation (as Google's
ELECTRA and tf-models-official compute it), which HF calls "gelu_new"; HF's
"gelu" is the exact erf form, ours "gelu_exact". One difference cannot be
mapped: HF's `ElectraGeneratorPredictions` always applies the exact erf GELU
in the generator head, whatever `hidden_act` says, while Google's code and
ours apply `hidden_act`. A model whose `hidden_act` is "gelu_exact" therefore
matches HF everywhere; with "gelu" (tanh) the generator head's activation
differs by at most 3e-4 per unit (the encoder and the discriminator match).
"""

import posixpath

from interop import hf_sentencepiece
from interop import names
from interop import safetensors_io
from interop import weight_files
from util import export_marker
from util import io_utils
from text import vocab_layout
from util.errors import UserError
from util.io_utils import write_json_atomic

# Ours -> HF and HF -> ours.
_TO_HF_ACT = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu",
              "tanh": "tanh", "silu": "silu", "swish": "silu"}
_FROM_HF_ACT = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                "gelu_fast": "gelu", "gelu": "gelu_exact", "relu": "relu",
                "tanh": "tanh", "silu": "silu", "swish": "silu"}
ARCHITECTURES = {"discriminator": "ElectraForPreTraining",
                 "generator": "ElectraForMaskedLM"}
# Size hparams a source fixes; checked against ours by the loader.
SIZE_KEYS = ("vocab_size", "embedding_size", "hidden_size",
             "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "max_position_embeddings", "type_vocab_size", "hidden_act")
_SPECIAL = dict(unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                cls_token="[CLS]", mask_token="[MASK]")


def hf_config(network_hparams, architecture, tie_word_embeddings=True):
  """The `config.json` dict of an HF ElectraConfig for one network's
  `config.network_hparams(role)`."""
  m = network_hparams
  if m["hidden_act"] not in _TO_HF_ACT:
    raise UserError("hidden_act %r has no Hugging Face equivalent; use one "
                    "of %s." % (m["hidden_act"], ", ".join(sorted(
                        _TO_HF_ACT))))
  return dict(
      architectures=[architecture], model_type="electra",
      vocab_size=m["vocab_size"], embedding_size=m["embedding_size"],
      hidden_size=m["hidden_size"],
      num_hidden_layers=m["num_hidden_layers"],
      num_attention_heads=m["num_attention_heads"],
      intermediate_size=m["intermediate_size"],
      hidden_act=_TO_HF_ACT[m["hidden_act"]],
      hidden_dropout_prob=m["hidden_dropout_prob"],
      attention_probs_dropout_prob=m["attention_probs_dropout_prob"],
      max_position_embeddings=m["max_position_embeddings"],
      type_vocab_size=m["type_vocab_size"],
      initializer_range=m["initializer_range"], layer_norm_eps=1e-12,
      pad_token_id=0, position_embedding_type="absolute",
      summary_type="first", summary_use_proj=True,
      summary_activation="gelu", summary_last_dropout=0.1,
      tie_word_embeddings=tie_word_embeddings, torch_dtype="float32")


def sizes_from_hf_config(config, path):
  """Our size hparams (SIZE_KEYS) from an HF ELECTRA/BERT config dict."""
  if config.get("position_embedding_type", "absolute") != "absolute":
    raise UserError("%s: position_embedding_type %r is not supported (only "
                    "\"absolute\")." % (path,
                                        config["position_embedding_type"]))
  eps = config.get("layer_norm_eps", 1e-12)
  if abs(eps - 1e-12) > 1e-15:
    raise UserError("%s: layer_norm_eps %g cannot be adopted: this "
                    "project's LayerNorms are fixed at epsilon 1e-12." % (
                        path, eps))
  act = config.get("hidden_act", "gelu")
  if act not in _FROM_HF_ACT:
    raise UserError("%s: hidden_act %r is not supported; supported: %s." % (
        path, act, ", ".join(sorted(_FROM_HF_ACT))))
  try:
    sizes = {key: int(config[key]) for key in SIZE_KEYS
             if key not in ("embedding_size", "hidden_act")}
  except KeyError as e:
    raise UserError("%s lacks %s." % (path, e))
  sizes["embedding_size"] = int(config.get("embedding_size",
                                           sizes["hidden_size"]))
  sizes["hidden_act"] = _FROM_HF_ACT[act]
  return sizes


def _write_tokenizer_files(output_dir, max_seq_length, vocabulary,
                           sp_tokenizer=None):
  """The tokenizer files of a folder: ElectraTokenizer's (vocab.txt of a
  configure_specs.VocabularySpec), or with `sp_tokenizer` (a
  SentencePieceTokenizer) a fast tokenizer's; `max_seq_length` is their
  model_max_length."""
  write_json_atomic(posixpath.join(output_dir, "special_tokens_map.json"),
                    _SPECIAL)
  settings = dict(_SPECIAL, model_max_length=max_seq_length)
  if sp_tokenizer is None:
    safetensors_io.copy_atomic(vocabulary.vocab_file,
                               posixpath.join(output_dir, "vocab.txt"))
    settings.update(tokenizer_class="ElectraTokenizer",
                    do_lower_case=vocabulary.do_lower_case,
                    strip_accents=vocabulary.strip_accents,
                    tokenize_chinese_chars=True)
  else:
    safetensors_io.copy_atomic(
        sp_tokenizer.model_file,
        posixpath.join(output_dir, vocab_layout.SENTENCEPIECE_FILE))
    write_json_atomic(posixpath.join(output_dir, "tokenizer.json"),
                      hf_sentencepiece.tokenizer_json(sp_tokenizer))
    settings.update(tokenizer_class="PreTrainedTokenizerFast",
                    clean_up_tokenization_spaces=False)
  write_json_atomic(posixpath.join(output_dir, "tokenizer_config.json"),
                    settings)


def _tokenizer_source(network, vocabulary, sentencepiece_model):
  """The checked SentencePieceTokenizer of `sentencepiece_model` (of the
  NetworkSpec's vocab_size), or None for the VocabularySpec's vocab_file
  (UserError if that is missing)."""
  if sentencepiece_model:
    return hf_sentencepiece.load_checked(sentencepiece_model,
                                         network.vocab_size)
  if not io_utils.is_file(vocabulary.vocab_file):
    raise UserError("vocab file %s not found; set hparam vocab_file (or "
                    "give the SentencePiece model)." % vocabulary.vocab_file)
  return None


def _write_folder(folder, tensors, hf_config_dict, network, vocabulary,
                  sp_tokenizer):
  """One HF folder: `tensors` as model.safetensors, config.json, the
  tokenizer files (of `vocabulary`, or `sp_tokenizer`; `network`'s
  max_seq_length)."""
  io_utils.make_dirs(folder)
  safetensors_io.save(posixpath.join(folder, "model.safetensors"), tensors,
                      metadata={"format": "pt"})
  write_json_atomic(posixpath.join(folder, "config.json"), hf_config_dict)
  _write_tokenizer_files(folder, network.max_seq_length, vocabulary,
                         sp_tokenizer)


def export_hf(model, network, vocabulary, output_dir, log=print,
              sentencepiece_model=None):
  """Writes `model` (an `ElectraPretrainer`) as two HF folders.

  Args:
    model: a built `ElectraPretrainer` (variables exist).
    network: its configure_specs.NetworkSpec (sizes, max_seq_length).
    vocabulary: its configure_specs.VocabularySpec (vocab_file,
      do_lower_case).
    output_dir: gets `discriminator/` and `generator/`.
    sentencepiece_model: the SentencePiece model the model's data was
      built with, instead of vocabulary.vocab_file.
  Returns {role: folder path}. util/export_marker.py's marker is written
  last, in `output_dir`.
  Raises UserError for a relative position bias (HF ELECTRA has none), a
  missing vocabulary, or a SentencePiece model without the special pieces
  or of another size than the model's vocabulary.
  """
  names.refuse_relative_position(network, "hf")
  sp_tokenizer = _tokenizer_source(network, vocabulary, sentencepiece_model)
  entries = names.model_entries(model, with_sampling_head=False)
  tied = model.generator.mlm_head.output_embeddings is None
  folders = {}
  with export_marker.writing(output_dir, "hf"):
    for role in ("discriminator", "generator"):
      tensors = {e.hf: names.hf_layout(e, e.variable.numpy())
                 for e in entries if e.role == role}
      folder = posixpath.join(output_dir, role)
      _write_folder(folder, tensors, hf_config(
          network.network_hparams(role), ARCHITECTURES[role],
          tie_word_embeddings=tied or role == "discriminator"), network,
                    vocabulary, sp_tokenizer)
      log("exported %s: %d tensors -> %s" % (role, len(tensors), folder))
      folders[role] = folder
  sampling_head = getattr(model.generator, "sampling_head", None)
  if sampling_head is not None:
    log("not exported (no Hugging Face counterpart): the sampling head, "
        "%d tensors" % len(sampling_head.weights))
  return folders


def export_hf_encoder(encoder, network, vocabulary, output_dir,
                      sentencepiece_model=None):
  """Writes a fine-tuned model's encoder as one HF `ElectraModel` folder
  (`AutoModel.from_pretrained` loads it), with its tokenizer files and
  util/export_marker.py's marker.

  Args:
    encoder: the built `ElectraEncoder` of a `FinetuningModel`.
    network, vocabulary: its NetworkSpec and VocabularySpec (of the
      `FinetuningConfig`), as in `export_hf`.
    output_dir: the folder to write.
    sentencepiece_model: as in `export_hf`.
  Returns the number of tensors written.
  """
  names.refuse_relative_position(network, "hf")
  sp_tokenizer = _tokenizer_source(network, vocabulary, sentencepiece_model)
  tensors = {e.hf: names.hf_layout(e, e.variable.numpy())
             for e in names.model_entries(encoder)}
  with export_marker.writing(output_dir, "hf_encoder"):
    _write_folder(output_dir, tensors, hf_config(network.network_hparams(),
                                                 "ElectraModel"),
                  network, vocabulary, sp_tokenizer)
  return len(tensors)


# HF key prefixes -> the ELECTRA names of interop/names.py. BERT's MLM head
# maps onto the generator head; the rest of a BERT is the discriminator body.
_RENAMES = (
    ("bert.", "electra."),
    ("cls.predictions.transform.dense.", "generator_predictions.dense."),
    ("cls.predictions.transform.LayerNorm.",
     "generator_predictions.LayerNorm."),
    ("cls.predictions.decoder.weight", "generator_lm_head.weight"),
    ("cls.predictions.bias", "generator_lm_head.bias"),
)
_BARE = ("embeddings.", "embeddings_project.", "encoder.")
_HEAD_PREFIXES = ("generator_predictions.", "generator_lm_head.")


def _normalise(name):
  """An HF ELECTRA/BERT state-dict key in the names of interop/names.py."""
  for old, new in _RENAMES:
    if name.startswith(old):
      name = new + name[len(old):]
      break
  if name.startswith(_BARE):
    name = "electra." + name
  if name.endswith(".gamma"):
    name = name[:-len(".gamma")] + ".weight"
  elif name.endswith(".beta"):
    name = name[:-len(".beta")] + ".bias"
  return name


def _tied_copy(name, value, raw):
  """Whether `name` (normalised) is the MLM output table and `value` the
  word embeddings of `raw` (HF keys) bit for bit: a tied table that
  torch.save kept twice and safetensors once."""
  if name != "generator_lm_head.weight":
    return False
  words = [v for k, v in raw.items()
           if _normalise(k) == "electra.embeddings.word_embeddings.weight"]
  return bool(words) and words[0].shape == value.shape and bool(
      (words[0] == value).all())


def is_hf_folder(path):
  """Whether `path` is a folder of config.json and weights in a layout of
  interop/weight_files.py (model.safetensors, pytorch_model.bin...)."""
  return (io_utils.is_dir(path) and
          io_utils.is_file(posixpath.join(path, "config.json")) and
          weight_files.find_weights(path) is not None)


def read_hf_folder(path):
  """Reads one HF folder.

  Returns dict: `tensors` {role: {name: array}} in the names of
  interop/names.py and HF layout; `sizes` {role: our size hparams};
  `ignored` [source keys no role uses]; `optional` {(role, name)} whose
  shapes may not fit (a BERT MLM head offered to the generator);
  `description` naming the folder and the weights file read. The weights
  are any layout of interop/weight_files.py; a tied copy of the word
  embeddings (a `.bin`'s `cls.predictions.decoder.weight`) is read as
  the tie it is, as from safetensors.
  """
  config_path = posixpath.join(path, "config.json")
  try:
    hf_config_json = io_utils.read_json(config_path)
  except ValueError as e:
    raise UserError("%s is not valid JSON: %s" % (config_path, e))
  model_type = hf_config_json.get("model_type")
  if model_type not in ("electra", "bert"):
    raise UserError("%s: model_type %r; only \"electra\" and \"bert\" "
                    "folders load." % (config_path, model_type))
  architecture = (hf_config_json.get("architectures") or [""])[0]
  raw, files = weight_files.read_weights(path)
  body, head, ignored = {}, {}, []
  for key, value in raw.items():
    name = _normalise(key)
    if key == "cls.predictions.decoder.bias" or _tied_copy(name, value, raw):
      continue  # The same tensor as cls.predictions.bias, or the word table.
    if name.startswith(_HEAD_PREFIXES):
      head[name] = value
    elif name.startswith("electra.") and ".pooler." not in name:
      body[name] = value
    else:
      ignored.append(key)
  sizes = sizes_from_hf_config(hf_config_json, config_path)
  if architecture == "ElectraForMaskedLM":
    tensors = {"generator": dict(body, **head)}
    role_sizes = {"generator": sizes}
    optional = set()
  else:
    # ElectraForPreTraining, ElectraModel, BertModel, BertForMaskedLM...:
    # the discriminator, and a BERT's MLM head for the generator head.
    disc = dict(body)
    disc.update({k: v for k, v in raw.items()
                 if k.startswith("discriminator_predictions.")})
    ignored = [k for k in ignored
               if not k.startswith("discriminator_predictions.")]
    tensors = {"discriminator": disc}
    role_sizes = {"discriminator": sizes}
    optional = set()
    if head:
      tensors["generator"] = head
      optional = {("generator", name) for name in head}
  return dict(tensors=tensors, sizes=role_sizes, ignored=sorted(ignored),
              optional=optional,
              description="Hugging Face %s folder %s (%s)" % (
                  architecture or model_type, path, files))
