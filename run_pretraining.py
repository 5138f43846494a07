"""Pre-trains an ELECTRA model (optionally with learned replacement sampling).

  python run_pretraining.py --data-dir D --model-name M [--hparams JSON|path]

Reads `D/pretrain_tfrecords/pretrain_data.tfrecord*` (and, for evaluation,
`D/pretrain_tfrecords/heldout_data.tfrecord*` when present) and the
vocabulary, `D/vocab.txt` or `D/sentencepiece.model` (text/vocab_layout.py);
writes checkpoints, TensorBoard summaries, `config.json` and `results/` under
`D/models/M`. Re-running the same command resumes from the last checkpoint.
With hparam `init_checkpoint` the model's sizes and vocabulary are the
source's (interop/adoption.py); config.json records them under
`adopted_from`.
"""

import argparse
import json
import logging
import os

from util.cli import tensorflow_startup
from util.cli import log_line
from util.cli import run_main

tensorflow_startup()

import configure  # pylint: disable=g-import-not-at-top
import configure_specs  # pylint: disable=g-import-not-at-top
from util.errors import UserError
from util import hparams as hparams_lib
from util import io_utils
from util import run_lock
from text import vocab_layout
from util.io_utils import check_writable


def build_config(data_dir, model_name, hparams):
  """The effective config: hparams, plus what the data directory implies."""
  if not io_utils.is_dir(data_dir):
    raise UserError("data directory %s does not exist; build it with "
                    "build_pretraining_dataset.py (see README)." % data_dir)
  hparams = hparams_lib.load_hparams(hparams)
  if not hparams.get("model_dir"):
    configure.check_model_name(model_name)  # Before adoption writes.
  adopted = None
  if hparams.get("init_checkpoint"):
    from interop import adoption  # pylint: disable=g-import-not-at-top
    hparams, adopted = adoption.adopt(
        configure.PretrainingConfig, model_name, data_dir, hparams,
        hparams["init_checkpoint"], log=lambda line: print(line, flush=True))
  hparams = vocab_layout.with_vocab_size(configure.PretrainingConfig,
                                         data_dir, hparams)
  heldout = os.path.join(data_dir, "pretrain_tfrecords",
                         "heldout_data.tfrecord*")
  if "eval_tfrecords" not in hparams and io_utils.glob(heldout):
    hparams["eval_tfrecords"] = heldout
  config = configure.PretrainingConfig(model_name, data_dir,
                                       adopted_from=adopted, **hparams)
  if not io_utils.exists(config.vocab_file):
    raise UserError("vocab file %s not found (set hparam 'vocab_file' or "
                    "put a vocab.txt or sentencepiece.model in the data "
                    "directory)." % config.vocab_file)
  casing = _shard_casing(config, hparams)
  if casing:
    config = configure.PretrainingConfig(model_name, data_dir,
                                         adopted_from=adopted,
                                         **dict(hparams, **casing))
  return config


