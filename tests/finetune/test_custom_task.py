"""Tasks described by a task.json (finetune/task_spec.py, custom_tasks.py).

Fixtures: tests/fixtures/custom_tasks/finetuning_data/ holds the README's
(and docs/finetuning.md's) example (`reviews`, classification CSV), a JSONL
sentence-pair task (`pairs`), a TSV regression (`scores`) and a tagging task
(`entities`); other cases are written into temporary data dirs by the tests.
"""

import csv
import io
import json
import os
import random
import re
import shlex
import shutil

import numpy as np
import pytest

import run_finetuning
from finetune import task_spec
from finetune import preprocessing
from finetune import readers
from finetune import runner
from finetune import task_builder
from finetune import truncation
from finetune.classification import classification_metrics
from tests import finetune_fixtures as ff
from tests import paths
from util.errors import UserError

REPO = paths.REPO
FIXTURE_DIR = os.path.join(REPO, "tests", "fixtures", "custom_tasks")
FIXTURE_TASKS = os.path.join(FIXTURE_DIR, "finetuning_data")


@pytest.fixture(scope="module")
def tokenizer():
  return ff.build_tokenizer(ff.tiny_config())


def _config(data_dir, model_dir=None, **overrides):
  return ff.tiny_config(model_dir=model_dir or os.path.join(str(data_dir),
                                                            "model"),
                        data_dir=str(data_dir), **overrides)


def _task(data_dir, name, tokenizer, **overrides):
  return ff.get_task(_config(data_dir, **overrides), name,
                     tokenizer)


def _write(path, content):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  mode = "wb" if isinstance(content, bytes) else "w"
  with open(path, mode, **({} if mode == "wb" else
                           dict(encoding="utf-8", newline=""))) as f:
    f.write(content)
  return path


def _make_task(root, name, spec, files):
  """Writes `<root>/finetuning_data/<name>/` with task.json `spec` (a dict,
  or a string written as is) and `files` {file name: content}."""
  directory = os.path.join(str(root), "finetuning_data", name)
  os.makedirs(directory, exist_ok=True)
  if spec is not None:
    _write(os.path.join(directory, "task.json"),
           spec if isinstance(spec, (str, bytes)) else json.dumps(spec))
  for file_name, content in files.items():
    _write(os.path.join(directory, file_name), content)
  return directory


def _rows_file(file_format, header, rows):
  """The text of a TSV, CSV or JSONL file of `rows` under `header`."""
  if file_format == "tsv":
    return "\n".join("\t".join(str(v) for v in row)
                     for row in [header] + rows) + "\n"
  if file_format == "csv":
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()
  return "".join(json.dumps(dict(zip(header, row))) + "\n" for row in rows)


def _error(fn, *args, **kwargs):
  with pytest.raises(UserError) as e:
    fn(*args, **kwargs)
  return str(e.value)


# ---- each type and format ----------------------------------------------------


FIXTURE_EXPECTED = {
    # task: (train size, dev size, test size, first train example, labels,
    # metrics)
    "reviews": (18, 4, 2, ("the movie was great .", None, "positive"),
                ("mixed", "negative", "positive"), ("accuracy", "macro_f1")),
    "pairs": (4, 2, 1, ("how do i study verbs ?",
                        "what is the best way to study verbs ?", "duplicate"),
              ("not_duplicate", "duplicate"), ("f1", "accuracy")),
    "scores": (10, 4, 2, ("the movie was great .", None, 2.0), None,
               ("pearson", "spearman")),
}


@pytest.mark.parametrize("name", sorted(FIXTURE_EXPECTED))
def test_fixture_sentence_tasks(name, tokenizer):
  train_size, dev_size, test_size, first, labels, metrics = (
      FIXTURE_EXPECTED[name])
  task = _task(FIXTURE_DIR, name, tokenizer)
  train = task.load("train", is_training=True)
  assert len(train.examples) == train_size
  assert len(task.load("dev").examples) == dev_size
  test = task.load("test")
  assert len(test.examples) == test_size
  assert all(example.label is None for example in test.examples)
  example = train.examples[0]
  label = (task.label_list[example.label] if labels else example.label)
  assert (example.text_a, example.text_b, label) == first
  assert task.label_list == labels
  assert task.metric_names == metrics
  n = len(train.examples)
  assert train.features["input_ids"].shape == (n, 32)
  key = "label_ids" if labels else "label_values"
  assert train.features[key].shape == (n,)
  if name == "pairs":  # two segments
    assert set(train.features["segment_ids"][0]) == {0, 1}


