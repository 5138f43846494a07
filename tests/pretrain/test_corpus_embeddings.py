"""pretrain/corpus_embeddings.py: the embedding table counted from the
corpus (hparam `embedding_init: "corpus"`), on hand-made token rows."""

import os

import numpy as np
import tensorflow as tf

import configure_specs
from pretrain import corpus_embeddings as ce
from pretrain import trainer as trainer_lib
from tests import pretrain_fixtures as fx

SPECIAL = (0, 1, 2, 3, 4)


def _two_topics(rows=400, seed=0):
  """[rows, 12] ids: each row draws its words from one of two topics (ids
  5-9 or 10-14), with the ids 15-19 common to both; 0 pads the tail."""
  rng = np.random.default_rng(seed)
  out = np.zeros((rows, 12), np.int64)
  for r in range(rows):
    topic = np.arange(5, 10) if r % 2 else np.arange(10, 15)
    words = rng.choice(np.concatenate([topic, np.arange(15, 20)]), 10)
    out[r, 0], out[r, 1:11] = 2, words
  return out


def test_counts_are_symmetric_weighted_by_distance_and_skip_other_ids():
  ids = np.array([7, 8, 9])
  rows = np.array([[7, 8, 5, 9, 0]])  # 5 and 0 are not counted.
  counts = ce.cooccurrence_counts(rows, ids, window=2)
  # 7-8 at distance 1; 8-9 at distance 2 (5 between keeps its place);
  # 7-9 at distance 3, beyond the window.
  expected = np.zeros((3, 3))
  expected[0, 1] = expected[1, 0] = 1.0
  expected[1, 2] = expected[2, 1] = 0.5
  np.testing.assert_allclose(counts, expected)


def test_counted_ids_are_the_most_frequent_non_special_ones():
  rows = np.array([[2, 9, 9, 9, 7, 7, 8, 3, 0, 0]])
  np.testing.assert_array_equal(
      ce.counted_ids(rows, 12, SPECIAL, max_vocab=2), [9, 7])
  np.testing.assert_array_equal(
      ce.counted_ids(rows, 12, SPECIAL), [9, 7, 8])


def test_positive_pmi_is_zero_for_unseen_and_independent_pairs():
  counts = np.array([[0.0, 2.0], [2.0, 0.0]])
  pmi = ce.positive_pmi(counts, context_power=1.0)
  # p(w, c) = 0.5 against p(w) p(c) = 0.25 off the diagonal: log 2.
  np.testing.assert_allclose(pmi, [[0.0, np.log(2)], [np.log(2), 0.0]],
                             rtol=1e-6)
  assert (ce.positive_pmi(np.ones((3, 3))) >= 0).all()


def test_truncated_svd_finds_the_top_singular_values():
  rng = np.random.default_rng(1)
  low_rank = (rng.standard_normal((60, 4)) @ rng.standard_normal((4, 60)))
  _, s = ce.truncated_svd(low_rank.astype(np.float32), 4, seed=0)
  np.testing.assert_allclose(s, np.linalg.svd(low_rank)[1][:4], rtol=1e-3)


def test_the_table_groups_words_of_one_topic_and_keeps_other_rows():
  rng = np.random.default_rng(3)
  table = rng.normal(0, 0.02, (24, 8)).astype(np.float32)
  out, rows = ce.corpus_embedding_table(_two_topics(), table, SPECIAL,
                                        seed=0)
  assert rows == 15  # ids 5-19; the special ids and 20-23 do not occur.
  np.testing.assert_array_equal(out[list(SPECIAL)], table[list(SPECIAL)])
  np.testing.assert_array_equal(out[20:], table[20:])
  unit = out / np.linalg.norm(out, axis=1, keepdims=True)
  cos = unit @ unit.T
  same = np.mean([cos[a, b] for a in range(5, 10) for b in range(5, 10)
                  if a != b])
  across = np.mean([cos[a, b] for a in range(5, 10) for b in range(10, 15)])
  assert same > across + 0.5, (same, across)
  np.testing.assert_allclose(out[5:20].std(), table.std(), rtol=1e-4)


def test_a_new_run_starts_its_tables_from_the_shards(tmp_path):
  data_dir = fx.make_data_dir(tmp_path, heldout=False)
  pattern = os.path.join(data_dir, "pretrain_tfrecords",
                         "pretrain_data.tfrecord*")
  config = fx.tiny_config(vocab_size=45, untied_generator_embeddings=True)
  model = fx.build_pretrainer_with_variables(config)
  tables = [v for v in model.variables if "word_embeddings" in v.name]
  assert len(tables) == 2  # D's and G's own.
  before = [t.numpy() for t in tables]
  lines = []
  rows = ce.start_from_corpus(model, pattern, SPECIAL, seed=0,
                              log=lines.append)
  assert rows == fx.RUNNER_NUM_WORDS
  assert "PPMI-SVD of 40 token ids" in lines[0]
  input_ids = ce.read_input_ids(pattern)
  assert input_ids.shape == (96, 32)  # Both shards' examples.
  # A cap keeps the rows up to the one that reaches it, in file order.
  np.testing.assert_array_equal(ce.read_input_ids(pattern, max_tokens=100),
                                input_ids[:4])
  for table, start in zip(tables, before):
    expected, _ = ce.corpus_embedding_table(input_ids, start, SPECIAL, 0)
    np.testing.assert_allclose(table.numpy(), expected, rtol=1e-5)
    assert not np.allclose(table.numpy()[5:], start[5:])
    np.testing.assert_array_equal(table.numpy()[:5], start[:5])


def test_the_trainer_counts_the_shards_only_for_embedding_init_corpus(
    tmp_path):
  data_dir = fx.make_data_dir(tmp_path, heldout=False)
  shards = dict(pretrain_tfrecords=os.path.join(
      data_dir, "pretrain_tfrecords", "pretrain_data.tfrecord*"),
                vocab_file=os.path.join(data_dir, "vocab.txt"))
  assert trainer_lib.PretrainingTrainer._corpus_embeddings(
      configure_specs.pretraining_specs(fx.tiny_config(**shards)),
      print) is None
  config = fx.tiny_config(vocab_size=45, embedding_init="corpus", **shards)
  lines = []
  start = trainer_lib.PretrainingTrainer._corpus_embeddings(
      configure_specs.pretraining_specs(config), lines.append)
  assert start(fx.build_pretrainer_with_variables(config)) == 40
  assert "the other 5 ids keep their random rows" in lines[0]


def test_zero_steps_save_the_counted_start_as_checkpoint_0(tmp_path):
  data_dir, proc = fx.run_tiny_pretraining(
      tmp_path, "counted", embedding_init="corpus", num_train_steps=0,
      do_eval=True)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert "PPMI-SVD of 40 token ids" in proc.stdout
  assert "num_train_steps is 0" in proc.stdout
  prefix = os.path.join(data_dir, "models", "counted", "checkpoints",
                        "ckpt-0")
  reader = tf.train.load_checkpoint(prefix)
  key = next(k for k in reader.get_variable_to_shape_map()
             if "word_embeddings" in k and "OPTIMIZER_SLOT" not in k)
  table = reader.get_tensor(key)
  assert table.shape[0] == 45
  # The counted rows (ids 5-44) share the scale of the random ones (0-4).
  np.testing.assert_allclose(table[5:].std(), table.std(), rtol=0.2)
  assert "Eval at step 0" in proc.stdout
