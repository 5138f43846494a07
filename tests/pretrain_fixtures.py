"""Hand-built pre-training batches and tiny configs for model tests and benches.

Token ids: 0 [PAD], 1 [CLS], 2 [SEP], 3 [MASK]; ordinary tokens are 4..vocab-1.
The on-disk data directories of the runner tests (`make_data_dir`) use their
own vocab.txt: 0 [PAD], 1 [UNK], 2 [CLS], 3 [SEP], 4 [MASK], then 40 words.
"""

import os

import numpy as np
import tensorflow as tf

import configure

PAD_ID, CLS_ID, SEP_ID, MASK_ID = 0, 1, 2, 3
FIRST_TOKEN_ID = 4

# The tiny transformer of the model tests (2 layers, hidden 32).
TINY_MODEL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, embedding_size=16,
                  max_position_embeddings=32)


def tiny_config(vocab_size=40, seq_len=16, num_predictions=3, **hparams):
  """A `PretrainingConfig` of the tiny transformer; `hparams` override."""
  values = dict(vocab_size=vocab_size, max_seq_length=seq_len,
                max_predictions_per_seq=num_predictions,
                model_hparam_overrides=dict(TINY_MODEL))
  values.update(hparams)
  return configure.PretrainingConfig("tiny", "/nonexistent", **values)


def make_features(batch, seq_len, num_predictions, vocab_size, seed=0,
                  num_padding_predictions=1, as_tensors=True):
  """A random batch in the format `ElectraPretrainingModel.call` expects.

  Each example is [CLS] a [SEP] b [SEP] [PAD]..., with a random real length
  (at least 8 tokens or seq_len), segment 1 on b. Up to `num_predictions`
  distinct ordinary positions are masked (85% become [MASK]); the last
  `num_padding_predictions` slots of every other example are padding
  predictions (position 0, id 0, weight 0), as pretrain/masking.py makes them.

  Returns a dict: input_ids, input_mask, segment_ids, masked_input_ids
  [batch, seq_len] int32; masked_lm_positions, masked_lm_ids
  [batch, num_predictions] int32; masked_lm_weights [batch, num_predictions]
  float32; sample_seed [batch, 2] int32. Tensors, or numpy with
  `as_tensors=False`.
  """
  rng = np.random.default_rng(seed)
  shape = (batch, seq_len)
  input_ids = np.zeros(shape, np.int32)
  input_mask = np.zeros(shape, np.int32)
  segment_ids = np.zeros(shape, np.int32)
  positions = np.zeros((batch, num_predictions), np.int32)
  weights = np.zeros((batch, num_predictions), np.float32)
  for b in range(batch):
    length = int(rng.integers(min(8, seq_len), seq_len + 1))
    split = length // 2
    ids = rng.integers(FIRST_TOKEN_ID, vocab_size, length).astype(np.int32)
    ids[0], ids[split], ids[length - 1] = CLS_ID, SEP_ID, SEP_ID
    input_ids[b, :length] = ids
    input_mask[b, :length] = 1
    segment_ids[b, split + 1:length] = 1
    candidates = [t for t in range(length) if ids[t] >= FIRST_TOKEN_ID]
    num = min(num_predictions, len(candidates))
    if b % 2 == 1:
      num = max(1, num - num_padding_predictions)
    chosen = np.sort(rng.choice(candidates, num, replace=False))
    positions[b, :num] = chosen
    weights[b, :num] = 1.0
  labels = np.take_along_axis(input_ids, positions, axis=1) * (weights > 0)
  masked_input_ids = input_ids.copy()
  for b in range(batch):
    for p in range(num_predictions):
      if weights[b, p] > 0 and rng.random() < 0.85:
        masked_input_ids[b, positions[b, p]] = MASK_ID
  features = dict(
      input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
      masked_input_ids=masked_input_ids, masked_lm_positions=positions,
      masked_lm_ids=labels.astype(np.int32), masked_lm_weights=weights,
      sample_seed=rng.integers(-2**31, 2**31 - 1, (batch, 2)).astype(
          np.int32))
  if as_tensors:
    return {k: tf.constant(v) for k, v in features.items()}
  return features


# --- On-disk data directories for the runner tests (run_pretraining.py). ---

# ids 0-4 are the special tokens, then ordinary word tokens.
RUNNER_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
RUNNER_NUM_WORDS = 40

# The tiny model and loop of the runner tests, as `--hparams`.
RUNNER_HPARAMS = dict(
    model_hparam_overrides=dict(hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=64,
                                embedding_size=16),
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