def test_fixture_tagging_task(tokenizer):
  task = _task(FIXTURE_DIR, "entities", tokenizer)
  train = task.load("train", is_training=True)
  assert [len(e.words) for e in train.examples] == [6, 5, 6]
  assert task.label_list == ("B-LOC", "B-PER", "I-PER", "O")
  assert [task.label_list[i] for i in train.examples[0].labels] == [
      "B-PER", "I-PER", "O", "O", "B-LOC", "O"]
  assert task.metric_names == ("f1", "accuracy") and task.span_labels
  assert train.features["label_ids"].shape == (3, 32)
  test = task.load("test")  # words only
  assert test.examples[0].words == ["Smith", "sailed", "to", "Boston"]
  assert test.examples[0].labels is None


ROWS = [("the movie was great", "good"), ("the film was bad", "bad"),
        ("a wonderful story", "good"), ("an awful film", "bad"),
        ("the movie was dull", "meh")]


@pytest.mark.parametrize("file_format", ["tsv", "csv", "jsonl"])
def test_classification_in_every_format(file_format, tmp_path, tokenizer):
  header = ["text", "label"]
  _make_task(tmp_path, "t", {"type": "classification", "format": file_format,
                             "text_columns": ["text"],
                             "label_column": "label"},
             {"train." + file_format: _rows_file(file_format, header, ROWS),
              "dev." + file_format: _rows_file(file_format, header,
                                               ROWS[:2])})
  task = _task(tmp_path, "t", tokenizer)
  examples = task.get_examples("train")
  assert [(e.text_a, task.label_list[e.label]) for e in examples] == ROWS
  assert task.label_list == ("bad", "good", "meh")
  assert task.metric_names == ("accuracy", "macro_f1")
  assert task.split_path("dev").endswith("dev." + file_format)


@pytest.mark.parametrize("file_format", ["tsv", "csv", "jsonl"])
def test_regression_in_every_format(file_format, tmp_path, tokenizer):
  rows = [("the movie was great", 3.5), ("the film was bad", -2),
          ("a story", 0.25)]
  header = ["sentence", "rating"]
  _make_task(tmp_path, "r", {"type": "regression", "format": file_format,
                             "text_columns": ["sentence"],
                             "label_column": "rating"},
             {"train." + file_format: _rows_file(file_format, header, rows),
              "dev." + file_format: _rows_file(file_format, header, rows)})
  task = _task(tmp_path, "r", tokenizer)
  data = task.load("train")
  assert [e.label for e in data.examples] == [3.5, -2.0, 0.25]
  np.testing.assert_allclose(data.features["label_values"], [3.5, -2, 0.25])
  assert task.metric_names == ("pearson", "spearman")
  assert task.get_scorer(data).primary_metric == "pearson"


def test_tagging_without_bio_labels_reports_accuracy(tmp_path, tokenizer):
  conll = "the DT\ndog NN\nslept VBD\n\na DT\ncat NN\n"
  _make_task(tmp_path, "tags", {"type": "tagging"},
             {"train.txt": conll, "dev.txt": conll})
  task = _task(tmp_path, "tags", tokenizer)
  assert task.label_list == ("DT", "NN", "VBD")
  assert task.metric_names == ("accuracy",) and not task.span_labels
  # Explicit "conll" is the same; span f1 on non-BIO labels is an error.
  _make_task(tmp_path, "tags2", {"type": "tagging", "format": "conll",
                                 "metrics": ["f1"]},
             {"train.txt": conll, "dev.txt": conll})
  message = _error(lambda: _task(tmp_path, "tags2", tokenizer).get_examples(
      "train"))
  assert "task.json: key 'metrics'" in message and "BIO" in message


def test_csv_quoting_and_line_numbers(tmp_path, tokenizer):
  train = ('text,label\n"a, b",x\n"two\nlines",y\n\n"say ""hi""",\n')
  _make_task(tmp_path, "q", {"type": "classification", "format": "csv",
                             "text_columns": ["text"],
                             "label_column": "label"},
             {"train.csv": train})
  columns, rows = readers.read_csv(
      os.path.join(str(tmp_path), "finetuning_data", "q", "train.csv"))
  assert columns == ["text", "label"]
  assert [(r.fields, r.line) for r in rows] == [
      (["a, b", "x"], 2), (["two\nlines", "y"], 3), (['say "hi"', ""], 6)]
  message = _error(_task(tmp_path, "q", tokenizer).get_examples, "train")
  assert "train.csv:6: the label (column 'label') is empty" in message


