"""Dynamic masking (pretrain/masking.py), input pipeline (pretrain_data.py)."""

import collections
import os

import numpy as np
import pytest
import tensorflow as tf

from configure import PretrainingConfig
from pretrain import masking
from pretrain import pretrain_data
from util.errors import UserError
from tests import pretrain_fixtures as pf

SEQ = 32
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    "w%d" % i for i in range(195)]
PAD, CLS, SEP, MASK = 0, 2, 3, 4
SPECIALS = (PAD, CLS, SEP)
P = int((0.15 + 0.005) * SEQ)  # the config's default for SEQ, 4


def random_example(rng, seq_len=SEQ, min_len=6):
  """[CLS] A [SEP] B [SEP] padded to seq_len; returns (ids, mask, segments)."""
  n = rng.randint(min_len, seq_len + 1)
  a = rng.randint(1, n - 4)
  body = rng.randint(len(VOCAB) - 195, len(VOCAB), size=n - 3).tolist()
  ids = [CLS] + body[:a] + [SEP] + body[a:] + [SEP]
  segments = [0] * (a + 2) + [1] * (n - a - 2)
  pad = seq_len - n
  return ids + [PAD] * pad, [1] * n + [0] * pad, segments + [0] * pad


def write_shard(path, examples):
  def feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
  with tf.io.TFRecordWriter(path) as writer:
    for ids, mask, segments in examples:
      writer.write(tf.train.Example(features=tf.train.Features(feature={
          "input_ids": feature(ids), "input_mask": feature(mask),
          "segment_ids": feature(segments)})).SerializeToString())


def make_data(root, num_files=4, per_file=12, seed=0, vocab=VOCAB):
  """Writes vocab.txt and shards under root; returns all examples' ids."""
  rng = np.random.RandomState(seed)
  with open(os.path.join(root, "vocab.txt"), "w") as f:
    f.write("\n".join(vocab) + "\n")
  shard_dir = os.path.join(root, "pretrain_tfrecords")
  os.makedirs(shard_dir, exist_ok=True)
  all_ids = []
  for s in range(num_files):
    examples = [random_example(rng) for _ in range(per_file)]
    write_shard(os.path.join(shard_dir, "pretrain_data.tfrecord-%05d" % s),
                examples)
    all_ids += [tuple(e[0]) for e in examples]
  return all_ids


def make_config(root, **kwargs):
  kwargs.setdefault("train_batch_size", 8)
  kwargs.setdefault("eval_batch_size", 4)
  return PretrainingConfig("t", str(root), max_seq_length=SEQ,
                           shuffle_buffer=32, **kwargs)


def unbatch(dataset, num_batches=None):
  """Per-example dicts of numpy arrays from a batched dataset."""
  if num_batches is not None:
    dataset = dataset.take(num_batches)
  rows = []
  for batch in dataset:
    batch = {k: v.numpy() for k, v in batch.items()}
    for b in range(len(batch["input_ids"])):
      rows.append({k: v[b] for k, v in batch.items()})
  return rows


def by_example(rows):
  """{input_ids tuple: row}; fails on an example seen twice."""
  out = {}
  for row in rows:
    key = tuple(row["input_ids"])
    assert key not in out
    out[key] = row
  return out


def mask_rows(ids, mask, seeds, **kwargs):
  kwargs = dict(dict(max_predictions_per_seq=P, mask_prob=0.15, mask_id=MASK,
                     special_ids=SPECIALS), **kwargs)
  masker = tf.function(lambda i, m, s: masking.mask_batch(i, m, s, **kwargs))
  out = masker(np.array(ids, np.int32), np.array(mask, np.int32),
               np.array(seeds, np.int32))
  return {k: v.numpy() for k, v in out.items()}


def check_consistent(ids, mask, out, num_slots):
  """Invariants every masked batch must satisfy; returns the k per row."""
  ids, mask = np.asarray(ids), np.asarray(mask)
  ks = []
  for b in range(len(ids)):
    w = out["masked_lm_weights"][b]
    pos = out["masked_lm_positions"][b]
    k = int(w.sum())
    ks.append(k)
    assert w.shape == (num_slots,) and set(np.unique(w)) <= {0.0, 1.0}
    assert np.all(w[:k] == 1) and np.all(w[k:] == 0)  # real slots first
    real = pos[:k]
    assert np.all(np.diff(real) > 0)  # ascending, hence no duplicates
    assert np.all(pos[k:] == 0) and np.all(out["masked_lm_ids"][b][k:] == 0)
    assert np.all(mask[b][real] == 1)
    assert not np.isin(ids[b][real], SPECIALS + (MASK,)).any()
    np.testing.assert_array_equal(out["masked_lm_ids"][b][:k], ids[b][real])
    changed = np.flatnonzero(out["masked_input_ids"][b] != ids[b])
    assert set(changed) <= set(real)
    assert np.all(out["masked_input_ids"][b][changed] == MASK)
  return np.array(ks)


