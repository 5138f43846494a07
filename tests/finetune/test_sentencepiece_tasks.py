"""Every kind of fine-tuning task reads a SentencePiece vocabulary: a
config whose vocab_file is a SentencePiece model (a data directory's
sentencepiece.model) tokenizes the fixtures of classification, regression,
sentence pairs, tagging, SQuAD and task.json tasks with it, with no
[UNK]; tagging labels each word's first piece, SQuAD's answers map from
character offsets to pieces and back to the context's words."""

import os

import numpy as np
import pytest
import sentencepiece as spm

from finetune.qa import qa_metrics
from tests import finetune_fixtures as ff
from tests import paths
from tests import sentencepiece_fixtures as spf

CUSTOM_TASKS = os.path.join(paths.FIXTURES, "custom_tasks")


@pytest.fixture(scope="module")
def sentencepiece_model(tmp_path_factory):
  return spf.train(tmp_path_factory.mktemp("sp"), "unigram")


def _task(model, name, data_dir=ff.FIXTURE_DIR, **overrides):
  config = ff.tiny_config(data_dir=data_dir, vocab_file=model,
                          vocab_size=400, **overrides)
  tokenizer = ff.build_tokenizer(config)
  assert tokenizer.kind == "sentencepiece"
  return ff.get_task(config, name, tokenizer)


@pytest.mark.parametrize("name, data_dir", [
    ("sst", ff.FIXTURE_DIR), ("mrpc", ff.FIXTURE_DIR), ("sts", ff.FIXTURE_DIR),
    ("ner", ff.FIXTURE_DIR), ("squadv2", ff.FIXTURE_DIR),
    ("reviews", CUSTOM_TASKS), ("entities", CUSTOM_TASKS)])
def test_every_task_kind_tokenizes_with_the_model(sentencepiece_model, name,
                                                  data_dir):
  task = _task(sentencepiece_model, name, data_dir)
  ids = task.load(task.eval_splits[0]).features["input_ids"]
  tokenizer = task.tokenizer
  assert (ids[:, 0] == tokenizer.cls_id).all()
  assert tokenizer.unk_id not in ids
  assert ids.max() < 400


def test_tagging_labels_the_first_piece_of_each_word(sentencepiece_model):
  task = _task(sentencepiece_model, "ner", max_seq_length=64)
  examples = task.get_examples("dev")
  features = task.load("dev").features
  for row, example in enumerate(examples):
    weights = features["label_weights"][row]
    assert weights.sum() == len(example.words)
    pieces = task.tokenizer.convert_ids_to_tokens(
        features["input_ids"][row][weights > 0])
    assert all(p.startswith("\u2581") for p in pieces), pieces


def test_squad_answers_map_to_pieces_and_back(sentencepiece_model):
  task = _task(sentencepiece_model, "squadv1", max_seq_length=64)
  data = task.load("train", is_training=True)
  starts, ends = (data.features["start_positions"],
                  data.features["end_positions"])
  answered = [i for i in range(len(starts)) if starts[i]]
  assert answered
  sp = spm.SentencePieceProcessor(model_file=sentencepiece_model)
  for i in answered:
    example = data.examples[data.meta[i].example_index]
    pieces = data.meta[i].tokens[starts[i]:ends[i] + 1]  # Bytes among them.
    assert sp.decode_pieces(pieces) == " ".join(
        example.orig_answer_text.split())
  # Logits pointing at the gold span decode to the words of the context
  # that hold the answer (with SentencePiece pieces, tf-models'
  # get_final_text cannot trim them to the answer: docs/sentencepiece.md).
  seq = data.features["input_ids"].shape[1]
  logits = {key: np.eye(seq)[positions] * 10.0 for key, positions in (
      ("start_logits", starts), ("end_logits", ends))}
  decoded = qa_metrics.decode(task, data, logits)
  for i in answered:
    example = data.examples[data.meta[i].example_index]
    words = example.doc_tokens[example.start_position:
                               example.end_position + 1]
    assert decoded.predictions[example.qas_id] == " ".join(words)