def test_more_than_two_text_columns_are_joined(tmp_path, tokenizer):
  header = ["title", "summary", "body", "label"]
  rows = [("the dog", "a dog story", "the dog slept", "a"),
          ("the cat", "a cat story", "the cat ate", "b")]
  _make_task(tmp_path, "j", {"type": "classification", "format": "tsv",
                             "text_columns": ["title", "summary", "body"],
                             "label_column": "label"},
             {"train.tsv": _rows_file("tsv", header, rows)})
  task = _task(tmp_path, "j", tokenizer)
  data = task.load("train")
  assert task_spec.TEXT_SEPARATOR == " | "
  assert data.examples[0].text_a == "the dog | a dog story | the dog slept"
  assert data.examples[0].text_b is None
  assert set(data.features["segment_ids"].ravel()) == {0}


# ---- labels: order, saving, checking -----------------------------------------


def test_label_order_does_not_depend_on_row_order(tmp_path, tokenizer):
  rows = [("text %d" % i, label) for i, label in
          enumerate(["pos", "neg", "neutral", "neg", "pos", "neutral"] * 3)]
  orders = set()
  for seed in range(4):
    shuffled = list(rows)
    random.Random(seed).shuffle(shuffled)
    root = tmp_path / str(seed)
    _make_task(root, "t", {"type": "classification", "format": "jsonl",
                           "text_columns": ["text"], "label_column": "label"},
               {"train.jsonl": _rows_file("jsonl", ["text", "label"],
                                          shuffled)})
    orders.add(_task(root, "t", tokenizer).label_list)
  assert orders == {("neg", "neutral", "pos")}


def test_numeric_labels_sort_numerically():
  assert task_spec.sorted_labels(["10", "9", "2", "-1"]) == [
      "-1", "2", "9", "10"]
  assert task_spec.sorted_labels(["b", "10", "a", "9"]) == [
      "10", "9", "a", "b"]
  assert task_spec.label_text(1) == "1"
  assert task_spec.label_text(True) == "true"


def test_given_labels_keep_their_order(tmp_path, tokenizer):
  _make_task(tmp_path, "t", {"type": "classification", "format": "jsonl",
                             "text_columns": ["text"], "label_column": "label",
                             "labels": ["pos", 0, "neg"]},
             {"train.jsonl": '{"text": "a", "label": "neg"}\n'
                             '{"text": "b", "label": 0}\n'})
  task = _task(tmp_path, "t", tokenizer)
  assert task.label_list == ("pos", "0", "neg")
  assert [e.label for e in task.get_examples("train")] == [2, 1]
  assert task.labels_from.endswith("task.json")


def test_labels_are_saved_with_the_model_and_reused(tmp_path, tokenizer):
  header = ["text", "label"]
  _make_task(tmp_path, "t", {"type": "classification", "format": "csv",
                             "text_columns": ["text"],
                             "label_column": "label"},
             {"train.csv": _rows_file("csv", header, ROWS)})
  model_dir = tmp_path / "model"
  task = _task(tmp_path, "t", tokenizer, model_dir=str(model_dir))
  task.get_examples("train")
  task.build_head()  # what a trial does: the labels go with the model
  path = model_dir / "finetuning_models" / "t" / "labels.json"
  saved = json.loads(path.read_text())
  assert saved["labels"] == ["bad", "good", "meh"]
  assert saved["labels_from"].endswith("train.csv")
  assert saved["metrics"] == ["accuracy", "macro_f1"]
  assert saved["type"] == "classification" and saved["label_column"] == "label"
  # Evaluating later (do_train false): the saved order wins even if the
  # train file changed.
  _make_task(tmp_path, "t", None, {"train.csv": _rows_file(
      "csv", header, ROWS + [("new", "aaa")])})
  later = _task(tmp_path, "t", tokenizer, model_dir=str(model_dir),
                do_train=False)
  assert later.label_list == ("bad", "good", "meh")
  assert later.labels_from == str(path)


def test_dev_and_test_labels_outside_the_set_are_errors(tmp_path, tokenizer):
  header = ["text", "label"]
  _make_task(tmp_path, "t", {"type": "classification", "format": "tsv",
                             "text_columns": ["text"],
                             "label_column": "label"},
             {"train.tsv": _rows_file("tsv", header, ROWS),
              "dev.tsv": _rows_file("tsv", header, [("x", "good"),
                                                    ("y", "goood")]),
              "test.tsv": _rows_file("tsv", header, [("x", ""),
                                                     ("y", "mehh")])})
  task = _task(tmp_path, "t", tokenizer)
  message = _error(task.get_examples, "dev")
  assert "dev.tsv:3: label 'goood'" in message
  assert "(did you mean 'good'?)" in message and "train.tsv" in message
  message = _error(task.get_examples, "test")
  assert "test.tsv:3: label 'mehh'" in message and "'meh'" in message


