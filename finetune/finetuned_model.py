"""A fine-tuned model read back from its model directory, for export.

run_finetuning.py keeps, under `<model_dir>/finetuning_models/<task>/`, the
fine-tuning `config.json` and per trial `trial_<k>/best/` (the checkpoint
kept for its best dev score). `load_finetuned` rebuilds that task and model
from them, as they were fine-tuned.
"""

import os

import numpy as np
import tensorflow as tf

import configure
import configure_finetuning_specs
from finetune import preprocessing
from finetune import task_builder
from finetune.model import FinetuningModel
from finetune.trainer import BEST_DIR
from interop import saved_config
from model.builders import build_discriminator_encoder
from util import io_utils
from util.errors import UserError

# Features a head may read besides the encoder's inputs (SQuAD's).
_DUMMY_FEATURES = ("input_ids", "input_mask", "segment_ids", "paragraph_mask")


def finetuned_config(model_dir, data_dir, task_name):
  """The `FinetuningConfig` task `task_name` was fine-tuned with, set to
  read its data from `data_dir` and its model from `model_dir`."""
  path = os.path.join(model_dir, "finetuning_models", task_name,
                      "config.json")
  if not io_utils.is_file(path):
    raise UserError("%s not found: fine-tune task %r of this model first "
                    "(run_finetuning.py with \"task_names\": [%r])." % (
                        path, task_name, task_name))
  saved = io_utils.read_json(path)
  hparams = saved_config.saved_hparams(saved, configure.FINETUNE_FIELDS)
  hparams.update(task_names=[task_name], do_train=False, model_dir=model_dir,
                 init_checkpoint="none")
  try:
    return configure.FinetuningConfig(saved.get("model_name", "finetuned"),
                                      data_dir, **hparams)
  except configure.ConfigError as e:
    raise UserError("%s (hparams read from %s)" % (e, path))


def load_finetuned(model_dir, data_dir, task_name, trial=1, log=print):
  """(model, task, config) of trial `trial` of a fine-tuned task.

  `model` is a `FinetuningModel` with the weights of
  `finetuning_models/<task>/trial_<trial>/best/`.
  """
  config = finetuned_config(model_dir, data_dir, task_name)
  best_dir = os.path.join(model_dir, "finetuning_models", task_name,
                          "trial_%d" % trial, BEST_DIR)
  prefix = tf.train.latest_checkpoint(best_dir)
  if prefix is None:
    raise UserError("no fine-tuned checkpoint in %s (trials 1 to %d were "
                    "run; pick one with --trial)." % (best_dir,
                                                      config.num_trials))
  specs = configure_finetuning_specs.finetuning_specs(config)
  task = task_builder.get_task(
      specs.task, task_name,
      preprocessing.build_tokenizer(specs.vocabulary,
                                    specs.network.vocab_size))
  model = FinetuningModel(build_discriminator_encoder(specs.network),
                          task.build_head(), name="finetuning")
  ones = np.ones([1, specs.network.max_seq_length], np.int32)
  model({name: ones for name in _DUMMY_FEATURES}, training=False)
  tf.train.Checkpoint(model=model).restore(
      prefix).expect_partial().assert_existing_objects_matched()
  log("fine-tuned %s model: %s" % (task_name, prefix))
  return model, task, config