def _shard_casing(config, hparams):
  """The casing hparams to take from the shards' manifest when neither the
  user nor the source set one ({} when they agree or nothing is recorded);
  a UserError naming both when they were set otherwise."""
  from pretrain import shards  # pylint: disable=g-import-not-at-top
  recorded = shards.recorded_casing(config.pretrain_tfrecords)
  if recorded is None or vocab_layout.is_sentencepiece(config.vocab_file):
    return {}
  path, theirs = recorded
  ours = dict(do_lower_case=config.do_lower_case,
              strip_accents=config.do_lower_case if config.strip_accents
              is None else config.strip_accents)
  if ours == theirs:
    return {}

  def text(c):
    return ", ".join("%s %s" % (k, str(v).lower())
                     for k, v in sorted(c.items()))
  if not any(k in hparams for k in theirs):
    print("casing: %s, as the shards' manifest %s records" % (
        text(theirs), path), flush=True)
    return theirs
  message = ("the shards were built with %s (%s) but the model's text "
             "settings are %s (%s)" % (
                 text(theirs), path, text(ours),
                 "adopted from %s" % config.adopted_from["source"]
                 if config.adopted_from and any(
                     k in config.adopted_from["hparams"] for k in theirs)
                 else "hparams"))
  if config.allow_casing_mismatch:
    print("warning: %s; training anyway (allow_casing_mismatch)." % message,
          flush=True)
    return {}
  raise UserError("%s: their token ids were made from other text than the "
                  "model reads. Rebuild the shards with "
                  "build_pretraining_dataset.py --%sdo-lower-case, or set "
                  "hparam \"allow_casing_mismatch\": true to train anyway." %
                  (message, "" if ours["do_lower_case"] else "no-"))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--data-dir", required=True,
                      help="Holds vocab.txt or sentencepiece.model, "
                      "pretrain_tfrecords/, models/.")
  parser.add_argument("--model-name", required=True,
                      help="The model's directory under <data-dir>/models/.")
  parser.add_argument("--hparams", default="{}",
                      help="JSON string or path to a .json file.")
  args = parser.parse_args(argv)
  logging.getLogger("tensorflow").setLevel(logging.ERROR)
  config = build_config(args.data_dir, args.model_name, args.hparams)

  from pretrain import pretrain_data  # pylint: disable=g-import-not-at-top
  from util import distribution
  # The strategy first: splitting the CPU and multi-worker collectives must
  # be set up before any TensorFlow op runs.
  specs = configure_specs.pretraining_specs(config)
  strategy = distribution.get_strategy(specs.runtime)
  # Everything a run reads or writes is checked before the model is built;
  # config.json records the training shards.
  config = config.with_facts(train_shards=pretrain_data.check_inputs(
      specs.data, specs.masking, config.do_train, config.do_eval))
  created = not io_utils.exists(config.model_dir)
  check_writable(config.model_dir, depth=2)
  try:
    with run_lock.locked(config.model_dir,
                         strategy.extended.should_checkpoint):
      _pretrain(config, strategy)
  except UserError:
    # A run that failed before its first checkpoint leaves no directory.
    if created and not io_utils.glob(os.path.join(
        config.model_dir, "checkpoints", "ckpt-*.index")):
      io_utils.remove_tree(config.model_dir)
    raise
  return 0


def _pretrain(config, strategy):
  """Trains and/or evaluates, with the model directory locked."""
  from interop import saved_config
  from pretrain import trainer as trainer_lib
  from util import process_setup
  from util import xla_fusion
  saved_config.check_saved_config(config)

  log = log_line

  changed = saved_config.changed_on_resume(config, configure.PRETRAIN_FIELDS)
  if changed:
    log("Note: resuming with hparams changed since config.json: %s; they "
        "apply from the resumed step on." % ", ".join(changed))

  config = configure.resolve_precision(config, log)
  specs = configure_specs.pretraining_specs(config)
  xla_fusion.resolve(specs.runtime, log)
  process_setup.set_up_process(config.mixed_precision, config.seed,
                               checkpointed_dropout=True)
  trainer = trainer_lib.PretrainingTrainer(specs, log=log, strategy=strategy)
  if trainer.is_chief:
    log("Effective config saved to %s; set by hparams or the data: %s" % (
        config.save(), json.dumps(config.user_hparams, sort_keys=True)))
  try:
    if config.do_train:
      trainer.train()
    else:
      trainer.restore()
      if not trainer.checkpoints.latest():
        raise UserError("do_train is false but %s holds no checkpoint to "
                        "evaluate; pre-train first." % trainer.checkpoint_dir)
    if config.do_eval:
      trainer.evaluate()
  finally:
    trainer.close()
  log("Model directory: %s\n  checkpoints: %s\n  results: %s" % (
      config.model_dir, trainer.checkpoint_dir,
      os.path.join(config.model_dir, "results")))


if __name__ == "__main__":
  run_main(main)