def test_tagging_label_outside_the_set(tmp_path, tokenizer):
  _make_task(tmp_path, "e", {"type": "tagging", "labels": ["O", "B-PER",
                                                          "I-PER"]},
             {"train.txt": "Smith B-PER\nslept O\n",
              "dev.txt": "Smith B-PER\n\nthe O\nMrs. B-PRE\n"})
  task = _task(tmp_path, "e", tokenizer)
  assert task.label_list == ("O", "B-PER", "I-PER")
  message = _error(task.get_examples, "dev")
  assert "dev.txt:4: label 'B-PRE'" in message
  assert "did you mean 'B-PER'" in message


# ---- bad input ---------------------------------------------------------------


GOOD_SPEC = {"type": "classification", "format": "csv",
             "text_columns": ["text"], "label_column": "label"}
GOOD_CSV = "text,label\nthe dog,a\nthe cat,b\n"


def _bad_task(tmp_path, tokenizer, spec=None, files=None, split="train"):
  """The UserError of reading `split` of a task made of `spec` and `files`
  (defaults: a good CSV task)."""
  _make_task(tmp_path, "bad", GOOD_SPEC if spec is None else spec,
             files or {"train.csv": GOOD_CSV, "dev.csv": GOOD_CSV})
  return _error(lambda: _task(tmp_path, "bad", tokenizer).load(split))


@pytest.mark.parametrize("key,value,expected", [
    ("typo", "x", "'typo' is not a task.json key (did you mean 'type'?)"),
    ("lables", ["a"], "'lables' is not a task.json key (did you mean "
                      "'labels'?)"),
    ("type", "clasification", "key 'type' is \"clasification\" (did you mean "
                              "'classification'?)"),
    ("format", "tvs", "key 'format' is \"tvs\" (did you mean 'tsv'?)"),
    ("truncation", "head_tail", "key 'truncation' is \"head_tail\" (did you "
                                "mean 'head+tail'?)"),
    ("metrics", ["acuracy"], "key 'metrics' is \"acuracy\" (did you mean "
                             "'accuracy'?)"),
    ("text_columns", "text", "key 'text_columns' must be a list"),
    ("labels", ["a"], "key 'labels' must list at least 2 labels"),
])
def test_bad_task_json_values(key, value, expected, tmp_path, tokenizer):
  message = _bad_task(tmp_path, tokenizer, spec=dict(GOOD_SPEC, **{key:
                                                                   value}))
  assert os.path.join("bad", "task.json") in message
  assert expected in message


def test_missing_task_json_keys(tmp_path, tokenizer):
  for key in ("type", "format", "text_columns", "label_column"):
    spec = {k: v for k, v in GOOD_SPEC.items() if k != key}
    message = _bad_task(tmp_path, tokenizer, spec=spec)
    assert "task.json: key %r is missing" % key in message


def test_keys_that_do_not_apply(tmp_path, tokenizer):
  message = _bad_task(tmp_path, tokenizer,
                      spec={"type": "tagging", "text_columns": ["text"]})
  assert "key 'text_columns' does not apply to tagging" in message
  message = _bad_task(tmp_path, tokenizer,
                      spec={"type": "tagging", "format": "csv"})
  assert "key 'format' is \"csv\"" in message and '"conll"' in message
  message = _bad_task(tmp_path, tokenizer,
                      spec=dict(GOOD_SPEC, type="regression",
                                labels=["a", "b"]))
  assert "key 'labels' does not apply to regression" in message
  message = _bad_task(tmp_path, tokenizer, spec=dict(
      GOOD_SPEC, metrics=["accuracy", "f1"]),
                      files={"train.csv": GOOD_CSV + "a bird,c\n"})
  assert "'f1' is the F1 of the second label" in message
  assert "'macro_f1'" in message


def test_task_json_that_is_not_json(tmp_path, tokenizer):
  message = _bad_task(tmp_path, tokenizer, spec='{"type": "regression",\n'
                                                '  "format": tsv}')
  assert re.search(r"bad.task\.json:2: not valid JSON at column \d+",
                   message), message
  message = _bad_task(tmp_path, tokenizer, spec='["classification"]')
  assert "task.json: expected a JSON object" in message


@pytest.mark.parametrize("file_format", ["tsv", "csv", "jsonl"])
def test_misspelt_columns(file_format, tmp_path, tokenizer):
  rows = _rows_file(file_format, ["sentence", "label"], [("a", "x"),
                                                         ("b", "y")])
  for key, spec in (("text_columns", dict(text_columns=["sentense"],
                                          label_column="label")),
                    ("label_column", dict(text_columns=["sentence"],
                                          label_column="lable"))):
    message = _bad_task(tmp_path / key, tokenizer,
                        spec=dict(GOOD_SPEC, format=file_format, **spec),
                        files={"train." + file_format: rows})
    name = spec[key] if key == "label_column" else spec[key][0]
    # The header line, or the first JSON object.
    assert "train.%s:1:" % file_format in message
    assert repr(name) in message and ("key %r" % key) in message
    right = "label" if key == "label_column" else "sentence"
    assert "(did you mean %r?)" % right in message


