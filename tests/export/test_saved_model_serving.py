"""SavedModels served on raw text in a fresh process with only tensorflow
and tensorflow_text imported: fine-tuned task models, and a pre-trained
model whose vocabulary is a SentencePiece model.

Tasks: one tiny fine-tuning run per kind (classification, a sentence pair,
regression, tagging, SQuAD 2.0) over the fixtures, each exported with
`export_model.py --task`. On dev examples, the SavedModel's ids equal the
fine-tuning pipeline's features of the same texts, and its outputs equal
the Keras model's on those features. Also for sst on models of 1 and of 3
heads, served one text and a batch. (The WordPiece pre-trained SavedModel
is tests/interop/test_interop_export.py's.)
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import configure_specs
import export_model
from export import saved_model
from text import tokenization
from finetune import finetuned_model
from finetune import runner
from tests import finetune_fixtures as ff
from tests import interop_fixtures as ix
from tests import pretrain_fixtures as pf
from tests.paths import FIXTURES
from util.errors import UserError

TASKS = ("sst", "mrpc", "sts", "ner", "squadv2")
NUM_EXAMPLES = 3
TOL = 1e-5
HEADS = (1, 3)  # Numbers of heads the export's 2 groups do not split evenly.


def _first_rows(task, split_data):
  """(examples, feature rows): the first examples and, for SQuAD, the rows
  of their first windows (the window a SavedModel serves)."""
  if not task.name.startswith("squad"):
    # One feature row per example (the fixtures' texts fit one window).
    assert len(split_data.features["input_ids"]) == len(split_data.examples)
    examples = split_data.examples[:NUM_EXAMPLES]
    return examples, np.arange(len(examples))
  rows = [i for i, w in enumerate(split_data.meta) if w.doc_span_index == 0]
  rows = rows[:NUM_EXAMPLES]
  return [split_data.examples[split_data.meta[i].example_index]
          for i in rows], np.array(rows)


def _texts(task, examples):
  """The serving_default inputs of `examples`."""
  if task.name.startswith("squad"):
    return dict(question=[e.question_text for e in examples],
                context=[" ".join(e.doc_tokens) for e in examples])
  if task.name == "ner":
    return dict(text=[" ".join(e.words) for e in examples])
  texts = dict(text=[e.text_a for e in examples])
  if examples[0].text_b is not None:
    texts["text_b"] = [e.text_b for e in examples]
  return texts


def _expected(model, task, features):
  """The Keras model's outputs, as the SavedModel names them."""
  out = {k: v.numpy() for k, v in model(features, training=False).items()}
  if task.name == "sts":
    return dict(score=out["logits"][:, 0])
  if task.name == "ner":
    return dict(tag_ids=np.argmax(out["logits"], -1))
  if task.name.startswith("squad"):
    return out
  probs = tf.nn.softmax(out["logits"]).numpy()
  return dict(probabilities=probs, label_id=np.argmax(probs, -1))


def _export(model_dir, name, out, counts=(NUM_EXAMPLES,)):
  """Exports the model of `model_dir` fine-tuned on task `name` to `out`
  with `export_model.py --task`.

  Returns (jobs, cases): per n in `counts`, a job for `ix.serve` serving
  the texts of the first n dev examples (result: `out` + "_<n>.npz"), and
  cases[n] = (that result file, their features [n, seq], the Keras
  model's outputs on them, the task).
  """
  assert export_model.main([
      "--data-dir", ff.FIXTURE_DIR, "--model-name", "tiny", "--task",
      name, "--format", "saved_model", "--output", out,
      "--hparams", json.dumps({"model_dir": model_dir})]) == 0
  model, task, _ = finetuned_model.load_finetuned(
      model_dir, ff.FIXTURE_DIR, name, log=lambda _: None)
  dev = task.load(task.eval_splits[0])
  examples, rows = _first_rows(task, dev)
  jobs, cases = [], {}
  for n in counts:
    features = {k: v[rows[:n]] for k, v in dev.features.items()}
    result = "%s_%d.npz" % (out, n)
    jobs.append(dict(saved_model=out, result=result,
                     inputs=_texts(task, examples[:n])))
    cases[n] = (result, features, _expected(model, task, features), task)
  return jobs, cases


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  root = tmp_path_factory.mktemp("tasks")
  model_dir = str(root / "model")
  runner.run_finetuning(ff.tiny_config(model_dir=model_dir,
                                       task_names=list(TASKS),
                                       max_seq_length=32))
  jobs, cases = [], {}
  for name in TASKS:
    task_jobs, task_cases = _export(model_dir, name,
                                    str(root / ("served_" + name)))
    jobs += task_jobs
    cases[name] = task_cases[NUM_EXAMPLES]
  ix.serve(jobs, root / "jobs.json")
  return cases


@pytest.fixture(scope="module")
def exported_by_heads(tmp_path_factory):
  """{(heads, n): case of `_export`}: sst fine-tuned on a 1-layer model of
  24 hidden units, 37 FFN units and 1 or 3 heads (fewer heads than the
  export's 2 groups; uneven groups), served one text and a batch."""
  root = tmp_path_factory.mktemp("heads")
  jobs, cases = [], {}
  for heads in HEADS:
    model_dir = str(root / ("model_%d" % heads))
    runner.run_finetuning(ff.tiny_config(
        model_dir=model_dir, task_names=["sst"], max_seq_length=32,
        embedding_size=24, model_hparam_overrides=dict(
            ff.TINY_MODEL, hidden_size=24, num_hidden_layers=1,
            num_attention_heads=heads, intermediate_size=37)))
    task_jobs, task_cases = _export(model_dir, "sst",
                                    str(root / ("served_%d" % heads)),
                                    counts=(1, NUM_EXAMPLES))
    jobs += task_jobs
    cases.update({(heads, n): case for n, case in task_cases.items()})
  ix.serve(jobs, root / "jobs.json")
  return cases


