"""Word embeddings counted from the pre-training corpus, to start the table.

Within a CPU budget on a small corpus, the embedding table that MLM or
ELECTRA training learns is worse for a small labelled task than a random
one (docs/performance.md), while the same text's co-occurrence counts
already group words by use: the positive pointwise mutual information of
token pairs within a window, factorised by a truncated SVD (Levy and
Goldberg 2014), puts "boring" beside "bland" and "tedious" from 0.16 M
words. Hparam `embedding_init: "corpus"` starts a new run's embedding
table from that factorisation (docs/method.md §14.1); pre-training
then goes on from it as from any start.

Only the `max_vocab` most frequent token ids are counted (a dense
[max_vocab, max_vocab] matrix); rarer ids and the special tokens keep
their random initialisation. The counted rows are scaled to the random
rows' standard deviation, so the table's scale, and so its balance with
the position embeddings, is what the initializer gives.
"""

import glob
import time

import numpy as np

WINDOW = 5
MAX_VOCAB = 10000
MAX_TOKENS = 20000000
CONTEXT_POWER = 0.75  # Context-distribution smoothing (Levy et al. 2015).


def read_input_ids(pattern, max_tokens=MAX_TOKENS):
  """[n, seq_len] int64 input ids of the examples of a TFRecord glob, in
  file order, up to about `max_tokens` positions."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  feature = {"input_ids": tf.io.RaggedFeature(tf.int64)}
  batches = tf.data.TFRecordDataset(sorted(glob.glob(pattern))).batch(
      1024).map(lambda records: tf.io.parse_example(records, feature)[
          "input_ids"].to_tensor())
  rows, positions = [], 0
  for batch in batches.as_numpy_iterator():
    rows.append(batch)
    positions += batch.size
    if positions >= max_tokens:
      break
  if not rows:
    raise ValueError("no examples in %s" % pattern)
  input_ids = np.concatenate(rows)
  # The rows up to the one that reaches `max_tokens`.
  return input_ids[:-(-max_tokens // input_ids.shape[1])]


def counted_ids(input_ids, vocab_size, special_ids, max_vocab=MAX_VOCAB):
  """The ids to count: the `max_vocab` most frequent non-special ids that
  occur, most frequent first. [k] int64."""
  counts = np.bincount(input_ids.ravel(), minlength=vocab_size)[:vocab_size]
  counts[list(special_ids)] = 0
  order = np.argsort(-counts, kind="stable")
  return order[:min(max_vocab, int((counts > 0).sum()))]


def cooccurrence_counts(input_ids, ids, window=WINDOW):
  """Symmetric counts of id pairs within `window` positions of each other
  in a row, each weighted 1/distance (as GloVe does); ids outside `ids` are
  skipped but keep their positions. [k, k] float64, indexed like `ids`."""
  k = len(ids)
  compact = np.full(int(input_ids.max()) + 1, -1, np.int64)
  compact[ids] = np.arange(k)
  rows = compact[input_ids]
  flat = np.zeros(k * k, np.float64)
  for distance in range(1, window + 1):
    left, right = rows[:, :-distance].ravel(), rows[:, distance:].ravel()
    both = (left >= 0) & (right >= 0)
    keys = left[both] * k + right[both]
    flat += np.bincount(keys, minlength=k * k) / distance
  counts = flat.reshape(k, k)
  return counts + counts.T


def positive_pmi(counts, context_power=CONTEXT_POWER):
  """max(0, log p(w, c) / (p(w) p_a(c))), p_a the context distribution
  raised to `context_power` and renormalised. [k, k] float32."""
  total = counts.sum()
  words = counts.sum(1, keepdims=True) / total
  contexts = counts.sum(0, keepdims=True) ** context_power
  contexts /= contexts.sum()
  with np.errstate(divide="ignore"):
    pmi = np.log(counts / total) - np.log(np.maximum(words * contexts, 1e-30))
  return np.maximum(pmi, 0.0).astype(np.float32)


def truncated_svd(matrix, dim, seed, power_iterations=4, oversample=16):
  """(U [k, dim], s [dim]) of `matrix`'s top `dim` singular directions, by
  a randomised range finder (Halko et al. 2011)."""
  rng = np.random.default_rng(seed)
  width = min(dim + oversample, matrix.shape[1])
  basis, _ = np.linalg.qr(matrix @ rng.standard_normal(
      (matrix.shape[1], width)).astype(np.float32))
  for _ in range(power_iterations):
    basis, _ = np.linalg.qr(matrix.T @ basis)
    basis, _ = np.linalg.qr(matrix @ basis)
  u_small, s, _ = np.linalg.svd(basis.T @ matrix, full_matrices=False)
  return (basis @ u_small)[:, :dim], s[:dim]


def counted_vectors(input_ids, vocab_size, dim, special_ids, seed,
                    window=WINDOW, max_vocab=MAX_VOCAB):
  """(ids [k], vectors [k, dim] float32): the counted ids and their
  PPMI-SVD embeddings U sqrt(s), not yet scaled to a table."""
  ids = counted_ids(input_ids, vocab_size, special_ids, max_vocab)
  if len(ids) < 2:
    raise ValueError("too few distinct tokens to count (%d)" % len(ids))
  pmi = positive_pmi(cooccurrence_counts(input_ids, ids, window))
  u, s = truncated_svd(pmi, min(dim, len(ids)), seed)
  vectors = np.zeros((len(ids), dim), np.float32)
  vectors[:, :u.shape[1]] = u * np.sqrt(s)
  return ids, vectors


def with_counted_rows(table, ids, vectors):
  """`table` [vocab, dim] with rows `ids` replaced by `vectors`, scaled by
  one factor to the standard deviation of `table`'s own rows. float32."""
  out = np.array(table, np.float32)
  out[ids] = vectors * (table.std() / max(vectors.std(), 1e-12))
  return out


def corpus_embedding_table(input_ids, table, special_ids, seed,
                           window=WINDOW, max_vocab=MAX_VOCAB):
  """`table` [vocab, dim] with the rows of the counted ids replaced by
  their PPMI-SVD embeddings (`counted_vectors`, `with_counted_rows`).
  Returns (new table float32, number of rows set)."""
  ids, vectors = counted_vectors(input_ids, table.shape[0], table.shape[1],
                                 special_ids, seed, window, max_vocab)
  return with_counted_rows(table, ids, vectors), len(ids)


def start_from_corpus(model, pattern, special_ids, seed, log=print,
                      max_tokens=MAX_TOKENS):
  """Sets every word-embedding table of `model` (D's, and G's when it has
  its own) from the corpus of `pattern`, a TFRecord glob of pre-training
  examples, counted once; logs what it did. Returns the number of rows
  set."""
  from model import builders  # pylint: disable=g-import-not-at-top
  start = time.time()
  input_ids = read_input_ids(pattern, max_tokens)
  tables = builders.word_embedding_tables(model)
  vocab_size, dim = tables[0].shape
  ids, vectors = counted_vectors(input_ids, vocab_size, dim, special_ids,
                                 seed)
  for variable in tables:
    variable.assign(with_counted_rows(variable.numpy(), ids, vectors))
  log("Embedding table(s) started from the corpus (hparam embedding_init "
      "'corpus'): PPMI-SVD of %d token ids over %d positions, window %d, "
      "in %.0f s; the other %d ids keep their random rows." % (
          len(ids), input_ids.size, WINDOW, time.time() - start,
          vocab_size - len(ids)))
  return len(ids)