def test_empty_split(tmp_path, tokenizer):
  message = _bad_task(tmp_path, tokenizer,
                      files={"train.csv": "text,label\n"})
  assert "train.csv has no examples" in message
  message = _bad_task(tmp_path / "2", tokenizer,
                      files={"train.csv": GOOD_CSV, "dev.csv": "text,label\n"},
                      split="dev")
  assert "dev.csv has no examples" in message
  message = _bad_task(tmp_path / "3", tokenizer, files={"train.csv": ""})
  assert "train.csv is empty" in message
  message = _bad_task(tmp_path / "4", tokenizer, spec={"type": "tagging"},
                      files={"train.txt": "\n\n"})
  assert "train.txt has no examples" in message


def test_empty_label_cell(tmp_path, tokenizer):
  message = _bad_task(tmp_path, tokenizer,
                      files={"train.csv": "text,label\nthe dog,a\nthe cat, \n"})
  assert "train.csv:3: the label (column 'label') is empty" in message
  message = _bad_task(tmp_path / "j", tokenizer,
                      spec=dict(GOOD_SPEC, format="jsonl"),
                      files={"train.jsonl": '{"text": "a", "label": "x"}\n'
                                            '{"text": "b", "label": null}\n'})
  assert "train.jsonl:2: the label (column 'label') is empty" in message


def test_regression_label_that_is_not_a_number(tmp_path, tokenizer):
  spec = dict(GOOD_SPEC, type="regression", format="tsv")
  message = _bad_task(tmp_path, tokenizer, spec=spec, files={
      "train.tsv": "text\tlabel\nthe dog\t1.5\nthe cat\thigh\n"})
  assert "train.tsv:3: label 'high' (column 'label')" in message
  assert "not a number" in message
  message = _bad_task(tmp_path / "2", tokenizer, spec=spec, files={
      "train.tsv": "text\tlabel\nthe dog\t\n"})
  assert "train.tsv:2: the label (column 'label') is empty" in message
  message = _bad_task(tmp_path / "3", tokenizer, spec=dict(spec,
                                                           format="jsonl"),
                      files={"train.jsonl": '{"text": "a", "label": true}\n'})
  assert "train.jsonl:1: label 'true'" in message


def test_ragged_rows(tmp_path, tokenizer):
  message = _bad_task(tmp_path, tokenizer, files={
      "train.csv": "text,label\nthe dog,a\nthe dog, the cat,b\n"})
  assert "train.csv:3: 3 comma-separated fields, but the header (line 1) " \
         "has 2" in message
  message = _bad_task(tmp_path / "short", tokenizer, files={
      "train.csv": "text,label\nthe dog\n"})
  assert "train.csv:2: 1 comma-separated fields" in message
  message = _bad_task(tmp_path / "tsv", tokenizer, spec=dict(
      GOOD_SPEC, format="tsv"), files={"train.tsv": "text\tlabel\na\tb\tc\n"})
  assert "train.tsv:2: 3 tab-separated fields" in message


def test_jsonl_line_that_is_not_json(tmp_path, tokenizer):
  spec = dict(GOOD_SPEC, format="jsonl")
  message = _bad_task(tmp_path, tokenizer, spec=spec, files={
      "train.jsonl": '{"text": "a", "label": "x"}\n{"text": "b", label: y}\n'})
  assert "train.jsonl:2: not valid JSON" in message
  message = _bad_task(tmp_path / "2", tokenizer, spec=spec, files={
      "train.jsonl": '["a", "x"]\n'})
  assert "train.jsonl:1: expected a JSON object per line, got list" in message
  message = _bad_task(tmp_path / "3", tokenizer, spec=spec, files={
      "train.jsonl": '{"text": ["a"], "label": "x"}\n'})
  assert "train.jsonl:1: key 'text' must hold a text" in message


@pytest.mark.parametrize("file_format", ["tsv", "csv", "jsonl", "conll"])
def test_file_that_is_not_utf8(file_format, tmp_path, tokenizer):
  spec = (dict(GOOD_SPEC, format=file_format) if file_format != "conll"
          else {"type": "tagging"})
  good = {"tsv": "text\tlabel\nthe dog\ta\n", "csv": GOOD_CSV,
          "jsonl": '{"text": "the dog", "label": "a"}\n',
          "conll": "the O\ndog O\n"}[file_format]
  extension = task_spec.EXTENSIONS[file_format]
  message = _bad_task(tmp_path, tokenizer, spec=spec, files={
      "train" + extension: good.encode("utf-8") + b"caf\xe9 x\n"})
  lines = good.count("\n") + 1
  assert "train%s:%d: not valid UTF-8" % (extension, lines) in message
  message = _bad_task(tmp_path / "json", tokenizer,
                      spec=b'{"type": "caf\xe9"}')
  assert "task.json: not valid JSON or UTF-8" in message


