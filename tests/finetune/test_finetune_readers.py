"""Every task's reader and featurization on its fixture (official formats)."""

import numpy as np
import pytest

from tests import finetune_fixtures as ff


@pytest.fixture(scope="module")
def tokenizer():
  return ff.build_tokenizer(ff.tiny_config())


def _task(name, tokenizer, **overrides):
  return ff.get_task(ff.tiny_config(**overrides), name, tokenizer)


# task: (train size, {eval split: size}, {test split: size}, first train
# example as (text_a, text_b, label string)).
GLUE_EXPECTED = {
    "cola": (4, {"dev": 3}, {"test": 2},
             ("The sailors rode the breeze clear of the rocks.", None, "1")),
    "sst": (32, {"dev": 6}, {"test": 3}, ("the movie was great .", None, "1")),
    "mrpc": (3, {"dev": 2}, {"test": 1},
             ("The dog barked at the cat.",
              "The cat was barked at by the dog.", "1")),
    "qqp": (2, {"dev": 2}, {"test": 2},
            ("How do I study verbs?", "What is the best way to study verbs?",
             "1")),
    "mnli": (3, {"dev_matched": 2, "dev_mismatched": 1},
             {"test_matched": 1, "test_mismatched": 2},
             ("The dog barked at the cat.", "The dog made a sound.",
              "entailment")),
    "qnli": (2, {"dev": 1}, {"test": 1},
             ("What did the dog do?", "The dog barked at the cat.",
              "entailment")),
    "rte": (2, {"dev": 1}, {"test": 1},
            ("The dog barked at the cat.", "The dog barked.", "entailment")),
    "wnli": (2, {"dev": 1}, {"test": 1},
             ("The dog chased the cat because it was hungry.",
              "The dog was hungry.", "1")),
}


@pytest.mark.parametrize("name", sorted(GLUE_EXPECTED))
def test_glue_classification_readers(name, tokenizer):
  n_train, evals, tests, first = GLUE_EXPECTED[name]
  task = _task(name, tokenizer)
  assert tuple(task.eval_splits) == tuple(evals)
  assert tuple(task.test_splits) == tuple(tests)
  train = task.get_examples("train")
  assert len(train) == n_train
  text_a, text_b, label = first
  assert (train[0].text_a, train[0].text_b) == (text_a, text_b)
  assert task.label_list[train[0].label] == label
  for split, size in evals.items():
    assert len(task.get_examples(split)) == size
  for split, size in tests.items():
    examples = task.get_examples(split)
    assert len(examples) == size
    assert all(e.label is None for e in examples)
    # GLUE test files carry the submission index in their id column.
    assert [e.guid for e in examples] == [str(i) for i in range(size)]


def test_sts_regression_reader(tokenizer):
  task = _task("sts", tokenizer)
  train = task.get_examples("train")
  assert [e.label for e in train] == [5.0, 3.8, 0.0]
  assert train[1].text_b == "A man is playing a bamboo flute."
  data = task.load("dev")
  np.testing.assert_allclose(data.features["label_values"], [4.2, 0.5])
  assert data.features["label_values"].dtype == np.float32


def test_pair_featurization(tokenizer):
  task = _task("rte", tokenizer, max_seq_length=16)
  data = task.load("train", is_training=True)
  f = data.features
  assert f["input_ids"].shape == (2, 16)
  ids = list(f["input_ids"][0])
  # [CLS] the dog bark ##ed at the cat . [SEP] the dog bark ##ed . [SEP] pad
  expected = ([tokenizer.cls_id] +
              tokenizer.encode("The dog barked at the cat.") +
              [tokenizer.sep_id] + tokenizer.encode("The dog barked.") +
              [tokenizer.sep_id])
  assert ids[:len(expected)] == expected
  assert ids[len(expected):] == [tokenizer.pad_id] * (16 - len(expected))
  assert list(f["input_mask"][0]) == [1] * len(expected) + [0] * (
      16 - len(expected))
  first_sep = ids.index(tokenizer.sep_id)
  assert set(f["segment_ids"][0][:first_sep + 1]) == {0}
  assert set(f["segment_ids"][0][first_sep + 1:len(expected)]) == {1}
  assert list(f["label_ids"]) == [0, 1]  # entailment, not_entailment
  assert list(f["feature_index"]) == [0, 1]


