"""Checks that ours -> hf -> ours and ours -> tf1 -> ours are lossless at
the released model sizes (transformer_hparams.MODEL_SIZES: small, base, large).

  python -m interop.check_round_trips [--sizes small,base,large]

For each size: a pre-training model with random weights (its biases and
LayerNorm parameters moved off 0/1, `sampling` "hp_loss" and an untied MLM
output, so every tensor kind is present) is exported to HF folders and to
a TF1 checkpoint, each loaded into a second model of other random weights,
and compared tensor by tensor. Prints one line per size and direction and
exits 1 if any tensor differs (the tf1 layout keeps the sampling head; HF
has no place for it, so it is left out of the hf comparison).
"""

import argparse
import os
import tempfile
import time

from util.cli import tensorflow_startup

tensorflow_startup()

# pylint: disable=g-import-not-at-top
import numpy as np
import tf_keras

import configure
import configure_specs
from interop import hf
from interop import loader
from interop import tf1
from model import builders
from model import transformer_hparams
from util.cli import run_main
# pylint: enable=g-import-not-at-top


def _model(specs, seed):
  """The pre-trainer of `specs` (configure_specs.PretrainingSpecs: its
  network, objective and masking), its variables drawn from `seed` and its
  biases and LayerNorm parameters moved off their 0/1 starts."""
  tf_keras.utils.set_random_seed(seed)
  model = builders.build_pretrainer_with_variables(
      specs.network, specs.objective, specs.masking)
  rng = np.random.default_rng(seed)
  for v in model.variables:
    if any(k in v.name for k in ("bias", "gamma", "beta")):
      v.assign_add(0.1 * rng.standard_normal(v.shape).astype(np.float32))
  return model


def _compare(source, target, skip=()):
  """(tensors compared, tensors that differ, largest difference); `skip`
  holds the refs of source variables to leave out."""
  compared, differ, largest = 0, 0, 0.0
  for a, b in zip(source.variables, target.variables):
    if a.ref() in skip:
      continue
    diff = float(np.max(np.abs(a.numpy() - b.numpy()), initial=0.0))
    compared += 1
    differ += diff != 0.0
    largest = max(largest, diff)
  return compared, differ, largest


def check(size, work_dir, vocab_file, log=print):
  specs = configure_specs.pretraining_specs(configure.PretrainingConfig(
      "check", work_dir, model_size=size, vocab_file=vocab_file,
      sampling="hp_loss", untied_mlm_output=True))
  source = _model(specs, seed=1)
  params = sum(v.shape.num_elements() for v in source.trainable_variables)
  failures = 0
  for fmt in ("hf", "tf1"):
    start = time.time()
    out = os.path.join(work_dir, size + "_" + fmt)
    if fmt == "hf":
      hf.export_hf(source, specs.network, specs.vocabulary, out,
                   log=lambda _: None)
    else:
      tf1.export_tf1(source, specs.network, specs.vocabulary, out,
                     log=lambda _: None)
    target = _model(specs, seed=2)
    loader.load_into(target, out, log=lambda _: None)
    skip = {v.ref() for v in source.generator.sampling_head.weights} if (
        fmt == "hf") else set()
    compared, differ, largest = _compare(source, target, skip)
    failures += differ
    log("%-5s %.1fM params  ours -> %-3s -> ours: %d tensors compared, %d "
        "differ, largest difference %g (%.0f s)" % (
            size, params / 1e6, fmt, compared, differ, largest,
            time.time() - start))
  return failures


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--sizes",
                      default=",".join(transformer_hparams.MODEL_SIZES))
  args = parser.parse_args(argv)
  failures = 0
  with tempfile.TemporaryDirectory() as work_dir:
    vocab_file = os.path.join(work_dir, "vocab.txt")
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    with open(vocab_file, "w") as f:
      f.write("\n".join(special + ["w%d" % i for i in range(
          configure.PRETRAIN_FIELDS["vocab_size"].default - 5)]) + "\n")
    for size in args.sizes.split(","):
      failures += check(size.strip(), work_dir, vocab_file)
  return 1 if failures else 0


if __name__ == "__main__":
  run_main(main)
