"""Fine-tuned weights of one device vs 2 logical CPU replicas (mirrored).

For tests/finetune/test_finetune_training.py; run in a fresh process (the
CPU must be split before TensorFlow starts):

  python -m tests.mirrored_finetune_check OUT_DIR HPARAMS_JSON

Fine-tunes the tiny model on the `sst` fixture twice from the same random
initialisation (seeded): first with strategy "mirrored" over 2 logical CPUs,
then with the default strategy, and writes OUT_DIR/weights.npz with
`<strategy>/<variable name>` of each trained model and the per-chunk losses.
"""

import json
import os
import sys


import numpy as np  # pylint: disable=g-import-not-at-top

from finetune import runner  # pylint: disable=g-import-not-at-top
from tests import finetune_fixtures  # pylint: disable=g-import-not-at-top


def main(out_dir, hparams):
  hparams = json.loads(hparams)
  results = {}
  for name, extra in (("mirrored", dict(strategy="mirrored",
                                        num_cpu_devices=2)),
                      ("default", {})):
    config = finetune_fixtures.tiny_config(
        model_dir=os.path.join(out_dir, name), **dict(hparams, **extra))
    record = runner.run_finetuning(config)["sst"]
    results["%s/losses" % name] = np.array(
        [loss for _, loss in record["trials"][0]["losses"]])
    reader_dir = os.path.join(out_dir, name, "finetuning_models", "sst",
                              "trial_1", "best")
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(reader_dir))
    for key, dtype in reader.get_variable_to_dtype_map().items():
      if key.startswith("model/") and dtype == tf.float32 and (
          "OPTIMIZER_SLOT" not in key):
        results["%s/%s" % (name, key)] = reader.get_tensor(key)
  np.savez(os.path.join(out_dir, "weights.npz"), **results)


if __name__ == "__main__":
  main(*sys.argv[1:])
