"""Reading and checking a study config (its keys: studies/plan.py).

`load_study` reads the JSON and refuses a bad key or value with one
UserError naming the file and the key; `check_hparams` builds every run's
config before anything runs, so that a bad hparam names its run instead of
failing an hour in.
"""

import json
import os
import re

import configure
from interop import convert
from studies import corpus as corpus_lib
from studies import plan as plan_lib
from studies import released
from util import io_utils
from util.errors import UserError
from util.hparams import unknown_key_error

_TOP_KEYS = ("name", "work_dir", "data", "start", "pretraining",
             "finetuning", "budget_hours", "description", "notes", "report",
             "results", "archive")
_DATA_KEYS = ("corpus_dir", "corpus_texts", "corpus_exclude", "vocab_size",
              "max_seq_length", "heldout_fraction", "num_shards")
_START_KEYS = ("name", "source")
_PRETRAIN_KEYS = ("hparams", "regimes", "variants", "baseline", "seeds")
_FINETUNE_KEYS = ("hparams", "seeds", "random_init", "tasks",
                  "trials_per_pretrained_model")
_TASK_KEYS = ("name", "type", "source", "text_column", "label_column",
              "train_subset", "hparams", "rows")


def _check_keys(where, value, allowed, required=()):
  if not isinstance(value, dict):
    raise UserError("%s must be a JSON object, got %s." % (
        where, type(value).__name__))
  for key in value if allowed is not None else ():
    if key not in allowed:
      raise UserError("%s: %s" % (where, unknown_key_error(key, allowed,
                                                            what="key")))
  for key in required:
    if key not in value:
      raise UserError("%s: key %r is required." % (where, key))


def load_study(path):
  """The checked study config (a dict) of a JSON file; UserError naming the
  file and key otherwise."""
  if not os.path.isfile(path):
    raise UserError("study config %s not found." % path)
  try:
    study = json.loads(io_utils.read_text(path))
  except ValueError as e:
    raise UserError("%s is not valid JSON: %s" % (path, e))
  _check_keys(path, study, _TOP_KEYS, ("name", "work_dir", "pretraining"))
  study.setdefault("data", {})
  _check_keys(path + ": data", study["data"], _DATA_KEYS)
  _check_start(path, study)
  pre = study["pretraining"]
  _check_keys(path + ": pretraining", pre, _PRETRAIN_KEYS,
              ("variants", "seeds"))
  _check_seeds(path + ": pretraining.seeds", pre["seeds"])
  if pre.get("baseline", "electra") not in pre["variants"]:
    raise UserError("%s: pretraining.baseline %r is not one of the "
                    "variants (%s)." % (path, pre.get("baseline", "electra"),
                                        ", ".join(pre["variants"])))
  fine = study.get("finetuning", {})
  _check_keys(path + ": finetuning", fine, _FINETUNE_KEYS)
  for i, task in enumerate(fine.get("tasks", [])):
    where = "%s: finetuning.tasks[%d]" % (path, i)
    _check_keys(where, task, _TASK_KEYS,
                ("name", "type", "source", "text_column", "label_column"))
    if not os.path.exists(plan_lib.repo_path(task["source"])):
      raise UserError("%s: source %s does not exist." % (where,
                                                          task["source"]))
  _check_regimes(path, study)
  _check_finetuning_seeds(path, fine)
  _check_task_rows(path, study)
  _check_corpus_dir(path, study)
  for key in ("notes", "report", "results", "archive"):
    if key in study and not isinstance(study[key], str):
      raise UserError("%s: %s must be a path, got %r." % (path, key,
                                                         study[key]))
  if "archive" in study and not os.path.relpath(
      plan_lib.repo_path(study["archive"]),
      plan_lib.work_dir(study)).startswith(".."):
    raise UserError("%s: archive %s is inside work_dir: it must outlive it "
                    "(a directory in the repository)." % (path,
                                                           study["archive"]))
  if "notes" in study and not os.path.isfile(
      plan_lib.repo_path(study["notes"])):
    raise UserError("%s: notes %s not found." % (path, study["notes"]))
  study["path"] = path
  return study


def _check_start(path, study):
  """The released start: a model name and a folder it can be built from."""
  if "start" not in study:
    return
  where = path + ": start"
  _check_keys(where, study["start"], _START_KEYS, _START_KEYS)
  name = study["start"]["name"]
  if (not isinstance(name, str) or not re.match(r"^[A-Za-z0-9_.-]+$", name)
      or name == plan_lib.RANDOM_INIT):
    raise UserError("%s: name %r must be a model name (letters, digits, "
                    "'_', '.', '-') other than %r." % (
                        where, name, plan_lib.RANDOM_INIT))
  if not isinstance(study["start"]["source"], str):
    raise UserError("%s: source must be a path, got %r." % (
        where, study["start"]["source"]))
  released.check_folder(where + ".source", plan_lib.start_source(study))
  if "vocab_size" in study["data"]:
    raise UserError("%s: data.vocab_size: the study's vocabulary is the "
                    "start's vocab.txt; drop vocab_size." % path)