def test_missing_split_file_names_the_file(tmp_path, tokenizer):
  message = _bad_task(tmp_path, tokenizer, files={"train.tsv": "x"})
  assert "no train split: looked for" in message and "train.csv" in message


def test_builtin_name_cannot_have_a_task_json(tmp_path, tokenizer):
  _make_task(tmp_path, "sst", GOOD_SPEC, {"train.csv": GOOD_CSV})
  message = _error(_task, tmp_path, "sst", tokenizer)
  assert "'sst' is a built-in task" in message


def test_task_name_must_be_a_plain_name(tmp_path, tokenizer):
  _make_task(tmp_path, "my task", GOOD_SPEC, {"train.csv": GOOD_CSV})
  message = _error(_task, tmp_path, "my task", tokenizer)
  assert "directory name) 'my task' may only hold letters" in message


def test_unknown_task_lists_builtin_tasks_and_says_how_to_add_one(tmp_path):
  _make_task(tmp_path, "reviews", GOOD_SPEC, {})
  os.makedirs(os.path.join(str(tmp_path), "finetuning_data", "mine"))
  message = _error(task_builder.check_task_names, ["reveiws", "mine"],
                   str(tmp_path))
  assert "unknown task 'reveiws' (did you mean 'reviews'?)" in message
  for name in ("cola", "sst", "sts", "squadv2", "ner", "pos"):
    assert name in message
  assert "Tasks described by a task.json in" in message
  assert "mine exists but holds no task.json" in message
  assert "put a task.json (keys: type, format" in message
  assert "Your own task: task.json" in message
  # Names only: the built-in names, and how to add a task.json.
  message = _error(task_builder.check_task_names, ["sst2"])
  assert "unknown task 'sst2' (did you mean 'sst'?)" in message
  assert "<data_dir>/finetuning_data/<name>/" in message
  task_builder.check_task_names(["sst", "reviews"], str(tmp_path))


def test_bad_input_exits_2_through_run_finetuning(tmp_path, capsys):
  _make_task(tmp_path, "bad", dict(GOOD_SPEC, text_columns=["txt"]),
             {"train.csv": GOOD_CSV, "dev.csv": GOOD_CSV})
  argv = ["--data-dir", str(tmp_path), "--model-name", "m", "--hparams",
          json.dumps(ff.tiny_hparams(tmp_path / "m", task_names=["bad"]))]
  with pytest.raises(SystemExit) as e:
    run_finetuning.run_main(run_finetuning.main, argv)
  assert e.value.code == 2
  err = capsys.readouterr().err
  assert "train.csv:1: the header has no column 'txt'" in err
  assert "(did you mean 'text'?)" in err


# ---- truncation --------------------------------------------------------------


def test_segment_lengths_match_truncate_pair():
  for budget in range(1, 13):
    for length_a in range(0, 15):
      for length_b in range(0, 15):
        a, b = list(range(length_a)), list(range(length_b))
        preprocessing.truncate_pair(a, b, budget)
        assert truncation.segment_lengths(length_a, length_b, budget) == (
            len(a), len(b)), (budget, length_a, length_b)


def test_truncation_rules():
  ids = list(range(20))
  assert truncation.keep_tokens(ids, 8, "head") == list(range(8))
  assert truncation.keep_tokens(ids, 8, "tail") == list(range(12, 20))
  assert truncation.keep_tokens(ids, 8, "head+tail") == [0, 1] + list(
      range(14, 20))
  assert truncation.keep_tokens(ids, 30, "tail") == ids
  # Sun et al.'s budget: 510 slots -> first 127 and last 383.
  kept = truncation.keep_tokens(list(range(1000)), 510, "head+tail")
  assert kept[:127] == list(range(127)) and kept[127] == 1000 - 383
  assert len(kept) == 510
  with pytest.raises(ValueError):
    truncation.keep_tokens(ids, 8, "middle")


