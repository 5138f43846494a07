"""studies/corpus.py: a study's in-domain pre-training corpus from task
files (data.corpus_texts less data.corpus_exclude)."""

import json
import os

import pytest

from studies import config as config_lib
from studies import corpus
from studies import plan as plan_lib
from tests.paths import REPO
from util.errors import UserError


def _tsv(path, header, rows):
  path.write_text("".join("\t".join(r) + "\n" for r in [header] + rows))
  return str(path)


@pytest.fixture()
def texts(tmp_path):
  train = _tsv(tmp_path / "train.tsv", ["sentence", "label"],
               [["a fine film .", "1"], ["dull and long .", "0"],
                ["a fine film .", "1"], ["seen in dev .", "0"]])
  extra = _tsv(tmp_path / "ratings.tsv", ["id", "rating", "sentence"],
               [["1", "2.5", "dull and long ."], ["2", "-1", "only here ."],
                ["3", "0.5", "in the test set ."]])
  dev = _tsv(tmp_path / "dev.tsv", ["sentence", "label"],
             [["seen in dev .", "0"]])
  test = _tsv(tmp_path / "test.tsv", ["sentence", "label"],
              [["in the test set .", "1"]])
  return dict(train=train, extra=extra, dev=dev, test=test)


def _study(tmp_path, data):
  with open(os.path.join(REPO, "studies", "configs", "smoke.json")) as f:
    study = json.load(f)
  study.update(work_dir=str(tmp_path / "work"), data=data)
  path = tmp_path / "study.json"
  path.write_text(json.dumps(study))
  return str(path)


def _data(texts, **more):
  data = dict(corpus_texts=[
      dict(source=texts["train"], text_column="sentence"),
      dict(source=texts["extra"], text_column="sentence")],
      corpus_exclude=[dict(source=texts["dev"], text_column="sentence"),
                      dict(source=texts["test"], text_column="sentence")],
      vocab_size=100)
  data.update(more)
  return data


def test_the_in_domain_corpus_is_each_sentence_once_less_dev_and_test(
    tmp_path, texts):
  study = config_lib.load_study(_study(tmp_path, _data(texts)))
  directory = corpus.prepare(study, log=lambda line: None)
  assert directory == os.path.join(plan_lib.data_dir(study), "corpus")
  with open(os.path.join(directory, corpus.TEXT_FILE)) as f:
    assert f.read().split("\n")[:-1] == [
        "a fine film .", "dull and long .", "only here ."]


def test_a_corpus_dir_given_too_is_copied_beside_the_in_domain_text(
    tmp_path, texts):
  extra_dir = tmp_path / "books"
  extra_dir.mkdir()
  (extra_dir / "book.txt").write_text("Call me Ishmael.\n")
  study = config_lib.load_study(_study(
      tmp_path, _data(texts, corpus_dir=str(extra_dir))))
  directory = corpus.prepare(study, log=lambda line: None)
  with open(os.path.join(directory, "corpus_dir", "book.txt")) as f:
    assert f.read() == "Call me Ishmael.\n"
  assert os.path.isfile(os.path.join(directory, corpus.TEXT_FILE))


def test_without_corpus_texts_the_corpus_is_corpus_dir(tmp_path):
  study = config_lib.load_study(_study(tmp_path, dict(
      corpus_dir="data/corpus", vocab_size=100)))
  assert corpus.prepare(study) == os.path.join(REPO, "data", "corpus")


@pytest.mark.parametrize("change, message", [
    (dict(corpus_texts=[]), "non-empty list"),
    (dict(corpus_texts=[dict(source="nowhere.tsv", text_column="s")]),
     "is not a file"),
    (dict(corpus_texts=[dict(source="README.md")]), "text_column"),
    (dict(corpus_texts=None, corpus_exclude=None), "'corpus_dir' or "
     "'corpus_texts' is required"),
])
def test_bad_corpus_settings_name_the_key(tmp_path, texts, change, message):
  data = _data(texts)
  data.update(change)
  data = {k: v for k, v in data.items() if v is not None}
  with pytest.raises(UserError, match=message):
    config_lib.load_study(_study(tmp_path, data))


def test_a_missing_text_column_names_the_file(tmp_path, texts):
  data = _data(texts)
  data["corpus_texts"][0]["text_column"] = "text"
  study = config_lib.load_study(_study(tmp_path, data))
  with pytest.raises(UserError, match="train.tsv has no column 'text'"):
    corpus.prepare(study, log=lambda line: None)
