"""Runs fine-tuning: every task of `task_names` in turn, `num_trials` each.

Layout under `model_dir` (default `<data_dir>/models/<model_name>`):
  checkpoints/                       pre-training's checkpoints (read)
  finetuning_models/<task>/config.json       the fine-tuning config
  finetuning_models/<task>/trial_<k>/best/   the kept (best-dev) model
  finetuning_models/<task>/trial_<k>/best.json and dev predictions (SQuAD)
  results/<task>_results.{json,txt}         per-trial results, mean, std
  results/test_predictions/trial_<k>/       GLUE-style test prediction files
"""

import functools
import json
import os

from absl import logging as absl_logging

import configure
import configure_finetuning_specs
from finetune import preprocessing
from finetune import results as results_lib
from finetune import task_builder
from finetune import unknown_tokens
from finetune.trainer import Trainer
from interop import checkpoints
from interop import loader as interop_loader
from interop import saved_config
from model import transformer_hparams
from util import distribution
from util import io_utils
from util import process_setup
from util import run_lock
from util import xla_fusion
from util.errors import UserError
from util.io_utils import write_json_atomic

# `init_checkpoint` value that fine-tunes from random initialisation.
RANDOM_INIT = "none"

# Model fields a pre-trained checkpoint fixes (shapes and the function).
_ARCHITECTURE_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers",
                      "num_attention_heads", "intermediate_size",
                      "embedding_size", "max_position_embeddings",
                      "type_vocab_size", "hidden_act")
_RELATIVE_KEYS = ("relative_position", "relative_num_buckets",
                  "relative_max_distance")


def _check_pretrained_config(config, prefix):
  """UserError if the pre-training config.json next to the checkpoint
  describes another architecture than this fine-tuning config."""
  path = saved_config.config_beside(prefix)
  if path is None:
    return
  pretrained = saved_config.read_saved(path)
  model = saved_config.saved_network_hparams(pretrained)
  ours = config.network_hparams()
  overrides = {key: model[key] for key in _ARCHITECTURE_KEYS
               if key in model and model[key] != ours[key]}
  relative = {key: pretrained[key] for key in _RELATIVE_KEYS
              if key in pretrained and pretrained[key] != getattr(config, key)}
  if overrides or relative:
    hint = dict(relative)
    if overrides:
      hint["model_hparam_overrides"] = dict(
          (key, model[key]) for key in _ARCHITECTURE_KEYS
          if key in model and key not in transformer_hparams.EMBEDDING_KEYS)
      hint.update((key, model[key])
                  for key in transformer_hparams.EMBEDDING_KEYS
                  if key in overrides)
    raise UserError("the pre-trained model %s (%s) differs from this "
                    "fine-tuning config in %s; add these hparams: %s" % (
                        prefix, path,
                        ", ".join(sorted(list(overrides) + list(relative))),
                        json.dumps(hint, sort_keys=True)))


def resolve_init_checkpoint(config):
  """The checkpoint prefix to start from, or None for random initialisation.

  `init_checkpoint` None: the latest checkpoint of `<model_dir>/checkpoints`
  (an error if there is none). "none": random initialisation. Otherwise a
  checkpoint prefix, a directory of checkpoints, or a pre-training model
  directory holding `checkpoints/`, or a Hugging Face folder or Google TF1
  checkpoint (interop/loader.py), returned as given.
  """
  path = config.init_checkpoint
  if path == RANDOM_INIT:
    return None
  if interop_loader.is_foreign(path):
    return path  # HF or Google TF1: Trainer.init_encoder loads it.
  if path is None:
    path = checkpoints.pretrained_checkpoint_dir(config.model_dir)
    if not (io_utils.is_dir(path) and checkpoints.newest_on_disk(path)):
      raise UserError(
          "no pre-trained checkpoint in %s. Pre-train model %r first, set "
          "hparam 'init_checkpoint' to a checkpoint, or set it to \"none\" "
          "to fine-tune from random initialisation." % (path,
                                                        config.model_name))
  prefix = checkpoints.resolve_checkpoint(path)
  _check_pretrained_config(config, prefix)
  return prefix


def _load_splits(config, task):
  """Reads every split this run needs (so file errors come before training)."""
  train = task.load("train", is_training=True) if config.do_train else None
  evals = [task.load(s) for s in task.eval_splits] if config.do_eval else []
  tests = ([task.load(s) for s in task.test_splits]
           if config.write_test_outputs else [])
  return train, evals, tests


