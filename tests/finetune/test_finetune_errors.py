"""Bad input: each error names what is wrong and where (file, line, path)."""

import json
import os
import shutil

import pytest

import run_finetuning
from finetune import runner
from tests import finetune_fixtures as ff
from util.errors import UserError


@pytest.fixture(scope="module")
def tokenizer():
  return ff.build_tokenizer(ff.tiny_config())


def _data_dir(tmp_path, task_name):
  """A data dir holding a copy of one fixture task (to be edited)."""
  shutil.copytree(os.path.join(ff.FIXTURE_DIR, "finetuning_data", task_name),
                  str(tmp_path / "finetuning_data" / task_name))
  return tmp_path


def _task(tmp_path, name, tokenizer):
  config = ff.tiny_config(model_dir=tmp_path / "model", data_dir=tmp_path)
  return ff.get_task(config, name, tokenizer)


def _write(path, text):
  with open(str(path), "w") as f:
    f.write(text)


def test_missing_task_directory_names_it(tmp_path, tokenizer):
  task = _task(tmp_path, "sst", tokenizer)
  with pytest.raises(UserError) as e:
    task.get_examples("train")
  assert os.path.join(str(tmp_path), "finetuning_data", "sst") in str(e.value)
  assert "does not exist" in str(e.value)


def test_missing_split_names_every_path_looked_for(tmp_path, tokenizer):
  _data_dir(tmp_path, "sst")
  os.remove(str(tmp_path / "finetuning_data" / "sst" / "dev.tsv"))
  with pytest.raises(UserError) as e:
    _task(tmp_path, "sst", tokenizer).get_examples("dev")
  assert "no dev split" in str(e.value)
  assert str(tmp_path / "finetuning_data" / "sst" / "dev.tsv") in str(e.value)
  _data_dir(tmp_path, "squadv2")
  os.remove(str(tmp_path / "finetuning_data" / "squadv2" / "train.json"))
  with pytest.raises(UserError) as e:  # the official file name is tried too
    _task(tmp_path, "squadv2", tokenizer).get_examples("train")
  assert "train.json or " in str(e.value) and "train-v2.0.json" in str(
      e.value)


def test_malformed_row_names_file_line_and_expectation(tmp_path, tokenizer):
  _data_dir(tmp_path, "sst")
  path = tmp_path / "finetuning_data" / "sst" / "train.tsv"
  _write(path, "sentence\tlabel\na fine film\t1\njust a sentence\n")
  with pytest.raises(UserError) as e:
    _task(tmp_path, "sst", tokenizer).get_examples("train")
  assert "%s:3:" % path in str(e.value)
  assert "expected at least 2 tab-separated fields" in str(e.value)
  assert "'label'" in str(e.value)


def test_label_outside_label_set_is_an_error(tmp_path, tokenizer):
  _data_dir(tmp_path, "sst")
  path = tmp_path / "finetuning_data" / "sst" / "train.tsv"
  _write(path, "sentence\tlabel\na fine film\t1\na bad film\tnegative\n")
  with pytest.raises(UserError) as e:
    _task(tmp_path, "sst", tokenizer).get_examples("train")
  assert "%s:3: label 'negative' is not one of task 'sst'" % path in str(
      e.value)
  assert "'0', '1'" in str(e.value)


def test_regression_label_out_of_range(tmp_path, tokenizer):
  _data_dir(tmp_path, "sts")
  path = tmp_path / "finetuning_data" / "sts" / "dev.tsv"
  lines = open(str(path)).read().splitlines()
  lines[2] = lines[2].rsplit("\t", 1)[0] + "\t7.5"
  _write(path, "\n".join(lines) + "\n")
  with pytest.raises(UserError) as e:
    _task(tmp_path, "sts", tokenizer).get_examples("dev")
  assert "%s:3: label '7.5'" % path in str(e.value) and "[0, 5]" in str(
      e.value)


def test_missing_header_column_names_the_format(tmp_path, tokenizer):
  _data_dir(tmp_path, "mrpc")
  path = tmp_path / "finetuning_data" / "mrpc" / "dev.tsv"
  _write(path, "Label\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\ta\tb\n")
  with pytest.raises(UserError) as e:
    _task(tmp_path, "mrpc", tokenizer).get_examples("dev")
  assert "%s:1: the header has no column 'Quality'" % path in str(e.value)
  assert "GLUE MRPC format" in str(e.value)