def _assert_serves(name, case):
  """The served ids are the pipeline's features, the outputs the Keras
  model's."""
  result, features, expected, task = case
  served = dict(np.load(result))
  np.testing.assert_array_equal(served["input_ids"], features["input_ids"])
  for key in ("input_mask", "segment_ids", "paragraph_mask"):
    if key in served:
      np.testing.assert_array_equal(served[key], features[key], err_msg=key)
  assert name.startswith("squad") == ("paragraph_mask" in served)
  for key, want in expected.items():
    if want.dtype.kind == "f":
      assert np.abs(served[key] - want).max() < TOL, key
    else:
      np.testing.assert_array_equal(served[key], want, err_msg=key)
  if name in ("sst", "mrpc"):
    labels = [str(label) for label in task.label_list]
    assert list(served["label"]) == [labels[i] for i in expected["label_id"]]
  if name == "ner":
    tags = served["tags"]
    assert all(t == "" for t in tags[served["input_mask"] == 0])
    assert set(tags[served["input_mask"] == 1]) <= {
        str(label) for label in task.label_list}


@pytest.mark.parametrize("name", TASKS)
def test_saved_model_serves_the_task_on_raw_text(exported, name):
  _assert_serves(name, exported[name])


@pytest.mark.parametrize("n", [1, NUM_EXAMPLES])
@pytest.mark.parametrize("heads", HEADS)
def test_a_model_of_any_number_of_heads_exports_and_serves(
    exported_by_heads, heads, n):
  _assert_serves("sst", exported_by_heads[heads, n])


def test_task_export_errors(tmp_path):
  with pytest.raises(UserError, match="fine-tune task 'sst' of this model"):
    export_model.main(["--data-dir", str(tmp_path), "--model-name", "M",
                       "--task", "sst", "--format", "saved_model",
                       "--output", str(tmp_path / "o")])
  with pytest.raises(UserError, match="--task exports .* SavedModel"):
    export_model.main(["--data-dir", str(tmp_path), "--model-name", "M",
                       "--task", "sst", "--format", "hf",
                       "--output", str(tmp_path / "o")])


def test_sentencepiece_saved_model_tokenizes_as_our_tokenizer(tmp_path):
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  text = os.path.join(FIXTURES, "pretraining_dataset", "wrapped",
                      "persuasion_opening.txt")
  spm.SentencePieceTrainer.train(
      input=text, model_prefix=str(tmp_path / "sp"), vocab_size=200,
      bos_id=-1, eos_id=-1, pad_id=0, pad_piece="[PAD]", unk_id=1,
      unk_piece="[UNK]", user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"],
      minloglevel=2)
  sp_model = str(tmp_path / "sp.model")
  tokenizer = tokenization.SentencePieceTokenizer(sp_model)
  config = pf.tiny_config(vocab_size=len(tokenizer.vocab), seq_len=16)
  model = pf.build_pretrainer_with_variables(config)
  out = str(tmp_path / "served")
  saved_model.export_saved_model(
      model, configure_specs.VocabularySpec.from_config(config),
      config.max_seq_length, out, sentencepiece_model=sp_model,
      log=lambda _: None)
  texts = ["It is a truth universally acknowledged.",
           "Zqx \u00e9t\u00e9 " + "persuasion " * 20]
  result = str(tmp_path / "served.npz")
  ix.serve([dict(saved_model=out, result=result, inputs=dict(text=texts))],
           tmp_path / "jobs.json")
  served = dict(np.load(result))
  ids = np.zeros((2, 16), np.int32)
  for row, text in enumerate(texts):
    pieces = [tokenizer.cls_id] + tokenizer.encode(text)[:14] + [
        tokenizer.sep_id]
    ids[row, :len(pieces)] = pieces
  mask = (ids > 0).astype(np.int32)
  np.testing.assert_array_equal(served["input_ids"], ids)
  np.testing.assert_array_equal(served["input_mask"], mask)
  logits = model.discriminator(dict(input_ids=ids, input_mask=mask,
                                    segment_ids=np.zeros_like(ids)))
  want = tf.sigmoid(logits).numpy() * mask
  assert np.abs(served["replaced_probability"] - want).max() < TOL


def test_a_batch_is_cut_to_its_longest_text():
  from export import saved_model  # pylint: disable=g-import-not-at-top
  mask = tf.constant([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
  features = dict(input_ids=mask * 7, input_mask=mask, segment_ids=mask * 0)
  cut = saved_model._trimmed(features)  # pylint: disable=protected-access
  assert {k: v.shape.as_list() for k, v in cut.items()} == {
      k: [2, 3] for k in features}
  assert cut["input_ids"].numpy().tolist() == [[7, 7, 7], [7, 7, 0]]
  empty = saved_model._trimmed(  # pylint: disable=protected-access
      dict(input_mask=tf.zeros([2, 4], tf.int32)))
  assert empty["input_mask"].shape.as_list() == [2, 1]
