"""Tokenizer, text-to-ids encoding and tf.data pipelines shared by all tasks.

Features are dicts of numpy arrays with one row per model input ("feature";
a long SQuAD paragraph or tagging sentence can give several). Every feature
dict has `feature_index` [num_features] so predictions can be matched back to
their feature after a distributed, padded evaluation.
"""

import numpy as np
import tensorflow as tf

from text import tokenization
from util.errors import UserError

# Padding rows added to fill the last evaluation batch carry this index.
PADDING_INDEX = -1


def build_tokenizer(vocabulary, vocab_size):
  """The project's tokenizer of a configure_specs.VocabularySpec (its
  vocab_file, a WordPiece vocab.txt or a SentencePiece model, and
  do_lower_case: `tokenization.tokenizer_for`), checked against the
  model's `vocab_size`."""
  tokenizer = tokenization.tokenizer_for(vocabulary)
  if len(tokenizer.vocab) > vocab_size:
    raise UserError("vocabulary %s has %d entries but the model's vocab_size "
                    "is %d; set hparam 'vocab_size' to %d." % (
                        vocabulary.vocab_file, len(tokenizer.vocab),
                        vocab_size, len(tokenizer.vocab)))
  return tokenizer


class CachedTokenizer(object):
  """`tokenize` served from one batched tokenization of known texts.

  squad_lib tokenizes every word of every paragraph in its own call; the
  project's tokenizer is fast per batch, not per call. Texts not given at
  construction fall back to the wrapped tokenizer.
  """

  def __init__(self, tokenizer, texts):
    self._tokenizer = tokenizer
    unique = sorted(set(texts))
    self._tokens = {text: tokenizer.convert_ids_to_tokens(ids) for text, ids
                    in zip(unique, tokenizer.encode_batch(unique))}

  def tokenize(self, text):
    tokens = self._tokens.get(text)
    return list(tokens) if tokens is not None else self._tokenizer.tokenize(
        text)

  def convert_tokens_to_ids(self, tokens):
    return self._tokenizer.convert_tokens_to_ids(tokens)


def truncate_pair(tokens_a, tokens_b, max_length):
  """Drops tokens from the end of the longer list until both fit together."""
  while len(tokens_a) + len(tokens_b) > max_length:
    longer = tokens_a if len(tokens_a) >= len(tokens_b) else tokens_b
    longer.pop()


def encode_pair(tokenizer, ids_a, ids_b, max_seq_length):
  """[CLS] a [SEP] (b [SEP]) from token ids; `ids_b` None for one text.

  Returns (input_ids, input_mask, segment_ids), lists of max_seq_length.
  """
  pair = ids_b is not None
  needed = 5 if pair else 3  # [CLS] a [SEP] (b [SEP]), a token of each.
  if max_seq_length < needed:
    raise UserError(
        "max_seq_length %d is below the %d tokens an example of %s needs "
        "(%s, one token of each text); raise hparam max_seq_length." % (
            max_seq_length, needed, "two texts" if pair else "one text",
            "[CLS] A [SEP] B [SEP]" if pair else "[CLS] A [SEP]"))
  ids_a, ids_b = list(ids_a), list(ids_b) if pair else []
  truncate_pair(ids_a, ids_b, max_seq_length - (3 if pair else 2))
  ids = [tokenizer.cls_id] + ids_a + [tokenizer.sep_id]
  segments = [0] * len(ids)
  if pair:
    ids += ids_b + [tokenizer.sep_id]
    segments += [1] * (len(ids_b) + 1)
  return pad_ids(tokenizer, ids, segments, max_seq_length)


def pad_ids(tokenizer, ids, segments, max_seq_length):
  """Pads ids/segments to max_seq_length; returns (ids, mask, segments)."""
  num_pad = max_seq_length - len(ids)
  mask = [1] * len(ids) + [0] * num_pad
  return (ids + [tokenizer.pad_id] * num_pad, mask, segments + [0] * num_pad)


def stack_features(rows):
  """A list of {name: value} dicts -> {name: np.array [num_rows, ...]}."""
  if not rows:
    return {}
  features = {}
  for name in rows[0]:
    values = [row[name] for row in rows]
    dtype = np.float32 if isinstance(values[0], float) or (
        isinstance(values[0], list) and values[0] and
        isinstance(values[0][0], float)) else np.int32
    features[name] = np.asarray(values, dtype=dtype)
  features["feature_index"] = np.arange(len(rows), dtype=np.int32)
  return features


def num_features(features):
  return len(features["feature_index"])


def train_dataset(features, batch_size, seed):
  """Shuffled, repeated, full batches of `batch_size` for training."""
  dataset = tf.data.Dataset.from_tensor_slices(features)
  dataset = dataset.shuffle(min(num_features(features), 100000), seed=seed,
                            reshuffle_each_iteration=True)
  return dataset.repeat().batch(batch_size, drop_remainder=True).prefetch(2)


def eval_dataset(features, batch_size):
  """Batches of `batch_size` in order; the last one is filled with padding
  rows (feature_index PADDING_INDEX) so every batch has one static shape."""
  n = num_features(features)
  num_pad = (-n) % batch_size
  if num_pad:
    features = {name: np.concatenate([value, np.repeat(value[:1], num_pad,
                                                       axis=0)])
                for name, value in features.items()}
    features["feature_index"][n:] = PADDING_INDEX
  dataset = tf.data.Dataset.from_tensor_slices(features)
  return dataset.batch(batch_size, drop_remainder=True).prefetch(2)
