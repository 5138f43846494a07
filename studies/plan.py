"""A study's config and the runs it asks for.

A study config (`study/<name>.json`) names the data, the pre-training
regimes and variants, the seeds, and the downstream tasks:

  {
    "name": "cpu_default",
    "work_dir": "runs/study_cpu",          # relative to the repository
    "data": {"corpus_dir": "../shared/data/corpus", "vocab_size": 8000,
             "max_seq_length": 128, "heldout_fraction": 0.05,
             "num_shards": 4},
    "pretraining": {
      "hparams": {...},                     # every run's
      "regimes": {"scratch": {...},         # per regime, over hparams
                  "continued": {"init_from": "scratch-electra-s1",
                                "corpus_task": "sst", ...}},
      "variants": {"electra": {"sampling": "mlm"}, ...},
      "baseline": "electra",                # rows are compared with it
      "seeds": [1, 2, 3]},
    "finetuning": {
      "hparams": {...}, "seeds": [1, 2, 3], "random_init": true,
      "tasks": [{"name": "sst", "type": "classification",
                 "source": "../shared/data/tasks/movie-snippets",
                 "text_column": "sentence", "label_column": "label",
                 "train_subset": null,      # or N training examples
                 "hparams": {...}},         # this task's, over hparams
                ...]},
    "budget_hours": 2.5,
    "notes": "study/cpu_default.md"         # markdown put into RESULTS.md
  }

A regime's `init_from` names a model of an earlier regime: the study
exports it as Hugging Face folders (export_model.py --format hf) and the
regime's runs start from them through the interop loader (init_checkpoint).
Its `corpus_task` names a downstream task whose training text (labels
dropped, the whole split even when the task takes a subset) becomes the
regime's pre-training corpus, built with the study's vocabulary under
`<work_dir>/data/regimes/<regime>/`: continued pre-training on the target
domain's unlabelled text. Every other regime key is a pre-training hparam.

A task's `source` is a directory with `train.tsv` and `dev.tsv`, or one
`.tsv` file that the study splits 80/10/10 with a fixed seed; the study
writes it as `<work_dir>/data/finetuning_data/<name>/` with a task.json.
Every run is one `run_pretraining.py` or `run_finetuning.py` call, done
when its results file exists (so a study resumes where it stopped).
"""

import collections
import itertools
import json
import os

import configure
from util import io_utils
from util.errors import UserError
from util.hparams import unknown_key_error

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TOP_KEYS = ("name", "work_dir", "data", "pretraining", "finetuning",
             "budget_hours", "description", "notes")
_DATA_KEYS = ("corpus_dir", "vocab_size", "max_seq_length",
              "heldout_fraction", "num_shards")
_PRETRAIN_KEYS = ("hparams", "regimes", "variants", "baseline", "seeds")
_FINETUNE_KEYS = ("hparams", "seeds", "random_init", "tasks")
# Regime keys that are the study's own, not run_pretraining.py hparams.
_REGIME_KEYS = ("init_from", "corpus_task")
_TASK_KEYS = ("name", "type", "source", "text_column", "label_column",
              "train_subset", "hparams")
# The model every downstream row is compared with.
RANDOM_INIT = "random_init"

Run = collections.namedtuple("Run", [
    "id",        # "pretrain scratch/electra/seed1", "finetune sst ..."
    "kind",      # "pretrain", "export" or "finetune"
    "argv",      # [script, flags...], run from the repository root
    "done_file",  # its results; the run is done when they are complete
    "model",     # the model name under <work_dir>/data/models/
    "steps",     # pre-training steps (0 for fine-tuning)
    "trials",    # fine-tuning trials (0 for pre-training)
    "needs",     # ids of the runs whose output this run reads
])


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


def repo_path(path):
  return path if os.path.isabs(path) else os.path.join(REPO, path)