def test_encode_truncated(tokenizer):
  a, b = list(range(10, 30)), list(range(40, 45))
  # One text: 8 - 2 = 6 slots.
  ids, mask, segments, lost = truncation.encode_truncated(
      tokenizer, a, None, 8, "tail")
  assert ids == [tokenizer.cls_id] + list(range(24, 30)) + [tokenizer.sep_id]
  assert lost == 14 and sum(mask) == 8 and set(segments) == {0}
  # A pair: 12 - 3 = 9 slots, b (5) fits in its half, a keeps 4.
  ids, mask, segments, lost = truncation.encode_truncated(
      tokenizer, a, b, 12, "head+tail")
  assert ids == ([tokenizer.cls_id, 10, 27, 28, 29, tokenizer.sep_id] + b +
                 [tokenizer.sep_id])
  assert lost == 16 and segments == [0] * 6 + [1] * 6
  # head is encode_pair's truncation.
  head = truncation.encode_truncated(tokenizer, a, b, 12, "head")[:3]
  assert head == preprocessing.encode_pair(tokenizer, a, b, 12)
  stats = truncation.TruncationStats()
  stats.add(25, 16)
  stats.add(5, 0)
  assert stats.as_dict() == dict(examples=2, truncated=1, tokens=30,
                                 tokens_lost=16)


@pytest.mark.parametrize("rule", truncation.RULES)
def test_truncation_is_logged(rule, tmp_path, tokenizer, capsys):
  words = "the dog slept under the old tree until the evening".split()
  rows = [(" ".join(words), "a"), ("the cat", "b"), (" ".join(words[:7]),
                                                      "a")]
  _make_task(tmp_path, "long", dict(GOOD_SPEC, truncation=rule),
             {"train.csv": _rows_file("csv", ["text", "label"], rows)})
  # max_seq_length 8: 6 slots; 10 and 7 words (one WordPiece each) are cut.
  task = _task(tmp_path, "long", tokenizer, max_seq_length=8)
  data = task.load("train")
  stats = task.truncation_stats["train"]
  assert stats.as_dict() == dict(examples=3, truncated=2, tokens=19,
                                 tokens_lost=5)
  out = capsys.readouterr().out
  assert ("long train: 2 of 3 examples (66.7%%) longer than max_seq_length 8 "
          "were truncated (truncation %r" % rule) in out
  assert "5 of 19 text tokens (26.32%) cut" in out
  first = tokenizer.convert_ids_to_tokens(
      [int(i) for i in data.features["input_ids"][0][1:7]])
  kept = {"head": words[:6], "tail": words[-6:],
          "head+tail": words[:1] + words[-5:]}[rule]
  assert first == kept


# ---- metrics -----------------------------------------------------------------


def test_macro_f1():
  labels, predictions = [0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0]
  # Per-class F1: 0.5, 0.8, 2/3.
  assert classification_metrics.macro_f1(labels, predictions) == pytest.approx(
      100 * (0.5 + 0.8 + 2.0 / 3) / 3)
  scorer = classification_metrics.ClassificationScorer(("macro_f1", "accuracy"))
  scorer.update({"logits": np.eye(3)[predictions],
                 "label_ids": np.asarray(labels)})
  results = scorer.get_results()
  assert list(results) == ["macro_f1", "accuracy", "num_examples"]
  assert results["accuracy"] == pytest.approx(100 * 4 / 6.0)
  assert scorer.primary_metric == "macro_f1"


def test_binary_classification_defaults_to_accuracy(tmp_path, tokenizer):
  _make_task(tmp_path, "b", GOOD_SPEC, {"train.csv": GOOD_CSV})
  task = _task(tmp_path, "b", tokenizer)
  assert task.metric_names == ("accuracy",)


# ---- end to end --------------------------------------------------------------


# The task.json example is shown in the README (section "Your own task:
# task.json", which finetune/task_spec.py's errors point to) and in the
# fine-tuning guide.
EXAMPLE_DOCS = ("README.md", os.path.join("docs", "finetuning.md"))


def _readme_example(doc="README.md"):
  """The task.json example of `doc` and its run_finetuning.py command."""
  with open(os.path.join(REPO, doc), encoding="utf-8") as f:
    text = f.read()
  heading = re.search(r"^#+ Your own task: task\.json\n", text, re.M)
  assert heading, "%s has no section 'Your own task: task.json'" % doc
  section = text[heading.end():]
  following = re.search(r"^#+ ", section, re.M)
  section = section[:following.start()] if following else section
  spec = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))
  command = re.search(r"```bash\n(python run_finetuning\.py .*?)\n```",
                      section, re.S).group(1)
  return spec, re.sub(r"\\\n\s*", "", command)


@pytest.mark.parametrize("doc", EXAMPLE_DOCS)
def test_readme_example_is_the_fixture(doc):
  spec, command = _readme_example(doc)
  with open(os.path.join(FIXTURE_TASKS, "reviews", "task.json")) as f:
    assert spec == json.load(f)
  assert shlex.split(command)[:2] == ["python", "run_finetuning.py"]
  assert command == _readme_example()[1]


