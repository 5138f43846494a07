"""A study's config and the runs it asks for.

A study config (`studies/configs/<name>.json`; studies/config.py reads and
checks it) names the data, the pre-training regimes and variants, the seeds,
and the downstream tasks:

  {
    "name": "cpu_default",
    "work_dir": "runs/study_cpu",          # relative to the repository
    "data": {"corpus_dir": "../shared/data/corpus", "vocab_size": 8000,
             "max_seq_length": 128, "heldout_fraction": 0.05,
             "num_shards": 4},
    "start": {"name": "released",          # optional: see below
              "source": "../shared/data/models/all-minilm-l6-v2"},
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
      "trials_per_pretrained_model": 1,    # optional: seeds[:1] each
      "tasks": [{"name": "sst", "type": "classification",
                 "source": "../shared/data/tasks/movie-snippets",
                 "text_column": "sentence", "label_column": "label",
                 "train_subset": null,      # or N training examples
                 "rows": ["released", "continued/electra"],  # or all
                 "hparams": {...}},         # this task's, over hparams
                ...]},
    "budget_hours": 2.5,
    "notes": "studies/configs/cpu_default.md",  # put into RESULTS.md
    "report": "docs/RESULTS.md",            # study.py's default --output
    "results": "results/cpu_default",       # figures, summary.json
    "archive": "results/cpu_default/runs"   # optional: see below
  }

A regime's `init_from` names a model of an earlier regime: the study
exports it as Hugging Face folders (export_model.py --format hf) and the
regime's runs start from them through the interop loader (init_checkpoint).
Its `corpus_task` names a downstream task whose training text (labels
dropped, the whole split even when the task takes a subset) becomes the
regime's pre-training corpus, built with the study's vocabulary under
`<work_dir>/data/regimes/<regime>/`: continued pre-training on the target
domain's unlabelled text. Every other regime key is a pre-training hparam.

A released start (`start`) is a Hugging Face BERT or ELECTRA folder
outside the study, with its own vocab.txt (studies/released.py). With one:
  * the study's vocabulary is the source's vocab.txt, copied to
    `<work_dir>/data/vocab.txt` (so `data.vocab_size` is refused), and
    every TFRecord is built with it;
  * a regime's `init_from` may name the start: its runs load the folder
    directly (no export). The study needs no scratch regime, and
    `data.corpus_dir` only for a regime without a `corpus_task`;
  * downstream gains a row named after the start (the folder fine-tuned
    directly), which every pre-trained row and random initialisation are
    compared with; random initialisation takes the folder's shape;
  * the fine-tunings of the start and of random initialisation run first
    (they need no pre-training), task by task, then the pre-trainings.

Runs are ordered so that what reads a model follows it: each pre-training,
then its export (if a regime starts from it), then its fine-tunings
(`plan`).

A task's `source` is a directory with `train.tsv` and `dev.tsv`, or one
`.tsv` file that the study splits 80/10/10 with a fixed seed; the study
writes it as `<work_dir>/data/finetuning_data/<name>/` with a task.json.
Every run is one `run_pretraining.py`, `export_model.py` or
`run_finetuning.py` call, done when its results file exists (so a study
resumes where it stopped).

The report (`report`, a Markdown file, in docs/ for the studies of this
repository) links its figures, which go with its summary.json to the
directory `results` (relative to the repository; default
`results/<name>`: `results_dir`), whatever report is written. An `archive`
(a directory in the repository, e.g. `results/<name>/runs`) keeps the
small result files of every finished run, so that a study outlives its
work_dir: a session on a fresh machine restores them and runs only the
rest (studies/archive.py).
"""

import collections
import itertools
import json
import os
import re

import configure
from interop import convert
from studies import released

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Regime keys that are the study's own, not run_pretraining.py hparams.
_REGIME_KEYS = ("init_from", "corpus_task")
# The repository's directory of study outputs (figures, summaries, archives),
# one subdirectory a study; the reports that read them are in docs/.
RESULTS = "results"
# Random initialisation: a downstream row every pre-trained row is compared
# with.
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


def repo_path(path):
  """`path` absolute and normalised; a relative one is taken from the
  repository root ("../runs/x" is beside the repository)."""
  return os.path.normpath(os.path.join(REPO, path))


def regimes(study):
  return study["pretraining"].get("regimes") or {"scratch": {}}