def _finished_trials(config, task_dir, task_name):
  """{trial: record} of the trials an earlier run of this same config
  finished (its results file lists them), so a resumed run skips them;
  {} when the config differs or nothing finished."""
  config_path = os.path.join(task_dir, "config.json")
  results_path = os.path.join(config.model_dir, "results",
                              "%s_results.json" % task_name)
  if not (io_utils.is_file(config_path) and io_utils.is_file(results_path)):
    return {}
  same = io_utils.read_json(config_path) == json.loads(
      json.dumps(config.to_dict()))
  if not same:
    return {}
  return {t["trial"]: t for t in io_utils.read_json(results_path)["trials"]
          if "trial" in t}


def _write_results(config, task, trials):
  """The task's results record of `trials`, written; (record, json path)."""
  record = results_lib.task_record(task.name, trials,
                                   trials[-1]["primary_metric"])
  json_path, _ = results_lib.write_task_results(config.model_dir, record)
  return record, json_path


def run_task(config, task, splits, strategy, init_checkpoint):
  """All trials of one task; returns its results record (also written).
  Trials that a killed run of the same config finished are kept, not
  redone.

  `splits` is `_load_splits(config, task)`: (train, evals, tests).
  """
  train, evals, tests = splits
  specs = configure_finetuning_specs.finetuning_specs(config)
  task_dir = os.path.join(config.model_dir, "finetuning_models", task.name)
  finished = _finished_trials(config, task_dir, task.name)
  write_json_atomic(os.path.join(task_dir, "config.json"), config.to_dict())
  trials = []
  for trial in range(1, config.num_trials + 1):
    prefix = "%s trial %d/%d" % (task.name, trial, config.num_trials)
    if trial in finished:
      print("%s: finished by an earlier run of this config; kept" % prefix,
            flush=True)
      trials.append(finished[trial])
      continue
    trainer = Trainer(specs, task, strategy,
                      os.path.join(task_dir, "trial_%d" % trial),
                      seed=config.seed + trial - 1, log_prefix=prefix)
    trial_record = trainer.run(
        train, evals, tests, init_checkpoint,
        test_dir=os.path.join(config.model_dir, "results", "test_predictions",
                              "trial_%d" % trial))
    trial_record["trial"] = trial
    trials.append(trial_record)
    # Written after every trial: a killed run keeps the finished ones.
    record, json_path = _write_results(config, task, trials)
  record, json_path = _write_results(config, task, trials)
  print(results_lib.record_text(record), end="", flush=True)
  print("results: %s" % json_path, flush=True)
  return record


def run_finetuning(config):
  """Fine-tunes and/or evaluates every task in `config.task_names`.

  Returns {task name: results record}.
  """
  task_builder.check_task_names(config.task_names, config.data_dir)
  if not (config.do_train or config.do_eval or config.write_test_outputs):
    raise UserError("do_train, do_eval and write_test_outputs are all false: "
                    "nothing to do.")
  # squad_lib logs every window it builds at INFO level.
  absl_logging.set_verbosity(absl_logging.WARNING)
  log = functools.partial(print, flush=True)
  config = configure.resolve_precision(config, log)
  specs = configure_finetuning_specs.finetuning_specs(config)
  xla_fusion.resolve(specs.runtime, log)
  process_setup.set_up_process(config.mixed_precision, config.seed)
  strategy = distribution.get_strategy(specs.runtime)
  tokenizer = preprocessing.build_tokenizer(specs.vocabulary,
                                            specs.network.vocab_size)
  init_checkpoint = resolve_init_checkpoint(config) if config.do_train else None
  if config.do_train and init_checkpoint is None:
    print("fine-tuning from random initialisation (init_checkpoint \"none\")",
          flush=True)
  tasks = [task_builder.get_task(specs.task, name, tokenizer)
           for name in config.task_names]
  # Every task's files are read and checked before the first model is built.
  splits = [_load_splits(config, task) for task in tasks]
  io_utils.check_writable(config.model_dir, depth=2)
  for task, (train, _, _) in zip(tasks, splits):
    if train is not None:
      unknown_tokens.check_unknown_rate(task.name, train.features, tokenizer,
                                        config.max_unk_fraction, log)
  with run_lock.locked(config.model_dir, strategy.extended.should_checkpoint):
    return {task.name: run_task(config, task, task_splits, strategy,
                                init_checkpoint)
            for task, task_splits in zip(tasks, splits)}