def expected_k(mask, ids, mask_prob, num_slots):
  num_tokens = np.sum(mask, -1)
  candidates = np.sum(np.asarray(mask) * ~np.isin(ids, SPECIALS + (MASK,)),
                      -1)
  k = np.maximum(1, np.minimum(num_slots, np.round(mask_prob * num_tokens)))
  return np.minimum(k, candidates)


def test_masking_statistics_over_many_examples():
  rng = np.random.RandomState(1)
  examples = [random_example(rng, min_len=20) for _ in range(2000)]
  ids = [e[0] for e in examples]
  mask = [e[1] for e in examples]
  seeds = [[7, i] for i in range(len(ids))]
  no_cap = SEQ - 2
  out = mask_rows(ids, mask, seeds, max_predictions_per_seq=no_cap)
  ks = check_consistent(ids, mask, out, no_cap)
  np.testing.assert_array_equal(ks, expected_k(mask, ids, 0.15, no_cap))
  rate = ks.sum() / np.sum(mask)
  assert abs(rate - 0.15) < 0.01, rate

  chosen_ids = np.take_along_axis(out["masked_input_ids"],
                                  out["masked_lm_positions"], axis=1)
  real = out["masked_lm_weights"] > 0
  mask_share = np.mean(chosen_ids[real] == MASK)
  assert 0.82 < mask_share < 0.88, mask_share  # 85% [MASK], 15% kept

  capped = mask_rows(ids, mask, seeds)  # P = 4 caps k
  ks = check_consistent(ids, mask, capped, P)
  np.testing.assert_array_equal(ks, expected_k(mask, ids, 0.15, P))
  assert ks.max() == P


def test_positions_are_uniform_over_candidates():
  ids, mask, _ = random_example(np.random.RandomState(2), min_len=12)
  n = int(np.sum(mask))
  num_seeds = 3000
  out = mask_rows([ids] * num_seeds, [mask] * num_seeds,
                  [[3, i] for i in range(num_seeds)])
  counts = np.zeros(SEQ)
  for pos, w in zip(out["masked_lm_positions"], out["masked_lm_weights"]):
    counts[pos[w > 0]] += 1
  candidates = [i for i in range(n) if ids[i] not in SPECIALS]
  assert set(np.flatnonzero(counts)) == set(candidates)
  k = expected_k([mask], [ids], 0.15, P)[0]
  expected = num_seeds * k / len(candidates)
  spread = 5 * np.sqrt(expected)
  assert np.all(np.abs(counts[candidates] - expected) < spread), counts


def test_examples_without_candidates_predict_nothing():
  only_specials = [CLS, SEP, SEP] + [PAD] * (SEQ - 3)
  with_masks = [CLS, MASK, MASK, SEP] + [PAD] * (SEQ - 4)
  ids = [only_specials, with_masks, [PAD] * SEQ]
  mask = [[1] * 3 + [0] * (SEQ - 3), [1] * 4 + [0] * (SEQ - 4), [0] * SEQ]
  out = mask_rows(ids, mask, [[0, 1], [0, 2], [0, 3]])
  assert np.all(out["masked_lm_weights"] == 0)
  assert np.all(out["masked_lm_positions"] == 0)
  np.testing.assert_array_equal(out["masked_input_ids"], ids)


def test_mask_example_matches_mask_batch_rows_and_compiles():
  rng = np.random.RandomState(3)
  examples = [random_example(rng) for _ in range(5)]
  ids = [e[0] for e in examples]
  mask = [e[1] for e in examples]
  seeds = [[11, i] for i in range(5)]
  batch = mask_rows(ids, mask, seeds)
  kwargs = dict(max_predictions_per_seq=P, mask_prob=0.15, mask_id=MASK,
                special_ids=SPECIALS)
  for b in range(5):
    one = masking.mask_example(tf.constant(ids[b]), tf.constant(mask[b]),
                               tf.constant(seeds[b]), **kwargs)
    for name, value in one.items():
      np.testing.assert_array_equal(value.numpy(), batch[name][b])

  compiled = tf.function(lambda i, m, s: masking.mask_example(i, m, s,
                                                              **kwargs),
                         jit_compile=True)
  out = compiled(tf.constant(ids[0]), tf.constant(mask[0]),
                 tf.constant(seeds[0]))
  out = {k: v.numpy()[None] for k, v in out.items()}
  assert check_consistent(ids[:1], mask[:1], out, P)[0] == expected_k(
      mask[:1], ids[:1], 0.15, P)[0]