def test_tagging_errors_name_file_and_line(tmp_path, tokenizer):
  _data_dir(tmp_path, "ner")
  path = tmp_path / "finetuning_data" / "ner" / "train.txt"
  _write(path, "Smith B-PER\nsailed\n")
  with pytest.raises(UserError) as e:
    _task(tmp_path, "ner", tokenizer).get_examples("train")
  assert "%s:2: expected 'token label'" % path in str(e.value)
  _write(path, "Smith B-PER\n\nBoston B-CITY\n")
  with pytest.raises(UserError) as e:
    _task(tmp_path, "ner", tokenizer).get_examples("train")
  assert "%s:3: label 'B-CITY' is not one of task 'ner'" % path in str(
      e.value)


def test_squad_errors_name_file_and_question(tmp_path, tokenizer):
  _data_dir(tmp_path, "squadv1")
  path = tmp_path / "finetuning_data" / "squadv1" / "train.json"
  _write(path, '{"data": [\n  {"paragraphs": [}\n]}')
  with pytest.raises(UserError) as e:
    _task(tmp_path, "squadv1", tokenizer).get_examples("train")
  assert "%s:2: not valid JSON" % path in str(e.value)
  data = json.load(open(os.path.join(ff.FIXTURE_DIR, "finetuning_data",
                                     "squadv1", "train.json")))
  data["data"][1]["paragraphs"][0]["qas"][0]["answers"][0][
      "answer_start"] = 999
  _write(path, json.dumps(data))
  with pytest.raises(UserError) as e:
    _task(tmp_path, "squadv1", tokenizer).get_examples("train")
  assert "question 's1' (data[1].paragraphs[0].qas[0])" in str(e.value)
  assert "outside the context" in str(e.value)
  del data["data"][0]["paragraphs"][0]["qas"][1]["question"]
  _write(path, json.dumps(data))
  with pytest.raises(UserError) as e:
    _task(tmp_path, "squadv1", tokenizer).get_examples("train")
  assert "data[0].paragraphs[0].qas[1]" in str(e.value)
  assert "'question' must be a string" in str(e.value)


def test_unanswerable_question_in_squad_v1_is_an_error(tmp_path, tokenizer):
  _data_dir(tmp_path, "squadv1")
  src = os.path.join(ff.FIXTURE_DIR, "finetuning_data", "squadv2",
                     "train.json")
  shutil.copy(src, str(tmp_path / "finetuning_data" / "squadv1" /
                       "train.json"))
  with pytest.raises(UserError) as e:
    _task(tmp_path, "squadv1", tokenizer).get_examples("train")
  assert "question 'a4'" in str(e.value) and "squadv2" in str(e.value)


def test_unknown_task_lists_valid_tasks(tmp_path):
  config = ff.tiny_config(model_dir=tmp_path, task_names=["sst", "sst2"])
  with pytest.raises(UserError) as e:
    runner.run_finetuning(config)
  message = str(e.value)
  assert "unknown task 'sst2'" in message
  for name in ("cola", "mnli", "sst", "sts", "squadv1", "squadv2", "chunk",
               "ner", "pos"):
    assert name in message


def test_cli_exits_2_with_the_message(tmp_path, capsys):
  argv = ["--data-dir", ff.FIXTURE_DIR, "--model-name", "m", "--hparams",
          json.dumps(ff.tiny_hparams(tmp_path, task_names=["nope"]))]
  with pytest.raises(SystemExit) as e:
    run_finetuning.run_main(run_finetuning.main, argv)
  assert e.value.code == 2
  assert "error: unknown task 'nope'" in capsys.readouterr().err


def test_missing_pretrained_checkpoint_explains_random_init(tmp_path):
  config = ff.tiny_config(model_dir=tmp_path / "m", init_checkpoint=None)
  with pytest.raises(UserError) as e:
    runner.run_finetuning(config)
  assert str(tmp_path / "m" / "checkpoints") in str(e.value)
  assert '"none"' in str(e.value)


def test_missing_vocabulary(tmp_path):
  config = ff.tiny_config(vocab_file=str(tmp_path / "vocab.txt"))
  with pytest.raises(UserError) as e:
    ff.build_tokenizer(config)
  assert str(tmp_path / "vocab.txt") in str(e.value)
