"""The frozen specs of a fine-tuning run, made from a `FinetuningConfig`.

As configure_specs.py does for pre-training (whose network, runtime and
vocabulary specs fine-tuning shares): runner.py makes them once from the
config and hands each part of finetune/ the ones it uses.

  network        configure_specs.NetworkSpec: D's sizes
  runtime        configure_specs.RuntimeSpec: precision, compilation,
                 devices and strategy
  vocabulary     configure_specs.VocabularySpec: the vocabulary file and
                 its casing
  task           FinetuningTaskSpec: what a fine-tuning task reads (its
                 files, example lengths, head, SQuAD's windows and spans)
  training       FinetuningTrainingSpec: one fine-tuning trial's start,
                 schedule, optimizer and batches

`finetuning_specs(config)` makes them all (`FinetuningSpecs`).
"""

import collections
import dataclasses
from typing import Mapping
from typing import Optional

import configure_specs


@dataclasses.dataclass(frozen=True)
class FinetuningTaskSpec(object):
  """What a fine-tuning task reads (finetune/task.py and its subclasses).

  data_dir: the data directory (the task's files are under
    `<data_dir>/finetuning_data/<task>/`); model_dir: the model's (a task
    of your own keeps its labels there).
  do_train: the run fine-tunes (a task of your own then records its
    labels).
  max_seq_length: the tokens of one feature; do_lower_case: SQuAD's answer
    text is matched lower-cased.
  encoder: the discriminator's transformer hparams (the heads' widths,
    activation, dropout and initializer range), read-only.
  classifier_pooling: what a sentence (pair) head reads, "cls" or "mean".
  max_query_length, doc_stride, n_best_size, max_answer_length,
    answerable_weight: SQuAD's windows, answer spans and SQuAD 2.0's loss.
  """

  data_dir: str
  model_dir: str
  do_train: bool
  max_seq_length: int
  do_lower_case: bool
  encoder: Mapping
  classifier_pooling: str
  max_query_length: int
  doc_stride: int
  n_best_size: int
  max_answer_length: int
  answerable_weight: float

  @classmethod
  def from_config(cls, config):
    """Of a `FinetuningConfig`."""
    return configure_specs.spec_from(
        cls, config, encoder=configure_specs.read_only(config.model_hparams))


@dataclasses.dataclass(frozen=True)
class FinetuningTrainingSpec(object):
  """One fine-tuning trial's start, schedule and update
  (finetune/trainer.py).

  reinit_top_layers, shrink_to_fresh: how the pre-trained encoder starts.
  learning_rate, num_train_epochs, warmup_proportion: the schedule (linear
    warmup over that fraction of the steps, linear decay to 0).
  layerwise_lr_decay, layerwise_lr_decay_rule: the encoder's rates per
    layer.
  weight_decay_rate, adam_epsilon: AdamW's; clip_norm: the gradients'
    global-norm clip.
  train_batch_size, eval_batch_size: the global batches.
  loss_scale: the initial dynamic loss scale under float16, else None.
  log_every: steps between progress lines.
  """

  reinit_top_layers: int
  shrink_to_fresh: float
  learning_rate: float
  num_train_epochs: float
  warmup_proportion: float
  layerwise_lr_decay: float
  layerwise_lr_decay_rule: str
  weight_decay_rate: float
  adam_epsilon: float
  clip_norm: float
  train_batch_size: int
  eval_batch_size: int
  loss_scale: Optional[float]
  log_every: int

  @classmethod
  def from_config(cls, config):
    """Of a `FinetuningConfig`."""
    return configure_specs.spec_from(
        cls, config, loss_scale=configure_specs.initial_loss_scale(config))


FinetuningSpecs = collections.namedtuple(
    "FinetuningSpecs", "network runtime vocabulary task training")
FinetuningSpecs.__doc__ = """Every spec of a fine-tuning config: what
finetune/runner.py hands its parts."""


def finetuning_specs(config):
  """The `FinetuningSpecs` of a `configure.FinetuningConfig`."""
  return FinetuningSpecs(
      configure_specs.NetworkSpec.from_config(config),
      configure_specs.RuntimeSpec.from_config(config),
      configure_specs.VocabularySpec.from_config(config),
      FinetuningTaskSpec.from_config(config),
      FinetuningTrainingSpec.from_config(config))