def test_batches_have_static_shapes(tmp_path):
  make_data(tmp_path)
  dataset = pf.input_fn(make_config(tmp_path), True)()
  spec = dataset.element_spec
  for name in ("input_ids", "input_mask", "segment_ids", "masked_input_ids"):
    assert spec[name].shape == (8, SEQ) and spec[name].dtype == tf.int32
  for name in ("masked_lm_positions", "masked_lm_ids"):
    assert spec[name].shape == (8, P) and spec[name].dtype == tf.int32
  assert spec["masked_lm_weights"].shape == (8, P)
  assert spec["masked_lm_weights"].dtype == tf.float32
  assert spec["sample_seed"].shape == (8, 2)
  assert spec["sample_seed"].dtype == tf.int32
  batch = next(iter(dataset))
  check_consistent(batch["input_ids"].numpy(), batch["input_mask"].numpy(),
                   {k: v.numpy() for k, v in batch.items()}, P)


def test_same_seed_same_stream_other_seed_other_stream(tmp_path):
  make_data(tmp_path)

  def stream(seed):
    fn = pf.input_fn(make_config(tmp_path, seed=seed), True)
    return unbatch(fn(), num_batches=8)

  first, again, other = stream(5), stream(5), stream(6)
  for a, b in zip(first, again):
    for name in a:
      np.testing.assert_array_equal(a[name], b[name])
  order = [tuple(r["input_ids"]) for r in first]
  assert order != [tuple(r["input_ids"]) for r in other]
  assert any(not np.array_equal(a["masked_lm_positions"],
                                b["masked_lm_positions"])
             for a, b in zip(first, other))


def test_each_epoch_masks_anew(tmp_path):
  all_ids = make_data(tmp_path)  # 48 examples, 6 batches of 8 per epoch
  fn = pf.input_fn(make_config(tmp_path), True, num_epochs=2)
  rows = unbatch(fn())
  assert len(rows) == 2 * len(all_ids)
  seen = collections.defaultdict(list)
  for row in rows:
    seen[tuple(row["input_ids"])].append(row)
  assert sorted(seen) == sorted(all_ids)
  assert all(len(v) == 2 for v in seen.values())
  differ = [not np.array_equal(a["masked_input_ids"], b["masked_input_ids"])
            or not np.array_equal(a["masked_lm_positions"],
                                  b["masked_lm_positions"])
            for a, b in seen.values()]
  assert np.mean(differ) > 0.8
  sample_seeds = {tuple(r["sample_seed"]) for r in rows}
  assert len(sample_seeds) == len(rows)


def test_eval_reads_in_order_and_repeats(tmp_path):
  all_ids = make_data(tmp_path)
  per_pass = len(all_ids) // 4  # eval batch 4

  def read(seed):
    fn = pf.input_fn(make_config(tmp_path, seed=seed), False)
    return unbatch(fn(), num_batches=2 * per_pass + 3)

  rows, other = read(1), read(2)
  assert len(rows) == (2 * per_pass + 3) * 4  # more than one pass exists
  first_pass = [tuple(r["input_ids"]) for r in rows[:len(all_ids)]]
  assert sorted(first_pass) == sorted(all_ids)
  assert first_pass == [tuple(r["input_ids"]) for r in other[:len(all_ids)]]
  assert first_pass == [tuple(r["input_ids"])
                        for r in rows[len(all_ids):2 * len(all_ids)]]


