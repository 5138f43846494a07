"""Fine-tunes a pre-trained ELECTRA discriminator on GLUE, SQuAD or tagging.

Usage:
  python run_finetuning.py --data-dir D --model-name M \
      --hparams '{"task_names": ["sst"], "num_trials": 3}'

Data: D/finetuning_data/<task>/{train,dev,test}.*; weights: the pre-training
checkpoint in D/models/M/checkpoints (or hparam `init_checkpoint`, "none"
for random initialisation); results: D/models/M/results/; fine-tuned models:
D/models/M/finetuning_models/. `--hparams` is a JSON object or a path to a
.json file; the keys are `configure.FinetuningConfig`'s. The model's sizes
and vocabulary come from the weights' source (interop/adoption.py): its
config.json, an HF folder's or a TF1 checkpoint's; no size hparam is needed.
"""

import argparse

from util.cli import tensorflow_startup

tensorflow_startup()

from configure import FinetuningConfig  # pylint: disable=g-import-not-at-top
from configure import check_model_name  # pylint: disable=g-import-not-at-top
from util.hparams import load_hparams
from util.cli import run_main
from text.vocab_layout import with_vocab_size


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--data-dir", required=True,
                      help="Holds finetuning_data/, vocab.txt or "
                      "sentencepiece.model, and models/.")
  parser.add_argument("--model-name", required=True,
                      help="Name of the pre-trained model (D/models/<name>).")
  parser.add_argument("--hparams", default=None,
                      help="JSON object or path to a .json file.")
  return parser.parse_args(argv)


def main(argv=None):
  args = parse_args(argv)
  hparams = load_hparams(args.hparams)
  if not hparams.get("model_dir"):
    check_model_name(args.model_name)  # Before the source is looked up.
  adopted = None
  if hparams.get("init_checkpoint") != "none":
    # The weights' source (the pre-trained model by default) sets the sizes.
    from interop import adoption  # pylint: disable=g-import-not-at-top
    source = adoption.finetuning_source(hparams, args.data_dir,
                                        args.model_name)
    if source:
      hparams, adopted = adoption.adopt(
          FinetuningConfig, args.model_name, args.data_dir, hparams, source,
          log=lambda line: print(line, flush=True))
  hparams = with_vocab_size(FinetuningConfig, args.data_dir, hparams)
  config = FinetuningConfig(args.model_name, args.data_dir,
                            adopted_from=adopted, **hparams)
  # Imported here so a bad flag or hparam is reported before TensorFlow loads.
  from finetune import runner  # pylint: disable=g-import-not-at-top
  return runner.run_finetuning(config)


if __name__ == "__main__":
  run_main(main)
