"""Tiny fine-tuning configs over the fixtures in tests/fixtures/finetune/.

`FIXTURE_DIR` is a data dir: `finetuning_data/<task>/` in each task's official
format and a 219-entry WordPiece `vocab.txt` (0 [PAD], 1 [UNK], 2 [CLS],
3 [SEP], 4 [MASK]; "barked", "sailors", "verbs" split into pieces).
"""

import os

import configure
import configure_finetuning_specs
from finetune import preprocessing
from finetune import task_builder
from finetune import trainer as trainer_lib

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "fixtures", "finetune")
VOCAB_FILE = os.path.join(FIXTURE_DIR, "vocab.txt")
VOCAB_SIZE = 219

TINY_MODEL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=64)


def tiny_hparams(model_dir, **overrides):
  """Hparams of a tiny fine-tuning run writing under `model_dir`."""
  hparams = dict(
      model_dir=str(model_dir), vocab_file=VOCAB_FILE, vocab_size=VOCAB_SIZE,
      embedding_size=32,
      init_checkpoint="none", max_seq_length=32, max_query_length=12,
      doc_stride=8, train_batch_size=8, eval_batch_size=8,
      num_train_epochs=1.0, learning_rate=0.01, log_every=4,
      model_hparam_overrides=dict(TINY_MODEL))
  hparams.update(overrides)
  return hparams


def tiny_config(model_dir="/nonexistent", data_dir=FIXTURE_DIR, **overrides):
  """A `FinetuningConfig` of the tiny transformer over the fixtures."""
  return configure.FinetuningConfig("tiny", str(data_dir),
                                    **tiny_hparams(model_dir, **overrides))


def build_tokenizer(config):
  """The checked tokenizer of a `FinetuningConfig`'s vocabulary spec, as
  finetune/runner.py builds it."""
  specs = configure_finetuning_specs.finetuning_specs(config)
  return preprocessing.build_tokenizer(specs.vocabulary,
                                       specs.network.vocab_size)


def get_task(config, name, tokenizer):
  """Task `name` of a `FinetuningConfig`'s task spec."""
  return task_builder.get_task(
      configure_finetuning_specs.FinetuningTaskSpec.from_config(config),
      name, tokenizer)


def trainer(config, task, strategy, trial_dir, **kwargs):
  """The fine-tuning `Trainer` of one trial of a `FinetuningConfig`'s
  specs; `kwargs` (seed, log_prefix) are passed on."""
  return trainer_lib.Trainer(
      configure_finetuning_specs.finetuning_specs(config), task, strategy,
      trial_dir, **kwargs)