def load_study(path):
  """The checked study config (a dict) of a JSON file; UserError naming the
  file and key otherwise."""
  if not os.path.isfile(path):
    raise UserError("study config %s not found." % path)
  try:
    study = json.loads(io_utils.read_text(path))
  except ValueError as e:
    raise UserError("%s is not valid JSON: %s" % (path, e))
  _check_keys(path, study, _TOP_KEYS,
              ("name", "work_dir", "data", "pretraining"))
  _check_keys(path + ": data", study["data"], _DATA_KEYS, ("corpus_dir",))
  pre = study["pretraining"]
  _check_keys(path + ": pretraining", pre, _PRETRAIN_KEYS,
              ("variants", "seeds"))
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
    if not os.path.exists(repo_path(task["source"])):
      raise UserError("%s: source %s does not exist." % (where,
                                                          task["source"]))
  _check_regimes(path, study)
  if "notes" in study and not os.path.isfile(repo_path(study["notes"])):
    raise UserError("%s: notes %s not found." % (path, study["notes"]))
  corpus = repo_path(study["data"]["corpus_dir"])
  if not os.path.isdir(corpus):
    raise UserError("%s: data.corpus_dir %s is not a directory." % (
        path, study["data"]["corpus_dir"]))
  study["path"] = path
  return study


def _check_regimes(path, study):
  pre = study["pretraining"]
  tasks = [t["name"] for t in study.get("finetuning", {}).get("tasks", [])]
  earlier = []
  for regime, settings in (pre.get("regimes") or {}).items():
    where = "%s: pretraining.regimes.%s" % (path, regime)
    _check_keys(where, settings, None)
    source = settings.get("init_from")
    if source is not None and source not in earlier:
      raise UserError("%s: init_from %r is not a model of an earlier regime "
                      "(%s)." % (where, source, ", ".join(earlier) or "none"))
    task = settings.get("corpus_task")
    if task is not None and task not in tasks:
      raise UserError("%s: corpus_task %r is not one of finetuning.tasks "
                      "(%s)." % (where, task, ", ".join(tasks) or "none"))
    earlier += ["%s-%s-s%d" % (regime, variant, seed)
                for variant in pre["variants"] for seed in pre["seeds"]]


def regimes(study):
  return study["pretraining"].get("regimes") or {"scratch": {}}


def export_dir(study, model):
  """Where a model that a regime starts from is exported (HF folders)."""
  return os.path.join(work_dir(study), "exports", model)


def regime_data_dir(study, regime):
  """The TFRecords (and corpus) of a regime with a `corpus_task`."""
  return os.path.join(data_dir(study), "regimes", regime)


def work_dir(study):
  return repo_path(study["work_dir"])


def data_dir(study):
  return os.path.join(work_dir(study), "data")


def baseline(study):
  return study["pretraining"].get("baseline", "electra")


def pretrained_models(study):
  """[(model name, regime, variant, seed)] in the order they run."""
  pre = study["pretraining"]
  return [("%s-%s-s%d" % (regime, variant, seed), regime, variant, seed)
          for regime, variant, seed in itertools.product(
              regimes(study), pre["variants"], pre["seeds"])]


def pretraining_hparams(study, regime, variant, seed):
  pre = study["pretraining"]
  hparams = dict(pre.get("hparams", {}))
  settings = regimes(study)[regime]
  hparams.update((k, v) for k, v in settings.items() if k not in _REGIME_KEYS)
  if settings.get("init_from"):
    hparams["init_checkpoint"] = export_dir(study, settings["init_from"])
  if settings.get("corpus_task"):
    records = os.path.join(regime_data_dir(study, regime),
                           "pretrain_tfrecords")
    hparams.update(
        pretrain_tfrecords=os.path.join(records, "pretrain_data.tfrecord*"),
        eval_tfrecords=os.path.join(records, "heldout_data.tfrecord*"))
  hparams.update(pre["variants"][variant])
  hparams.update(seed=seed, do_eval=True)
  hparams.setdefault("max_seq_length",
                     study["data"].get("max_seq_length", 128))
  return hparams