def test_pair_truncation_keeps_both_segments(tokenizer):
  task = _task("mrpc", tokenizer, max_seq_length=8)
  f = task.load("train").features
  ids = list(f["input_ids"][0])
  assert ids[0] == tokenizer.cls_id and ids.count(tokenizer.sep_id) == 2
  assert ids[-1] == tokenizer.sep_id  # 8 tokens used, no padding


def test_squad_v1_reader(tokenizer):
  task = _task("squadv1", tokenizer)
  train = task.get_examples("train")
  assert [e.qas_id for e in train] == ["a1", "a2", "a3", "s1", "s2"]
  ex = train[1]  # "under the old tree"
  assert ex.doc_tokens[ex.start_position:ex.end_position + 1] == [
      "under", "the", "old", "tree"]
  assert not ex.is_impossible
  data = task.load("train", is_training=True)
  f = data.features
  # Every training window that holds its answer points at answer tokens.
  for i, window in enumerate(data.meta):
    if f["start_positions"][i]:
      assert f["paragraph_mask"][i][f["start_positions"][i]] == 1
  dev = task.load("dev")
  assert len(task.dataset("dev")[0]["paragraphs"][0]["qas"][0]["answers"]) == 2
  assert set(dev.features) >= {"input_ids", "paragraph_mask",
                               "start_positions", "feature_index"}


def test_squad_doc_stride_windows(tokenizer):
  # 12 query tokens max and 32 in all leave <= 17 paragraph tokens per window.
  task = _task("squadv1", tokenizer, max_seq_length=32, doc_stride=8)
  data = task.load("train", is_training=True)
  windows_per_example = np.bincount([w.example_index for w in data.meta])
  assert windows_per_example.max() > 1
  answer = "under the old tree"
  found = []
  for i, window in enumerate(data.meta):
    if window.example_index == 1 and data.features["start_positions"][i]:
      s, e = (data.features["start_positions"][i],
              data.features["end_positions"][i])
      found.append(" ".join(window.tokens[s:e + 1]))
  assert found and all(text == answer for text in found)


def test_squad_v2_reader(tokenizer):
  task = _task("squadv2", tokenizer)
  train = task.get_examples("train")
  impossible = {e.qas_id: e.is_impossible for e in train}
  assert impossible == {"a1": False, "a2": False, "a4": True, "s1": False,
                        "s3": True}
  data = task.load("train", is_training=True)
  f = data.features
  for i, window in enumerate(data.meta):
    qid = train[window.example_index].qas_id
    if impossible[qid]:
      assert f["start_positions"][i] == 0 and f["is_impossible"][i] == 1.0
  assert len(task.get_examples("test")) == 2


def test_tagging_readers(tokenizer):
  chunk = _task("chunk", tokenizer)
  train = chunk.get_examples("train")
  assert [e.words for e in train] == [
      ["The", "dog", "barked", "at", "the", "cat", "."],
      ["We", "study", "verbs", "."]]
  assert [chunk.label_list[i] for i in train[1].labels] == [
      "B-NP", "B-VP", "B-NP", "O"]
  assert chunk.get_examples("test")[0].labels is None
  ner = _task("ner", tokenizer)
  ner_train = ner.get_examples("train")  # -DOCSTART- lines are skipped
  assert len(ner_train) == 2 and ner_train[0].words[0] == "Mrs."
  assert [ner.label_list[i] for i in ner.get_examples("dev")[0].labels] == [
      "I-PER", "O", "O", "I-LOC"]
  pos = _task("pos", tokenizer)
  assert [pos.label_list[i] for i in pos.get_examples("train")[0].labels] == [
      "DT", "NN", "VBD", "."]


def test_tagging_labels_first_piece_and_splits_long_sentences(tokenizer):
  task = _task("chunk", tokenizer, max_seq_length=6)
  data = task.load("train", is_training=True)
  f = data.features
  # 4 tokens per window: "the dog bark ##ed" | "at the cat ." |
  # "we study verb ##s" | "."
  assert [w[:2] for w in data.meta] == [(0, 0), (0, 3), (1, 0), (1, 3)]
  first = data.meta[0]
  assert first[2] == [1, 2, 3]  # "barked" starts at 3 and spans 3-4
  assert list(f["label_weights"][0]) == [0, 1, 1, 1, 0, 0]
  labels = task.label_list
  assert [labels[i] for i in f["label_ids"][0][1:4]] == ["B-NP", "I-NP",
                                                         "B-VP"]
  # Every word of every sentence is in exactly one window.
  words = sum(len(w[2]) for w in data.meta)
  assert words == sum(len(e.words) for e in data.examples)
