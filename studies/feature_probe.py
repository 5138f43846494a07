"""What a start's frozen features tell a sentence task, beside random ones.

  python -m studies.feature_probe --data-dir D --task sst500 \\
      --hparams '{"model_hparam_overrides": {...}, "vocab_size": 7472}' \\
      [--checkpoint CKPT] [--text-column sentence] [--label-column label]

Fine-tuning mixes two questions: are the start's features worth more than
random ones, and does fine-tuning keep them? This answers the first alone.
The encoder (random initialisation, or `--checkpoint`: a pre-training
checkpoint prefix or directory) stays frozen; the task's train.tsv and
dev.tsv (D/finetuning_data/<task>) are encoded, and a logistic regression
on standardised features (`fit_logistic_regression`, its L2 weight chosen
by 5-fold cross-validation on train) is scored on dev. The features:
  cls         the top layer's [CLS] state                [hidden]
  mean        the mean of the top layer's token states   [hidden]
  embeddings  the mean of the input word embeddings      [embedding_size]
  bag_of_words  token counts, no encoder at all          [vocab_size]
A start worth fine-tuning should at least beat random initialisation's
`mean` and `cls` (issue 48; docs/performance.md has the measurements).
Prints one line per feature and, with --json, writes them.
"""

import argparse
import json

from util.cli import tensorflow_startup

tensorflow_startup()

import numpy as np  # noqa: E402 (after tensorflow_startup)
import tf_keras  # noqa: E402

import configure  # noqa: E402
import configure_finetuning_specs  # noqa: E402
from finetune import readers  # noqa: E402
from interop import checkpoints  # noqa: E402
from model.builders import build_discriminator_encoder  # noqa: E402
from text import tokenization  # noqa: E402
from util.cli import run_main  # noqa: E402
from util.errors import UserError  # noqa: E402

L2_GRID = (1e-3, 1e-2, 1e-1)
FOLDS = 5


def fit_logistic_regression(x, y, l2, steps=1000, learning_rate=0.5):
  """Multinomial logistic regression by full-batch gradient descent.

  Args:
    x: [n, d] float features (standardised by the caller).
    y: [n] int labels in [0, k).
    l2: weight of the L2 penalty on the weights.
  Returns: (weights [d, k], bias [k]).
  """
  k = int(y.max()) + 1
  onehot = np.eye(k)[y]
  w, b = np.zeros((x.shape[1], k)), np.zeros(k)
  for _ in range(steps):
    logits = x @ w + b
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    w -= learning_rate * (x.T @ (p - onehot) / len(y) + l2 * w)
    b -= learning_rate * (p - onehot).mean(0)
  return w, b


def probe_accuracy(train_x, train_y, dev_x, dev_y):
  """Dev accuracy (%) of the regression whose L2 weight did best in 5-fold
  cross-validation on train. Returns (accuracy, chosen l2)."""
  mu, sd = train_x.mean(0), train_x.std(0) + 1e-6
  train_x, dev_x = (train_x - mu) / sd, (dev_x - mu) / sd
  folds = np.arange(len(train_y)) % FOLDS

  def fold_accuracy(l2):
    right = 0
    for f in range(FOLDS):
      w, b = fit_logistic_regression(train_x[folds != f],
                                     train_y[folds != f], l2)
      right += np.sum((train_x[folds == f] @ w + b).argmax(1) ==
                      train_y[folds == f])
    return right

  l2 = max(L2_GRID, key=fold_accuracy)
  w, b = fit_logistic_regression(train_x, train_y, l2)
  return 100.0 * np.mean((dev_x @ w + b).argmax(1) == dev_y), l2


def read_split(path, tokenizer, max_seq_length, text_column, label_column):
  """(input_ids [n, max_seq_length] int32, input_mask, labels [n]) of a
  tab-separated file with a header; labels are mapped to 0..k-1 in sorted
  order by the caller."""
  columns, rows = readers.read_tsv(path, has_header=True)
  text_i = readers.column_index(columns, text_column, path, "tsv")
  label_i = readers.column_index(columns, label_column, path, "tsv")
  ids = np.zeros((len(rows), max_seq_length), np.int32)
  for i, row in enumerate(rows):
    pieces = tokenizer.tokenize(readers.get_field(row, text_i, "text"))
    tokens = ["[CLS]"] + pieces[:max_seq_length - 2] + ["[SEP]"]
    token_ids = tokenizer.convert_tokens_to_ids(tokens)
    ids[i, :len(token_ids)] = token_ids
  labels = [readers.get_field(row, label_i, "label") for row in rows]
  return ids, (ids > 0).astype(np.int32), labels


