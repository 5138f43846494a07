"""Random pre-training batches for benchmarks and tests (no data files).

Token ids: 0 [PAD], 1 [CLS], 2 [SEP], 3 [MASK]; ordinary tokens are 4..vocab-1.
"""

import numpy as np
import tensorflow as tf

PAD_ID, CLS_ID, SEP_ID, MASK_ID = 0, 1, 2, 3
FIRST_TOKEN_ID = 4


def make_features(batch, seq_len, num_predictions, vocab_size, seed=0,
                  num_padding_predictions=1, as_tensors=True):
  """A random batch in the format `ElectraPretrainer.call` expects.

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