# Pre-training hparams that fix the encoder fine-tuning loads: fine-tuning
# takes them unless its own hparams set them.
_ENCODER_HPARAMS = ("model_size", "model_hparam_overrides", "embedding_size",
                    "do_lower_case", "relative_position",
                    "relative_num_buckets", "relative_max_distance")


def finetuning_hparams(study, task, init_checkpoint):
  fine = study.get("finetuning", {})
  seeds = fine.get("seeds", [1])
  pre = study["pretraining"].get("hparams", {})
  hparams = {k: pre[k] for k in _ENCODER_HPARAMS if k in pre}
  hparams.update(fine.get("hparams", {}))
  hparams.update(task.get("hparams", {}))
  hparams.update(task_names=[task["name"]], seed=seeds[0],
                 num_trials=len(seeds), init_checkpoint=init_checkpoint)
  return hparams


def check_hparams(study):
  """Builds every run's config before anything runs: a bad hparam in the
  study is a UserError naming the run (not a failure an hour in)."""
  for run in plan(study):
    if run.kind == "export":
      continue
    hparams = json.loads(run.argv[run.argv.index("--hparams") + 1])
    config_class = (configure.PretrainingConfig if run.kind == "pretrain"
                    else configure.FinetuningConfig)
    try:
      config_class(run.model, data_dir(study), **hparams)
    except UserError as e:
      raise UserError("%s: run %r: %s" % (study["path"], run.id, e))


def plan(study):
  """Every `Run` of the study, in order: pre-training, then fine-tuning of
  each pre-trained model (and of random initialisation) on each task."""
  data = data_dir(study)
  models = os.path.join(data, "models")
  runs = []
  pretrain_ids = {}  # model name -> the id of the run that pre-trains it
  for name, regime, variant, seed in pretrained_models(study):
    source = regimes(study)[regime].get("init_from")
    if source and not any(r.kind == "export" and r.model == source
                          for r in runs):
      output = export_dir(study, source)
      runs.append(Run(
          "export %s" % source, "export",
          ["export_model.py", "--data-dir", data, "--model-name", source,
           "--format", "hf", "--output", output],
          os.path.join(output, "discriminator", "config.json"), source, 0, 0,
          (pretrain_ids[source],)))
    hparams = pretraining_hparams(study, regime, variant, seed)
    pretrain_ids[name] = "pretrain %s/%s/seed%d" % (regime, variant, seed)
    runs.append(Run(
        pretrain_ids[name], "pretrain",
        ["run_pretraining.py", "--data-dir", data, "--model-name", name,
         "--hparams", json.dumps(hparams, sort_keys=True)],
        os.path.join(models, name, "results", "pretrain_eval.json"), name,
        hparams.get("num_train_steps",
                    configure.PRETRAIN_FIELDS["num_train_steps"].default), 0,
        ("export %s" % source,) if source else ()))
  fine = study.get("finetuning", {})
  sources = [(name, os.path.join(models, name, "checkpoints"))
             for name, _, _, _ in pretrained_models(study)]
  if fine.get("random_init", True):
    sources.append((RANDOM_INIT, "none"))
  for task in fine.get("tasks", []):
    for name, init in sources:
      # Fine-tuning writes under the model's own directory, beside its
      # pre-training results.
      model = name
      hparams = finetuning_hparams(study, task, init)
      runs.append(Run(
          "finetune %s from %s" % (task["name"], name), "finetune",
          ["run_finetuning.py", "--data-dir", data, "--model-name", model,
           "--hparams", json.dumps(hparams, sort_keys=True)],
          os.path.join(models, model, "results",
                       "%s_results.json" % task["name"]), model, 0,
          hparams["num_trials"],
          (pretrain_ids[name],) if name in pretrain_ids else ()))
  return runs