# Training shards files, evaluation examples (also of a single file).
@pytest.mark.parametrize("is_training,num_files", [(True, 4), (False, 1)])
def test_two_replicas_split_the_data(tmp_path, is_training, num_files):
  all_ids = make_data(tmp_path, num_files=num_files, per_file=48 // num_files)
  fn = pf.input_fn(make_config(tmp_path, eval_batch_size=8),
                   is_training, num_epochs=1)
  single = by_example(unbatch(fn()))
  assert sorted(single) == sorted(all_ids)
  parts = []
  for i in range(2):
    context = tf.distribute.InputContext(
        num_input_pipelines=2, input_pipeline_id=i, num_replicas_in_sync=2)
    dataset = fn(context)
    assert dataset.element_spec["input_ids"].shape == (4, SEQ)  # 8 / 2
    parts.append(by_example(unbatch(dataset)))
  assert not set(parts[0]) & set(parts[1])
  assert sorted(set(parts[0]) | set(parts[1])) == sorted(all_ids)
  for part in parts:
    for key, row in part.items():
      for name in row:
        np.testing.assert_array_equal(row[name], single[key][name])


def test_global_batch_must_split_over_replicas(tmp_path):
  make_data(tmp_path)
  fn = pf.input_fn(make_config(tmp_path), True)
  context = tf.distribute.InputContext(num_input_pipelines=1,
                                       input_pipeline_id=0,
                                       num_replicas_in_sync=3)
  with pytest.raises(UserError, match="train_batch_size.*3 replicas"):
    fn(context)


def test_missing_glob_names_the_pattern(tmp_path):
  make_data(tmp_path)
  pattern = str(tmp_path / "nowhere" / "pretrain_data.tfrecord*")
  with pytest.raises(UserError) as e:
    pf.input_fn(make_config(tmp_path), True,
                file_pattern=pattern)
  assert pattern in str(e.value)


def test_garbage_shard_names_the_file(tmp_path):
  make_data(tmp_path)
  bad = tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord-00009"
  bad.write_bytes(np.random.RandomState(0).bytes(700))
  with pytest.raises(UserError) as e:
    pf.input_fn(make_config(tmp_path), True)
  assert str(bad) in str(e.value)


def test_truncated_shard_names_the_file_during_iteration(tmp_path):
  make_data(tmp_path)
  bad = tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord-00002"
  data = bad.read_bytes()
  bad.write_bytes(data[:len(data) - 50])  # the first record still reads
  fn = pf.input_fn(make_config(tmp_path), True, num_epochs=1)
  with pytest.raises(UserError) as e:
    with fn.data_errors():
      for _ in fn():
        pass
  assert str(bad) in str(e.value)
  assert isinstance(e.value.__cause__, tf.errors.DataLossError)


def test_malformed_record_inside_a_shard_names_the_file(tmp_path):
  make_data(tmp_path)
  bad = str(tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord-00001")
  rng = np.random.RandomState(4)
  short = random_example(rng, seq_len=16)
  write_shard(bad, [random_example(rng), random_example(rng), short])
  fn = pf.input_fn(make_config(tmp_path), False)
  with pytest.raises(UserError) as e:
    with fn.data_errors():
      for _ in fn().take(20):
        pass
  assert bad in str(e.value) and "max_seq_length 32" in str(e.value)


def test_empty_shard_is_skipped(tmp_path):
  all_ids = make_data(tmp_path)
  empty = tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord-00000a"
  empty.write_bytes(b"")
  fn = pf.input_fn(make_config(tmp_path), True, num_epochs=1)
  assert str(empty) not in fn.files and len(fn.files) == 4
  assert sorted(by_example(unbatch(fn()))) == sorted(all_ids)


def test_wrong_sequence_length_says_both_lengths(tmp_path):
  make_data(tmp_path)
  config = PretrainingConfig("t", str(tmp_path), max_seq_length=64)
  with pytest.raises(UserError, match=r"32 values.*max_seq_length is 64"):
    pf.input_fn(config, True)


def test_vocab_without_mask_names_the_vocab(tmp_path):
  make_data(tmp_path, vocab=[t for t in VOCAB if t != "[MASK]"])
  with pytest.raises(UserError, match=r"vocab.txt lacks.*\[MASK\]"):
    pf.input_fn(make_config(tmp_path), True)


def test_special_ids_come_from_the_vocab(tmp_path):
  with open(tmp_path / "vocab.txt", "w") as f:
    f.write("a\n[SEP]\n[PAD]\n[MASK]\n[UNK]\n[CLS]\n")
  ids = pretrain_data.read_special_ids(str(tmp_path / "vocab.txt"))
  assert ids == {"[SEP]": 1, "[PAD]": 2, "[MASK]": 3, "[UNK]": 4, "[CLS]": 5}


def test_skip_examples_continues_the_stream_at_another_batch_size(tmp_path):
  """Resuming at an example offset with a new batch gives the same examples
  (and masks) an uninterrupted run would have read next."""
  make_data(tmp_path)
  straight = unbatch(pf.input_fn(make_config(tmp_path),
                                 True)(), num_batches=6)
  fn = pf.input_fn(
      make_config(tmp_path, train_batch_size=4), True)
  fn.skip_examples = 16
  resumed = unbatch(fn(), num_batches=8)
  assert len(resumed) == len(straight) - 16
  for a, b in zip(straight[16:], resumed):
    for name in a:
      np.testing.assert_array_equal(a[name], b[name])