def test_readme_example_command_runs(tmp_path, capsys):
  """The README's command as typed, with D a data dir holding the fixture
  `reviews`, M a model without pre-training (so `init_checkpoint` "none")
  and the tiny model's sizes merged under the README's hparams."""
  _, command = _readme_example()
  data_dir = tmp_path / "D"
  shutil.copytree(os.path.join(FIXTURE_TASKS, "reviews"),
                  str(data_dir / "finetuning_data" / "reviews"))
  words = shlex.split(command)[2:]
  words[words.index("--data-dir") + 1] = str(data_dir)
  i = words.index("--hparams") + 1
  readme_hparams = json.loads(words[i])
  tiny = dict(vocab_file=ff.VOCAB_FILE, vocab_size=ff.VOCAB_SIZE,
              init_checkpoint="none", max_seq_length=32, train_batch_size=8,
              eval_batch_size=8, num_train_epochs=2.0, learning_rate=0.01,
              log_every=2, model_hparam_overrides=dict(ff.TINY_MODEL))
  words[i] = json.dumps(dict(tiny, **readme_hparams))
  records = run_finetuning.run_main(run_finetuning.main, words)
  record = records["reviews"]
  model_dir = data_dir / "models" / "M"
  assert record["num_trials"] == readme_hparams["num_trials"] == 2
  assert record["primary_metric"] == "accuracy"
  for trial in record["trials"]:
    assert set(trial["final"]["dev"]) >= {"accuracy", "macro_f1"}
    assert (model_dir / "finetuning_models" / "reviews" / ("trial_%d" %
                                                           trial["trial"]) /
            "best.json").exists()
  saved = json.loads((model_dir / "finetuning_models" / "reviews" /
                      "labels.json").read_text())
  assert saved["labels"] == ["mixed", "negative", "positive"]
  assert (model_dir / "finetuning_models" / "reviews" / "config.json").exists()
  assert (model_dir / "results" / "reviews_results.json").exists()
  predictions = (model_dir / "results" / "test_predictions" / "trial_1" /
                 "reviews_test.tsv").read_text().splitlines()
  assert predictions[0] == "index\tprediction"
  assert [line.split("\t")[0] for line in predictions[1:]] == ["0", "1"]
  assert {line.split("\t")[1] for line in predictions[1:]} <= set(
      saved["labels"])
  out = capsys.readouterr().out
  assert "reviews train: 0 of 18 examples" in out
  # Evaluating the kept models again reads the saved labels.
  hparams = json.loads(words[i])
  hparams.update(do_train=False, num_trials=1, write_test_outputs=False)
  words[i] = json.dumps(hparams)
  again = run_finetuning.run_main(run_finetuning.main, words)["reviews"]
  assert again["trials"][0]["final"]["dev"]["accuracy"] == pytest.approx(
      record["trials"][0]["best"]["results"]["dev"]["accuracy"])


def test_regression_end_to_end(tmp_path):
  config = _config(FIXTURE_DIR, model_dir=str(tmp_path), task_names=["scores"],
                   num_train_epochs=3.0, write_test_outputs=True, log_every=2)
  record = runner.run_finetuning(config)["scores"]
  assert record["primary_metric"] == "pearson"
  assert set(record["trials"][0]["final"]["dev"]) >= {"pearson", "spearman"}
  saved = json.loads((tmp_path / "finetuning_models" / "scores" /
                      "labels.json").read_text())
  assert saved["labels"] is None and saved["truncation"] == "head+tail"
  lines = (tmp_path / "results" / "test_predictions" / "trial_1" /
           "scores_test.tsv").read_text().splitlines()
  assert len(lines) == 3 and all(float(line.split("\t")[1]) == float(
      line.split("\t")[1]) for line in lines[1:])


def test_tagging_end_to_end(tmp_path):
  config = _config(FIXTURE_DIR, model_dir=str(tmp_path),
                   task_names=["entities"], num_train_epochs=3.0,
                   write_test_outputs=True, train_batch_size=2, log_every=2)
  record = runner.run_finetuning(config)["entities"]
  assert record["primary_metric"] == "f1"
  assert set(record["trials"][0]["final"]["dev"]) >= {
      "precision", "recall", "f1", "accuracy"}
  saved = json.loads((tmp_path / "finetuning_models" / "entities" /
                      "labels.json").read_text())
  assert saved["labels"] == ["B-LOC", "B-PER", "I-PER", "O"]
  lines = (tmp_path / "results" / "test_predictions" / "trial_1" /
           "entities_test.txt").read_text().splitlines()
  assert [line.split()[0] for line in lines if line] == [
      "Smith", "sailed", "to", "Boston"]
  assert {line.split()[1] for line in lines if line} <= set(saved["labels"])
