"""Exports a model: Hugging Face folders, Google TF1 checkpoint, SavedModel,
TFLite.

  python export_model.py --data-dir D --model-name M \\
      --format hf|tf1|saved_model --output OUT [--hparams JSON|path]
  python export_model.py --checkpoint SOURCE --format hf|tf1|saved_model \\
      --output OUT [--hparams JSON|path]

The first form exports the latest pre-training checkpoint of D/models/M
(with the hparams of its config.json). The second converts any source the
loader reads (interop/loader.py): an HF folder, a folder of HF
`discriminator/` + `generator/`, a Google TF1 checkpoint or one of ours;
every size it records is adopted (interop/adoption.py), `--hparams` adds
what it does not record (the number of heads of a TF1 checkpoint without
bert_config.json).

`hf` writes OUT/discriminator (ElectraForPreTraining) and OUT/generator
(ElectraForMaskedLM); `tf1` writes OUT/model.ckpt-<step> with Google's
variable names, bert_config.json, generator_config.json and the
vocabulary; `saved_model` writes a SavedModel of the discriminator whose default
signature takes raw text (export/saved_model.py); with `--task NAME` the
model fine-tuned on that task instead, serving the task's outputs:

  python export_model.py --data-dir D --model-name M --task sst \\
      --format saved_model --output OUT [--trial K]

`tflite` (with `--task` only) writes OUT/model.tflite, the same text-in
model with the tokenizer inside, run by LiteRT's interpreter with
tensorflow-text's kernels, and OUT/tflite.json (export/tflite.py);
`--quantize none|dynamic|float16` (default none; dynamic is INT8 weights,
a classifier's or regression's output bias corrected on training texts):

  python export_model.py --data-dir D --model-name M --task sst \\
      --format tflite --output OUT [--quantize dynamic]

A model whose config.json records a SentencePiece model as its vocab_file
(pre-trained on a data directory holding sentencepiece.model) is exported
with that model's tokenizer; no flag is needed.

OUT must be new or empty; `--overwrite` replaces an earlier export there
(export/output_dir.py removes only the files exports write).
"""

import argparse
import logging
import posixpath

from util.cli import tensorflow_startup
from util.cli import run_main

tensorflow_startup()

import configure  # pylint: disable=g-import-not-at-top
import configure_specs  # pylint: disable=g-import-not-at-top
from interop import saved_config
from util import hparams as hparams_lib
from util import io_utils
from text import vocab_fingerprint
from text import vocab_layout
from util.errors import UserError


def _saved_hparams(model_dir):
  """The hparams of a pre-training run, from its config.json."""
  path = posixpath.join(model_dir, "config.json")
  if not io_utils.is_file(path):
    raise UserError("%s not found: pre-train this model first (or give "
                    "--checkpoint)." % path)
  return saved_config.saved_hparams(io_utils.read_json(path),
                                 configure.PRETRAIN_FIELDS)


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--data-dir", help="Holds models/<model-name>/.")
  parser.add_argument("--model-name", help="The model under <data-dir>/models.")
  parser.add_argument("--checkpoint", help="Any loadable source instead.")
  parser.add_argument("--format", required=True,
                      choices=("hf", "tf1", "saved_model", "tflite"))
  parser.add_argument("--output", required=True, help="Output directory: "
                      "new or empty, unless --overwrite.")
  parser.add_argument("--overwrite", action="store_true",
                      help="Export into a directory holding an earlier "
                      "export, replacing that export's files (no others).")
  parser.add_argument("--hparams", default="{}",
                      help="JSON string or path to a .json file.")
  parser.add_argument("--task", help="Export the model fine-tuned on this "
                      "task (D/models/M/finetuning_models/<task>/) as a "
                      "SavedModel (or TFLite model) serving the task.")
  parser.add_argument("--quantize", choices=("none", "dynamic", "float16"),
                      help="tflite: none (float32, the default), dynamic "
                      "(dynamic-range INT8 weights; a classifier's or "
                      "regression's mean output shift on training texts "
                      "taken off its head's bias) or float16 weights.")
  parser.add_argument("--trial", type=int, default=1,
                      help="With --task: which trial (default 1).")
  parser.add_argument("--sentencepiece-model",
                      help="hf and saved_model of a pre-trained model: the "
                      "SentencePiece model its data was built with, "
                      "instead of vocab.txt (hf then writes a fast "
                      "tokenizer's tokenizer.json). Not needed when the "
                      "model's config.json records it as its vocab_file.")
  return parser.parse_args(argv)


