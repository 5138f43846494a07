"""Dynamic masking of pre-training examples (docs/method.md §2).

Positions are drawn without replacement by Gumbel top-k over the candidate
tokens (real tokens other than the special ones); of the chosen positions 85%
become [MASK] and 15% keep their token (ELECTRA's rule, not BERT's 80/10/10).
Each example's mask is a function of its own stateless seed only (never of
the batch it is in), and all shapes are static. The same seed gives the same
mask on every CPU run (the input pipeline runs on the host CPU); the code also
compiles under XLA, whose Philox stream is not bit-identical to the CPU
kernel's, so compiled masks differ from CPU ones.
"""

import tensorflow as tf

# ELECTRA replaces 85% of the chosen positions with [MASK]; the rest keep
# their token (the generator still has to predict them).
MASK_TOKEN_PROB = 0.85
_RNG_ALG = "philox"


def num_to_predict(num_tokens, num_candidates, max_predictions_per_seq,
                   mask_prob):
  """k = max(1, min(P, round(mask_prob * num_tokens))), at most num_candidates.

  Args:
    num_tokens: [...] int32, real tokens per example ([CLS]/[SEP] count).
    num_candidates: [...] int32, tokens that may be masked.
    max_predictions_per_seq: P, a Python int.
    mask_prob: a Python float in (0, 1).

  Returns:
    [...] int32 k; 0 only where there is no candidate.
  """
  k = tf.cast(tf.round(mask_prob * tf.cast(num_tokens, tf.float32)), tf.int32)
  k = tf.maximum(1, tf.minimum(max_predictions_per_seq, k))
  return tf.minimum(k, num_candidates)


def mask_example(input_ids, input_mask, seed, *, max_predictions_per_seq,
                 mask_prob, mask_id, special_ids,
                 mask_token_prob=MASK_TOKEN_PROB):
  """Chooses and masks the prediction positions of one example.

  Args:
    input_ids: [seq_len] int token ids (static seq_len).
    input_mask: [seq_len] int, 1 for real tokens, 0 for padding.
    seed: [2] int32 or int64 seed of the stateless RNG.
    max_predictions_per_seq: P, prediction slots (<= seq_len).
    mask_prob: fraction of the real tokens to predict.
    mask_id: id of [MASK].
    special_ids: ids never chosen ([CLS], [SEP], [PAD]; [MASK] is always
      excluded as well).
    mask_token_prob: probability that a chosen position becomes [MASK].

  Returns:
    A dict of
      masked_input_ids: [seq_len] int32, input_ids with [MASK] put in.
      masked_lm_positions: [P] int32, chosen positions ascending, then 0s.
      masked_lm_ids: [P] int32, original tokens there (0 in padding slots).
      masked_lm_weights: [P] float32, 1 for real predictions, 0 for padding.
  """
  input_ids = tf.convert_to_tensor(input_ids)
  uniform = _uniforms(seed, input_ids.shape[0])
  out = _mask_from_uniforms(
      input_ids[None], tf.convert_to_tensor(input_mask)[None], uniform[None],
      max_predictions_per_seq, mask_prob, mask_id, special_ids,
      mask_token_prob)
  return {name: value[0] for name, value in out.items()}


def mask_batch(input_ids, input_mask, seeds, *, max_predictions_per_seq,
               mask_prob, mask_id, special_ids,
               mask_token_prob=MASK_TOKEN_PROB):
  """`mask_example` on every row of a batch, each with its own seed.

  Row b gives exactly mask_example(input_ids[b], input_mask[b], seeds[b]);
  batching only makes it faster.

  Args:
    input_ids: [batch, seq_len] int token ids.
    input_mask: [batch, seq_len] int.
    seeds: [batch, 2] int32 or int64 seeds.
    (the rest as for mask_example)

  Returns:
    The dict of mask_example with a leading batch dimension.
  """
  input_ids = tf.convert_to_tensor(input_ids)
  seq_len = input_ids.shape[1]
  uniform = tf.map_fn(lambda seed: _uniforms(seed, seq_len), seeds,
                      fn_output_signature=tf.float32)
  return _mask_from_uniforms(input_ids, input_mask, uniform,
                             max_predictions_per_seq, mask_prob, mask_id,
                             special_ids, mask_token_prob)


def _uniforms(seed, seq_len):
  """[2, seq_len] uniforms: row 0 ranks positions, row 1 is the [MASK] coin."""
  if seq_len is None:
    raise ValueError("masking needs a static sequence length.")
  return tf.random.stateless_uniform([2, seq_len], seed, alg=_RNG_ALG)


def _mask_from_uniforms(input_ids, input_mask, uniform,
                        max_predictions_per_seq, mask_prob, mask_id,
                        special_ids, mask_token_prob):
  """The masking rule given the randomness; shapes [B, L], uniform [B, 2, L]."""
  input_ids = tf.cast(input_ids, tf.int32)
  input_mask = tf.cast(input_mask, tf.int32)
  seq_len = input_ids.shape[1]
  num_slots = max_predictions_per_seq
  if not 1 <= num_slots <= seq_len:
    raise ValueError("max_predictions_per_seq %d must be in [1, %d]." %
                     (num_slots, seq_len))

  excluded = tf.constant(sorted(set(special_ids) | {mask_id}), tf.int32)
  is_special = tf.reduce_any(input_ids[..., None] == excluded, axis=-1)
  candidate = tf.logical_and(input_mask > 0, tf.logical_not(is_special))
  k = num_to_predict(tf.reduce_sum(input_mask, -1),
                     tf.reduce_sum(tf.cast(candidate, tf.int32), -1),
                     num_slots, mask_prob)

  # Gumbel top-k with equal weights is top-k of the uniforms themselves
  # (-log(-log u) is increasing), so the logs are left out. Excluded
  # positions score -1, below every uniform.
  scores = tf.where(candidate, uniform[:, 0], -1.0)
  _, top = tf.math.top_k(scores, k=num_slots, sorted=True)
  # The k best are the sample without replacement; sort them ascending and
  # push the unused slots to the end.
  used = tf.range(num_slots) < k[:, None]
  positions = tf.sort(tf.where(used, top, seq_len), axis=-1)
  valid = positions < seq_len
  positions = tf.where(valid, positions, 0)

  # [B, P, L] -> [B, L]: is position l one of the valid chosen ones?
  chosen = tf.reduce_any(tf.logical_and(
      positions[..., None] == tf.range(seq_len), valid[..., None]), axis=1)
  to_mask = tf.logical_and(chosen, uniform[:, 1] < mask_token_prob)
  original = tf.gather(input_ids, positions, batch_dims=1)
  return {
      "masked_input_ids": tf.where(to_mask, mask_id, input_ids),
      "masked_lm_positions": positions,
      "masked_lm_ids": tf.where(valid, original, 0),
      "masked_lm_weights": tf.cast(valid, tf.float32),
  }
