"""A released model folder that a study starts from, read for the study.

A study config's `start` (studies/plan.py) names a Hugging Face BERT or
ELECTRA folder outside the study (config.json, weights in a layout of
interop/weight_files.py, vocab.txt), e.g.
../shared/data/models/all-minilm-l6-v2. The study takes its vocabulary
(`copy_vocab`) and, where a run builds the model without loading the
folder (random initialisation), its shape (`shape_hparams`).
Runs that load the folder (init_checkpoint) adopt its sizes themselves
(interop/convert.with_source_hparams).
"""

import os

from interop import hf
from interop import weight_files
from model import transformer_hparams
from util import io_utils
from util.errors import UserError
from util.io_utils import write_bytes_atomic

VOCAB = "vocab.txt"


def check_folder(where, path):
  """UserError (prefixed `where`) unless `path` is an HF folder with a
  vocab.txt and a config.json whose sizes this project can build."""
  if not hf.is_hf_folder(path):
    raise UserError("%s: %s is not a Hugging Face model folder (it needs "
                    "config.json and one of %s)." % (
                        where, path, ", ".join(weight_files.WEIGHT_FILES)))
  if not os.path.isfile(os.path.join(path, VOCAB)):
    raise UserError("%s: %s has no %s; the study takes its vocabulary from "
                    "it." % (where, path, VOCAB))
  try:
    shape_hparams(path)
  except UserError as e:
    raise UserError("%s: %s" % (where, e))


def shape_hparams(path):
  """The hparams that build the shape of the model in folder `path`:
  `vocab_size`, `embedding_size` and `model_hparam_overrides` (the
  transformer's sizes and `hidden_act`), from its config.json."""
  config_path = os.path.join(path, "config.json")
  try:
    config = io_utils.read_json(config_path)
  except ValueError as e:
    raise UserError("%s is not valid JSON: %s" % (config_path, e))
  sizes = hf.sizes_from_hf_config(config, config_path)
  hparams = {k: sizes.pop(k) for k in transformer_hparams.EMBEDDING_KEYS}
  hparams["model_hparam_overrides"] = sizes
  return hparams


def copy_vocab(path, data_dir):
  """Copies the vocab.txt of folder `path` to `<data_dir>/vocab.txt` unless
  it is there already; UserError when a different vocabulary is there (a
  work_dir made for another source). Returns the copy's path."""
  source = os.path.join(path, VOCAB)
  target = os.path.join(data_dir, VOCAB)
  text = io_utils.read_bytes(source)
  if not os.path.isfile(target):
    write_bytes_atomic(target, text)
  elif io_utils.read_bytes(target) != text:
    raise UserError("%s differs from %s, the start's vocabulary: the work_dir "
                    "was made for another source; delete its data/ or use "
                    "another work_dir." % (target, source))
  return target