def _check_corpus_dir(path, study):
  """data.corpus_dir (a directory) or data.corpus_texts (studies/corpus.py),
  needed for the vocabulary (unless a released start gives it) and for a
  regime without a corpus_task."""
  corpus_lib.check(path, study["data"])
  corpus = study["data"].get("corpus_dir")
  if corpus is None and study["data"].get("corpus_texts"):
    return
  if corpus is None:
    if "start" not in study:
      raise UserError("%s: data: key 'corpus_dir' or 'corpus_texts' is "
                      "required (the study's vocabulary is built from it)."
                      % path)
    plain = [r for r, s in plan_lib.regimes(study).items()
             if not s.get("corpus_task")]
    if plain:
      raise UserError("%s: data: key 'corpus_dir' is required: regime %r "
                      "has no corpus_task." % (path, plain[0]))
  elif not os.path.isdir(plan_lib.repo_path(corpus)):
    raise UserError("%s: data.corpus_dir %s is not a directory." % (
        path, corpus))


def _check_seeds(where, seeds):
  if (not isinstance(seeds, list) or not seeds
      or not all(isinstance(s, int) and not isinstance(s, bool)
                 for s in seeds)):
    raise UserError("%s must be a non-empty list of integers, got %r." % (
        where, seeds))


def _check_finetuning_seeds(path, fine):
  seeds = fine.get("seeds", [1])
  _check_seeds(path + ": finetuning.seeds", seeds)
  trials = fine.get("trials_per_pretrained_model", len(seeds))
  if (not isinstance(trials, int) or isinstance(trials, bool)
      or not 1 <= trials <= len(seeds)):
    raise UserError("%s: finetuning.trials_per_pretrained_model must be an "
                    "integer from 1 to len(finetuning.seeds) = %d, got %r."
                    % (path, len(seeds), trials))


def _check_task_rows(path, study):
  """A task's `rows` name rows of the study."""
  known = list(dict.fromkeys(
      row for _, row, _ in plan_lib.downstream_sources(study)))
  for i, task in enumerate(study.get("finetuning", {}).get("tasks", [])):
    rows = task.get("rows")
    if rows is None:
      continue
    where = "%s: finetuning.tasks[%d].rows" % (path, i)
    if not isinstance(rows, list) or not rows:
      raise UserError("%s must be a non-empty list of row names (%s)." % (
          where, ", ".join(known)))
    for row in rows:
      if row not in known:
        raise UserError("%s: %r is not a row of the study (%s)." % (
            where, row, ", ".join(known)))


def _check_regimes(path, study):
  pre = study["pretraining"]
  tasks = [t["name"] for t in study.get("finetuning", {}).get("tasks", [])]
  earlier = [plan_lib.start_name(study)] if "start" in study else []
  for regime, settings in (pre.get("regimes") or {}).items():
    where = "%s: pretraining.regimes.%s" % (path, regime)
    _check_keys(where, settings, None)
    source = settings.get("init_from")
    if source is not None and source not in earlier:
      what = "a model of an earlier regime" + (
          " or the start" if "start" in study else "")
      raise UserError("%s: init_from %r is not %s (%s)." % (
          where, source, what, ", ".join(earlier) or "none"))
    task = settings.get("corpus_task")
    if task is not None and task not in tasks:
      raise UserError("%s: corpus_task %r is not one of finetuning.tasks "
                      "(%s)." % (where, task, ", ".join(tasks) or "none"))
    earlier += ["%s-%s-s%d" % (regime, variant, seed)
                for variant in pre["variants"] for seed in pre["seeds"]]


def check_hparams(study):
  """Builds every run's config before anything runs, with the sizes a
  Hugging Face init_checkpoint gives (as the scripts take them): a bad
  hparam in the study is a UserError naming the run."""
  for run in plan_lib.plan(study):
    if run.kind == "export":
      continue
    hparams = json.loads(run.argv[run.argv.index("--hparams") + 1])
    config_class = (configure.PretrainingConfig if run.kind == "pretrain"
                    else configure.FinetuningConfig)
    try:
      hparams = convert.with_source_hparams(hparams, config_class.FIELDS)
      config_class(run.model, plan_lib.data_dir(study), **hparams)
    except UserError as e:
      raise UserError("%s: run %r: %s" % (study["path"], run.id, e))
