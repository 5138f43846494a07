"""Inputs at the limits: a max_seq_length too short for the task's format
is exit 2 before training; a CSV field of any size reads, as in TSV."""

import json
import os
import shutil

from finetune import readers
from tests import finetune_fixtures as ff
from tests.test_faults import assert_refused
from tests.test_faults import run


def test_a_max_seq_length_below_the_pair_format_is_exit_2(tmp_path):
  shutil.copytree(os.path.join(ff.FIXTURE_DIR, "finetuning_data", "rte"),
                  str(tmp_path / "finetuning_data" / "rte"))
  hparams = ff.tiny_hparams(tmp_path / "model", task_names=["rte"],
                            max_seq_length=2)
  code, err = run("run_finetuning.py", "--data-dir", str(tmp_path),
                  "--model-name", "m", "--hparams", json.dumps(hparams))
  assert_refused(code, err, "max_seq_length 2 is below the 5 tokens",
                 "[CLS] A [SEP] B [SEP]")
  assert not (tmp_path / "model" / "finetuning_models").exists()


def test_a_csv_field_of_a_megabyte_reads(tmp_path):
  path = tmp_path / "train.csv"
  big = "word " * 200000
  path.write_text("text,label\n\"%s\",1\nshort,0\n" % big)
  columns, rows = readers.read_csv(str(path))
  assert columns == ["text", "label"]
  assert [len(r.fields[0]) for r in rows] == [len(big), 5]