def start_name(study):
  """The released start's name (its downstream row), or None."""
  return study["start"]["name"] if "start" in study else None


def start_source(study):
  """The released start's folder, as an absolute path."""
  return repo_path(study["start"]["source"])


def export_dir(study, model):
  """Where a model that a regime starts from is exported (HF folders)."""
  return os.path.join(work_dir(study), "exports", model)


def regime_data_dir(study, regime):
  """The TFRecords (and corpus) of a regime with a `corpus_task`."""
  return os.path.join(data_dir(study), "regimes", regime)


def work_dir(study):
  return repo_path(study["work_dir"])


def results_dir(study):
  """Where the study's figures and summary.json go (absolute): its config's
  "results", else results/<name>, relative to the repository."""
  return repo_path(study.get("results", os.path.join(RESULTS, study["name"])))


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


def from_start(study, regime):
  """Whether the models of `regime` descend from the released start: its
  `init_from` is the start, or a model of a regime that descends from it."""
  source = regimes(study)[regime].get("init_from")
  if not source or "start" not in study:
    return False
  if source == start_name(study):
    return True
  return from_start(study, next(r for name, r, _, _ in
                                pretrained_models(study) if name == source))


def pretraining_hparams(study, regime, variant, seed):
  pre = study["pretraining"]
  hparams = dict(pre.get("hparams", {}))
  settings = regimes(study)[regime]
  hparams.update((k, v) for k, v in settings.items() if k not in _REGIME_KEYS)
  source = settings.get("init_from")
  if source:
    # The start's folder loads as it is; a study's own model is exported.
    hparams["init_checkpoint"] = (
        start_source(study) if source == start_name(study) else
        export_dir(study, source))
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


def regime_max_seq_length(study, regime):
  """The sequence length of a regime's runs (its TFRecords are built so)."""
  variant, seed = baseline(study), study["pretraining"]["seeds"][0]
  return pretraining_hparams(study, regime, variant, seed)["max_seq_length"]


# Pre-training hparams that fix the encoder fine-tuning loads: fine-tuning
# takes them unless its own hparams set them.
_ENCODER_HPARAMS = ("model_size", "model_hparam_overrides", "embedding_size",
                    "do_lower_case", "relative_position",
                    "relative_num_buckets", "relative_max_distance")


def downstream_sources(study):
  """[(model, row, init_checkpoint)] of every downstream row's models, in
  the order they are fine-tuned: the start's, each pre-trained model's
  (row "regime/variant"), random initialisation's."""
  models = os.path.join(data_dir(study), "models")
  sources = [(start_name(study), start_name(study), start_source(study))
             ] if "start" in study else []
  sources += [(name, "%s/%s" % (regime, variant),
               os.path.join(models, name, "checkpoints"))
              for name, regime, variant, _ in pretrained_models(study)]
  if study.get("finetuning", {}).get("random_init", True):
    sources.append((RANDOM_INIT, RANDOM_INIT, "none"))
  return sources


def task_rows(study, task):
  """The downstream rows `task` is fine-tuned for: its `rows`, or all."""
  return task.get("rows") or list(dict.fromkeys(
      row for _, row, _ in downstream_sources(study)))


def finetuning_seeds(study, model):
  """The fine-tuning seeds of `model`: finetuning.seeds, or for a
  pre-trained model its first `trials_per_pretrained_model` of them (each
  pre-trained model is one unit of its row, so its trials only average out
  fine-tuning noise; the start and random initialisation have one model,
  whose trials are the row's units)."""
  fine = study.get("finetuning", {})
  seeds = fine.get("seeds", [1])
  if model in (start_name(study), RANDOM_INIT):
    return seeds
  return seeds[:fine.get("trials_per_pretrained_model", len(seeds))]


def finetuning_hparams(study, task, model, init_checkpoint):
  """The hparams of fine-tuning `model` (a pre-trained model, the start or
  random_init) on `task` from `init_checkpoint`. A model pre-trained here or
  the start gives its own sizes (run_finetuning.py adopts them); random
  initialisation of a study with a released start takes the start's
  shape."""
  fine = study.get("finetuning", {})
  seeds = finetuning_seeds(study, model)
  pre = study["pretraining"].get("hparams", {})
  hparams = {k: pre[k] for k in _ENCODER_HPARAMS if k in pre}
  if model == RANDOM_INIT and "start" in study:
    hparams = convert.merge_hparams(
        hparams, released.shape_hparams(start_source(study)))
  for layer in (fine.get("hparams", {}), task.get("hparams", {})):
    hparams = convert.merge_hparams(hparams, layer)
  hparams.update(task_names=[task["name"]], seed=seeds[0],
                 num_trials=len(seeds), init_checkpoint=init_checkpoint)
  return hparams