def main(argv=None):
  args = parse_args(argv)
  logging.getLogger("tensorflow").setLevel(logging.ERROR)
  user = hparams_lib.load_hparams(args.hparams)
  _check_flags(args)
  if args.task:
    return _export_finetuned(args, user)

  source, config = _pretrained_source(args, user)
  from export import output_dir  # pylint: disable=g-import-not-at-top
  from export import saved_model
  from interop import hf
  from interop import hf_sentencepiece
  from interop import loader
  from interop import names
  from interop import tf1
  from model import builders
  specs = configure_specs.pretraining_specs(config)
  if args.format in ("hf", "tf1"):
    # Before any work.
    names.refuse_relative_position(specs.network, args.format)
  sentencepiece_model = sentencepiece_model_of(args.sentencepiece_model, config)
  if sentencepiece_model:
    hf_sentencepiece.load_checked(sentencepiece_model, config.vocab_size)
  output_dir.check_output(args.output, args.overwrite)
  model = builders.build_pretrainer_with_variables(
      specs.network, specs.objective, specs.masking)
  loader.load_into(model, source, log=print)
  with output_dir.staged(args.output) as (target, log):
    if args.format == "hf":
      hf.export_hf(model, specs.network, specs.vocabulary, target, log=log,
                   sentencepiece_model=sentencepiece_model)
    elif args.format == "tf1":
      tf1.export_tf1(model, specs.network, specs.vocabulary, target, log=log)
    else:
      saved_model.export_saved_model(
          model, specs.vocabulary, config.max_seq_length, target,
          sentencepiece_model=sentencepiece_model, log=log)
  return 0


def sentencepiece_model_of(flag, config):
  """The SentencePiece model an export writes: --sentencepiece-model, else
  the one the model's config records as its vocabulary (None: WordPiece).
  A flag naming another model than the recorded one is a UserError."""
  recorded = (config.vocab_file if vocab_layout.is_sentencepiece(
      config.vocab_file) and io_utils.is_file(config.vocab_file) else None)
  if flag and recorded and (vocab_fingerprint.fingerprint(flag) !=
                            vocab_fingerprint.fingerprint(recorded)):
    raise UserError(
        "--sentencepiece-model %s is not the SentencePiece model %s the "
        "model was trained with (its config.json records it; their "
        "pieces differ): drop the flag to export with the recorded one." % (
            flag, recorded))
  return flag or recorded


def _check_flags(args):
  """Refuses combinations of flags that do not go together."""
  if args.checkpoint is None and not (args.data_dir and
                                     args.model_name is not None):
    raise UserError("give --data-dir and --model-name, or --checkpoint.")
  if args.checkpoint is None:
    configure.check_model_name(args.model_name)
  if args.task and (args.format not in ("saved_model", "tflite") or
                    args.checkpoint):
    raise UserError("--task exports a fine-tuned model of --data-dir/"
                    "--model-name as a SavedModel (--format saved_model) "
                    "or TFLite model (--format tflite); hf and tf1 export "
                    "pre-trained models.")
  if args.format == "tflite" and not args.task:
    raise UserError("--format tflite exports a fine-tuned task model: give "
                    "--task NAME (a pre-trained model has no TFLite export).")
  if args.quantize and args.format != "tflite":
    raise UserError("--quantize applies to --format tflite only.")
  if args.sentencepiece_model and (args.task or args.format == "tf1"):
    raise UserError("--sentencepiece-model applies to pre-trained models "
                    "exported as hf or saved_model (a fine-tuned model is "
                    "exported with the vocabulary its config.json records).")


def _pretrained_source(args, user):
  """(checkpoint to load, `PretrainingConfig`) of the pre-trained model:
  the model directory of --data-dir/--model-name, or --checkpoint (its
  hyperparameters adopted from the files beside it)."""
  from interop import adoption  # pylint: disable=g-import-not-at-top
  from interop import checkpoints
  from interop import convert
  if args.checkpoint is None:
    model_dir = user.get("model_dir") or posixpath.join(
        args.data_dir, "models", args.model_name)
    source = checkpoints.pretrained_checkpoint_dir(model_dir)
    config = convert.pretraining_config(
        args.model_name, args.data_dir,
        convert.merge_hparams(_saved_hparams(model_dir), user))
    return source, config
  source = args.checkpoint
  if not (io_utils.exists(source) or io_utils.exists(source + ".index")):
    raise UserError("--checkpoint %s does not exist." % source)
  name, data_dir = args.model_name or "exported", args.data_dir or "."
  hparams, adopted = adoption.adopt(
      configure.PretrainingConfig, name, data_dir, user, source,
      into_data_dir=False)
  config = configure.PretrainingConfig(name, data_dir, adopted_from=adopted,
                                       **hparams)
  return source, config


def _export_finetuned(args, user):
  """--task: the fine-tuned model of a task as a SavedModel or TFLite."""
  from finetune import finetuned_model  # pylint: disable=g-import-not-at-top
  from export import output_dir
  from export import saved_model
  from export import tflite
  model_dir = user.get("model_dir") or posixpath.join(
      args.data_dir, "models", args.model_name)
  model, task, config = finetuned_model.load_finetuned(
      model_dir, args.data_dir, args.task, args.trial)
  vocabulary = configure_specs.VocabularySpec.from_config(config)
  output_dir.check_output(args.output, args.overwrite)
  with output_dir.staged(args.output) as (target, log):
    if args.format == "tflite":
      tflite.export_task_tflite(model, task, vocabulary, target,
                                args.quantize or "none", log=log)
    else:
      saved_model.export_task_saved_model(model, task, vocabulary, target,
                                          log=log)
  return 0


if __name__ == "__main__":
  run_main(main)