def encoder_features(encoder, ids, mask, batch_size=256):
  """{"cls", "mean", "embeddings"}: [n, width] float arrays."""
  states = np.concatenate([np.asarray(encoder(dict(
      input_ids=ids[s:s + batch_size], input_mask=mask[s:s + batch_size],
      segment_ids=np.zeros_like(ids[s:s + batch_size])), training=False))
                           for s in range(0, len(ids), batch_size)])
  table = next(v for v in encoder.weights
               if "word_embeddings" in v.name).numpy()
  weights = mask[..., None].astype(np.float64)
  return dict(cls=states[:, 0],
              mean=(states * weights).sum(1) / weights.sum(1),
              embeddings=(table[ids] * weights).sum(1) / weights.sum(1))


def bag_of_words(splits, vocab_size):
  """[[n, v] token counts of the real tokens] per split, v the tokens that
  occur in the first split (the others carry no weight a regression on it
  could learn)."""
  counts = []
  for ids, mask in splits:
    c = np.zeros((len(ids), vocab_size))
    for i in range(len(ids)):
      np.add.at(c[i], ids[i][mask[i] > 0], 1.0)
    counts.append(c)
  seen = counts[0].sum(0) > 0
  return [c[:, seen] for c in counts]


def _finetuning_specs(args):
  """The fine-tuning specs of the probed encoder: `--hparams` (JSON) on
  task `--task` at `--max-seq-length`."""
  try:
    hparams = json.loads(args.hparams)
  except ValueError as e:
    raise UserError("--hparams is not JSON: %s" % e)
  return configure_finetuning_specs.finetuning_specs(
      configure.FinetuningConfig(
          model_name="feature_probe", data_dir=args.data_dir,
          task_names=[args.task], max_seq_length=args.max_seq_length,
          **hparams))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--data-dir", required=True)
  parser.add_argument("--task", required=True,
                      help="A folder of D/finetuning_data with train.tsv "
                      "and dev.tsv.")
  parser.add_argument("--checkpoint", default="none",
                      help="A pre-training checkpoint prefix or directory; "
                      "\"none\": random initialisation.")
  parser.add_argument("--hparams", default="{}",
                      help="JSON: the encoder's sizes, as run_finetuning.py "
                      "takes them.")
  parser.add_argument("--text-column", default="sentence")
  parser.add_argument("--label-column", default="label")
  parser.add_argument("--max-seq-length", type=int, default=64)
  parser.add_argument("--seed", type=int, default=1)
  parser.add_argument("--json", help="Write the accuracies here.")
  args = parser.parse_args(argv)
  specs = _finetuning_specs(args)
  task_dir = "%s/finetuning_data/%s" % (args.data_dir, args.task)
  tokenizer = tokenization.tokenizer_for(specs.vocabulary.vocab_file)
  splits = [read_split(readers.find_split_file(args.task, task_dir, split,
                                               [split + ".tsv"]),
                       tokenizer, args.max_seq_length, args.text_column,
                       args.label_column) for split in ("train", "dev")]
  names = sorted(set(splits[0][2]))
  unknown = sorted(set(splits[1][2]) - set(names))
  if unknown:
    raise UserError("dev.tsv of task %r has labels not in train.tsv: %s" % (
        args.task, ", ".join(unknown[:5])))
  labels = [np.array([names.index(v) for v in s[2]]) for s in splits]
  tf_keras.utils.set_random_seed(args.seed)
  encoder = build_discriminator_encoder(specs.network)
  encoder_features(encoder, splits[0][0][:1], splits[0][1][:1])  # builds it
  if args.checkpoint != "none":
    checkpoints.restore_discriminator(encoder, args.checkpoint)
  features = [encoder_features(encoder, s[0], s[1]) for s in splits]
  if args.checkpoint == "none":
    for f, counts in zip(features, bag_of_words(
        [s[:2] for s in splits], specs.network.vocab_size)):
      f["bag_of_words"] = counts
  results = {}
  for name in features[0]:
    accuracy, l2 = probe_accuracy(features[0][name], labels[0],
                                  features[1][name], labels[1])
    results[name] = dict(dev_accuracy=accuracy, l2=l2)
    print("%-12s dev accuracy %.2f (l2 %g, %d train / %d dev)" % (
        name, accuracy, l2, len(labels[0]), len(labels[1])))
  if args.json:
    with open(args.json, "w", encoding="utf-8") as f:
      json.dump(dict(checkpoint=args.checkpoint, task=args.task,
                     results=results), f, indent=2)
  return 0


if __name__ == "__main__":
  run_main(main)