def _export_run(study, source, pretrain_id):
  """The run that exports `source` (a study's own model that a regime
  starts from) as Hugging Face folders."""
  output = export_dir(study, source)
  return Run(
      "export %s" % source, "export",
      ["export_model.py", "--data-dir", data_dir(study), "--model-name",
       source, "--format", "hf", "--output", output, "--overwrite"],
      os.path.join(output, "discriminator", "config.json"), source, 0, 0,
      (pretrain_id,))


def _pretraining_runs(study):
  """The pre-training runs, each model that a regime starts from (a study's
  own; the released start loads as it is) followed by its export."""
  data = data_dir(study)
  sources = {s.get("init_from") for s in regimes(study).values()} - {
      None, start_name(study)}
  runs = []
  for name, regime, variant, seed in pretrained_models(study):
    source = regimes(study)[regime].get("init_from")
    hparams = pretraining_hparams(study, regime, variant, seed)
    runs.append(Run(
        "pretrain %s/%s/seed%d" % (regime, variant, seed), "pretrain",
        ["run_pretraining.py", "--data-dir", data, "--model-name", name,
         "--hparams", json.dumps(hparams, sort_keys=True)],
        os.path.join(data, "models", name, "results", "pretrain_eval.json"),
        name, hparams.get(
            "num_train_steps",
            configure.PRETRAIN_FIELDS["num_train_steps"].default), 0,
        ("export %s" % source,) if source in sources else ()))
    if name in sources:
      runs.append(_export_run(study, name, runs[-1].id))
  return runs


def _finetuning_runs(study, pretrain_ids):
  """[[fine-tuning runs of one task]] in task order, over the task's rows
  (`downstream_sources` order)."""
  data = data_dir(study)
  by_task = []
  for task in study.get("finetuning", {}).get("tasks", []):
    rows = task_rows(study, task)
    by_task.append([])
    for model, row, init in downstream_sources(study):
      if row not in rows:
        continue
      # Fine-tuning writes under the model's own directory, beside its
      # pre-training results.
      hparams = finetuning_hparams(study, task, model, init)
      by_task[-1].append(Run(
          "finetune %s from %s" % (task["name"], model), "finetune",
          ["run_finetuning.py", "--data-dir", data, "--model-name", model,
           "--hparams", json.dumps(hparams, sort_keys=True)],
          os.path.join(data, "models", model, "results",
                       "%s_results.json" % task["name"]), model, 0,
          hparams["num_trials"],
          (pretrain_ids[model],) if model in pretrain_ids else ()))
  return by_task


def plan(study):
  """Every `Run` of the study, in order: each pre-training followed by what
  reads its model (its export, then its fine-tunings, task by task), so a
  model is used while it is on disk and a session that stops between
  runs leaves at most one pre-training whose dependants are not done (the
  archive keeps results, not models: studies/archive.py). With a released
  start, the fine-tunings that need no pre-training (the start's and random
  initialisation's on every task, the study's reference points) run first,
  the first task's first; without one, random initialisation's run last."""
  pretraining = _pretraining_runs(study)
  finetuning = [r for runs in _finetuning_runs(
      study, {r.model: r.id for r in pretraining if r.kind == "pretrain"})
                for r in runs]
  free = [r for r in finetuning if not r.needs]
  reading = {}  # pre-training id -> the fine-tunings of its model
  for run in finetuning:
    if run.needs:
      reading.setdefault(run.needs[0], []).append(run)
  exported = {r.needs[0] for r in pretraining if r.kind == "export"}
  chained = []
  for run in pretraining:
    chained.append(run)
    if run.kind == "export" or run.id not in exported:
      chained += reading.get(run.needs[0] if run.kind == "export" else
                             run.id, [])
  return (free if "start" in study else []) + chained + (
      [] if "start" in study else free)


def file_name(run):
  """A file name for `run` (its claim, its log, its archive entry)."""
  return re.sub(r"[^A-Za-z0-9_.-]+", "_", run.id)
