"""Hand-built pre-training batches and tiny configs for model tests and benches.

Token ids: 0 [PAD], 1 [CLS], 2 [SEP], 3 [MASK]; ordinary tokens are 4..vocab-1.
The on-disk data directories of the runner tests (`make_data_dir`) use their
own vocab.txt: 0 [PAD], 1 [UNK], 2 [CLS], 3 [SEP], 4 [MASK], then 40 words.
"""

import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

import configure
import configure_specs
from model import builders
from pretrain import pretrain_data
from pretrain import trainer as trainer_lib
from tests import paths

# The random batches live in bench/ (benchmarks use them too), re-exported
# here (`name as name` marks a re-export for linters).
# pylint: disable=useless-import-alias
from bench.batches import CLS_ID as CLS_ID
from bench.batches import FIRST_TOKEN_ID as FIRST_TOKEN_ID
from bench.batches import MASK_ID as MASK_ID
from bench.batches import PAD_ID as PAD_ID
from bench.batches import SEP_ID as SEP_ID
from bench.batches import make_features as make_features
from bench.harness import step_flops as step_flops
# pylint: enable=useless-import-alias

# The tiny transformer of the model tests (2 layers, hidden 32) and its
# embedding width (top-level hparam embedding_size).
TINY_MODEL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=32)
TINY_EMBEDDING_SIZE = 16


def tiny_config(vocab_size=40, seq_len=16, num_predictions=3, **hparams):
  """A `PretrainingConfig` of the tiny transformer; `hparams` override."""
  values = dict(vocab_size=vocab_size, embedding_size=TINY_EMBEDDING_SIZE,
                max_seq_length=seq_len,
                max_predictions_per_seq=num_predictions,
                model_hparam_overrides=dict(TINY_MODEL))
  values.update(hparams)
  return configure.PretrainingConfig("tiny", "/nonexistent", **values)


def build_pretrainer(config):
  """The `ElectraPretrainer` of a `PretrainingConfig`, from its network
  and objective specs (as pretrain/task.py builds it)."""
  specs = configure_specs.pretraining_specs(config)
  return builders.build_pretrainer(specs.network, specs.objective)


def build_pretrainer_with_variables(config):
  """`build_pretrainer(config)` with its variables created (on
  `builders.dummy_features` of the config's masking spec)."""
  specs = configure_specs.pretraining_specs(config)
  return builders.build_pretrainer_with_variables(
      specs.network, specs.objective, specs.masking)


def input_fn(config, is_training, **kwargs):
  """pretrain_data.get_input_fn of a `PretrainingConfig`'s data and masking
  specs; `kwargs` (file_pattern, num_epochs) are passed on."""
  specs = configure_specs.pretraining_specs(config)
  return pretrain_data.get_input_fn(specs.data, specs.masking, is_training,
                                    **kwargs)


def trainer(config, **kwargs):
  """The `PretrainingTrainer` of a `PretrainingConfig`'s specs; `kwargs`
  (log, strategy) are passed on."""
  return trainer_lib.PretrainingTrainer(
      configure_specs.pretraining_specs(config), **kwargs)


def build_discriminator_encoder(config, name="encoder"):
  """The discriminator's encoder of a `PretrainingConfig` or
  `FinetuningConfig` (its NetworkSpec), as fine-tuning builds it."""
  return builders.build_discriminator_encoder(
      configure_specs.NetworkSpec.from_config(config), name=name)


# --- On-disk data directories for the runner tests (run_pretraining.py). ---

# ids 0-4 are the special tokens, then ordinary word tokens.
RUNNER_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
RUNNER_NUM_WORDS = 40

# The tiny model and loop of the runner tests, as `--hparams`.
RUNNER_HPARAMS = dict(
    model_hparam_overrides=dict(hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=64),
    embedding_size=16,
    max_seq_length=32, train_batch_size=8, eval_batch_size=8,
    num_warmup_steps=2, log_every=2, iterations_per_loop=2,
    save_checkpoints_steps=4, num_eval_steps=2, generator_hidden_size=0.5)


def _int64_feature(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def write_shard(path, num_examples, seq_len=32, seed=0):
  """Writes `num_examples` pre-training examples ([CLS] a [SEP] b [SEP])."""
  rng = np.random.default_rng(seed)
  vocab_size = len(RUNNER_SPECIAL_TOKENS) + RUNNER_NUM_WORDS
  cls_id, sep_id = 2, 3
  with tf.io.TFRecordWriter(path) as writer:
    for _ in range(num_examples):
      length = int(rng.integers(seq_len // 2, seq_len + 1))
      split = int(rng.integers(2, length - 2))
      ids = np.zeros(seq_len, np.int64)
      ids[:length] = rng.integers(len(RUNNER_SPECIAL_TOKENS), vocab_size,
                                  length)
      ids[0], ids[split], ids[length - 1] = cls_id, sep_id, sep_id
      mask = (np.arange(seq_len) < length).astype(np.int64)
      segments = ((np.arange(seq_len) > split) & (mask > 0)).astype(np.int64)
      example = tf.train.Example(features=tf.train.Features(feature=dict(
          input_ids=_int64_feature(ids), input_mask=_int64_feature(mask),
          segment_ids=_int64_feature(segments))))
      writer.write(example.SerializeToString())


def make_data_dir(root, num_examples=48, seq_len=32, heldout=True):
  """A data directory as run_pretraining.py expects it; returns its path.

  <root>/vocab.txt (45 tokens), <root>/pretrain_tfrecords/
  pretrain_data.tfrecord-0000{0,1}-of-00002 (`num_examples` each) and,
  with `heldout`, heldout_data.tfrecord-00000-of-00001.
  """
  root = str(root)
  records = os.path.join(root, "pretrain_tfrecords")
  os.makedirs(records, exist_ok=True)
  words = ["word%d" % i for i in range(RUNNER_NUM_WORDS)]
  with open(os.path.join(root, "vocab.txt"), "w") as f:
    f.write("\n".join(RUNNER_SPECIAL_TOKENS + tuple(words)) + "\n")
  for shard in range(2):
    write_shard(os.path.join(
        records, "pretrain_data.tfrecord-%05d-of-00002" % shard),
                num_examples, seq_len, seed=shard)
  if heldout:
    write_shard(os.path.join(records, "heldout_data.tfrecord-00000-of-00001"),
                num_examples // 2, seq_len, seed=100)
  return root


def run_tiny_pretraining(root, model_name, **hparams):
  """run_pretraining.py in a child process, as a user runs it, on a
  `make_data_dir` under `root` with RUNNER_HPARAMS and 2 steps (`hparams`
  override); TF_CONFIG and TF_XLA_FLAGS are not inherited. Returns
  (data_dir, CompletedProcess)."""
  data_dir = make_data_dir(root)
  values = dict(RUNNER_HPARAMS, num_train_steps=2)
  values.update(hparams)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  for name in ("TF_CONFIG", "TF_XLA_FLAGS"):
    env.pop(name, None)
  proc = subprocess.run(
      [sys.executable, "run_pretraining.py", "--data-dir", data_dir,
       "--model-name", model_name, "--hparams", json.dumps(values)],
      cwd=paths.REPO, env=env, capture_output=True, text=True, timeout=600)
  return data_dir, proc
