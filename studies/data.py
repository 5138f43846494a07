"""A study's data directory: vocabulary, TFRecords and downstream tasks.

`prepare` builds what is missing under `<work_dir>/data/`, with the
project's own tools (build_vocab.py, build_pretraining_dataset.py): the
vocabulary (or a copy of the released start's), the TFRecords of
`data.corpus_dir` when a regime reads them, each downstream task as
`finetuning_data/<name>/` with a task.json, and a regime's `corpus_task`
corpus (the task's training text) and its TFRecords under
`regimes/<regime>/`. Re-running it skips what exists.
"""

import os
import random
import subprocess
import sys

from finetune import task_builder
from studies import corpus as corpus_lib
from studies import plan as plan_lib
from studies import released
from util import io_utils
from util.errors import UserError
from util.io_utils import write_json_atomic
from util.io_utils import write_text_atomic

# A single-file task source is split into train/dev/test with this seed.
SPLIT_SEED = 12345
SPLIT_FRACTIONS = (0.8, 0.1)


def _run(argv, log_path):
  """Runs a project script; UserError pointing at its log if it fails."""
  with open(log_path, "w") as log:
    proc = subprocess.run([sys.executable] + argv, cwd=plan_lib.REPO,
                          stdout=log, stderr=subprocess.STDOUT,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  if proc.returncode:
    raise UserError("%s exited with %d; see %s." % (argv[0], proc.returncode,
                                                    log_path))


def _write_tsv(path, header, rows):
  write_text_atomic(path, "".join("\t".join(r) + "\n"
                                  for r in [header] + rows))


def _task_splits(task, subset=True):
  """{split: (header, rows)} of a task's source, subset applied to train
  unless `subset` is False."""
  source = plan_lib.repo_path(task["source"])
  if os.path.isdir(source):
    splits = {}
    for split in ("train", "dev"):
      path = os.path.join(source, split + ".tsv")
      if not os.path.isfile(path):
        raise UserError("task %r: %s not found." % (task["name"], path))
      splits[split] = corpus_lib.read_tsv(path)
  else:
    header, rows = corpus_lib.read_tsv(source)
    rows = list(rows)
    random.Random(SPLIT_SEED).shuffle(rows)
    n_train = int(SPLIT_FRACTIONS[0] * len(rows))
    n_dev = int(SPLIT_FRACTIONS[1] * len(rows))
    splits = dict(train=(header, rows[:n_train]),
                  dev=(header, rows[n_train:n_train + n_dev]))
  subset = task.get("train_subset") if subset else None
  if subset:
    header, rows = splits["train"]
    rows = list(rows)
    random.Random(SPLIT_SEED).shuffle(rows)
    splits["train"] = (header, rows[:subset])
  return splits


def write_task(task, data_dir):
  """`<data_dir>/finetuning_data/<name>/` with train.tsv, dev.tsv and a
  task.json, which a built-in task (e.g. `sst`, whose reader takes the
  files as they are) does without."""
  directory = os.path.join(data_dir, "finetuning_data", task["name"])
  builtin = task["name"] in task_builder.TASKS
  done = "dev.tsv" if builtin else "task.json"
  if os.path.isfile(os.path.join(directory, done)):
    return directory
  for split, (header, rows) in _task_splits(task).items():
    for column in (task["text_column"], task["label_column"]):
      if column not in header:
        raise UserError("task %r: %s has no column %r (columns: %s)." % (
            task["name"], task["source"], column, ", ".join(header)))
    _write_tsv(os.path.join(directory, split + ".tsv"), header, rows)
  if builtin:
    return directory
  write_json_atomic(os.path.join(directory, "task.json"), dict(
      type=task["type"], format="tsv", text_columns=[task["text_column"]],
      label_column=task["label_column"],
      description="written by study.py from %s" % task["source"]))
  return directory


def write_task_corpus(task, directory):
  """The text column of a task's whole training split as a corpus file
  (`corpus.write_documents`); returns its directory."""
  path = os.path.join(directory, "%s.txt" % task["name"])
  if not os.path.isfile(path):
    header, rows = _task_splits(task, subset=False)["train"]
    column = header.index(task["text_column"])
    corpus_lib.write_documents(
        path, [row[column].strip() for row in rows if row[column].strip()])
  return directory


def _build_records(corpus, vocab, records, d, max_seq_length, log_path, log,
                   what):
  """Builds TFRecords of `corpus` unless `records` holds them already."""
  if not os.path.isfile(os.path.join(records, "manifest.json")):
    log("data: building pre-training TFRecords of %s" % what)
    _run(["build_pretraining_dataset.py", "--corpus-dir", corpus,
          "--vocab-file", vocab, "--output-dir", records,
          "--max-seq-length", str(max_seq_length),
          "--num-shards", str(d.get("num_shards", 4)),
          "--heldout-fraction", str(d.get("heldout_fraction", 0.05)),
          "--overwrite"], log_path)


def _vocabulary(study, data, logs, log):
  """The study's vocab.txt: the released start's (copied), or one built
  from the study's corpus (studies/corpus.py)."""
  vocab = os.path.join(data, "vocab.txt")
  if "start" in study:
    if not os.path.isfile(vocab):
      log("data: the vocabulary of %s" % study["start"]["source"])
    return released.copy_vocab(plan_lib.start_source(study), data)
  d = study["data"]
  if not os.path.isfile(vocab):
    log("data: building a %d-token vocabulary from %s" % (
        d.get("vocab_size", 8000), corpus_lib.describe(study)))
    io_utils.make_dirs(data)
    _run(["build_vocab.py", "--corpus-dir",
          corpus_lib.prepare(study, log), "--output", vocab,
          "--vocab-size", str(d.get("vocab_size", 8000))],
         os.path.join(logs, "build_vocab.log"))
  return vocab


def prepare(study, log=print):
  """Builds the study's data directory (what is missing); returns it."""
  data = plan_lib.data_dir(study)
  logs = os.path.join(plan_lib.work_dir(study), "logs")
  io_utils.make_dirs(logs)
  d = study["data"]
  vocab = _vocabulary(study, data, logs, log)
  regimes = plan_lib.regimes(study)
  plain = [r for r, s in regimes.items() if not s.get("corpus_task")]
  if plain:  # Regimes that pre-train on the study's corpus.
    _build_records(corpus_lib.prepare(study, log), vocab,
                   os.path.join(data, "pretrain_tfrecords"), d,
                   plan_lib.regime_max_seq_length(study, plain[0]),
                   os.path.join(logs, "build_pretraining_dataset.log"), log,
                   corpus_lib.describe(study))
  tasks = {t["name"]: t for t in study.get("finetuning", {}).get("tasks", [])}
  for task in tasks.values():
    write_task(task, data)
  for regime, settings in regimes.items():
    if settings.get("corpus_task"):
      directory = plan_lib.regime_data_dir(study, regime)
      corpus = write_task_corpus(tasks[settings["corpus_task"]],
                                 os.path.join(directory, "corpus"))
      _build_records(corpus, vocab,
                     os.path.join(directory, "pretrain_tfrecords"), d,
                     plan_lib.regime_max_seq_length(study, regime),
                     os.path.join(logs, "build_%s_dataset.log" % regime), log,
                     "regime %s: the training text of task %s" % (
                         regime, settings["corpus_task"]))
  return data
