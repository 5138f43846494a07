"""A study's archive: the small files of each finished run, kept in the
repository, so that a study outlives its work_dir.

A study config's "archive" (a directory, relative to the repository: e.g.
"results/released_minilm/runs") makes the runner copy each run, as soon as
it finishes, to `<archive>/<run>/` (`plan.file_name`): its files at their
paths under the work_dir, and a run.json with the run's id and kind, its
settings (its command line, the work_dir and the repository written as
$WORK_DIR and $REPO), the files, and its wall time and span (timings.json,
spans.json). The files are what the report reads and what defines the
run's results (`result_files`):
  * a pre-training: its config.json and results/pretrain_eval.json (final
    metrics and the generator's histogram), pretrain_eval.txt and
    pretrain_eval_history.json (the curves);
  * a fine-tuning: results/<task>_results.json and .txt (every trial) and
    finetuning_models/<task>/config.json;
  * an export: its discriminator/config.json (the run's done file);
never checkpoints, exported weights, figures, TFRecords or logs: about
10 kB a pre-training and a few kB a fine-tuning.

A run that is not done in the work_dir but archived with the same
settings is copied back (`restore`) where the runner and the report expect
it, by the runner on start (studies/runner.py `restore`). Commit the
archive after a session (`git add <archive>`): a later session on a fresh
machine then runs only what is left.
"""

import datetime
import os
import shutil

from studies import plan as plan_lib
from util import io_utils
from util.io_utils import write_bytes_atomic
from util.io_utils import write_json_atomic

# Each archived run's description, written last: an entry without it is
# incomplete and ignored.
MANIFEST = "run.json"


def directory(study):
  """The study's archive directory (absolute), or None without one."""
  return plan_lib.repo_path(study["archive"]) if study.get("archive") else None


def run_dir(study, run):
  return os.path.join(directory(study), plan_lib.file_name(run))


def settings(study, run):
  """`run`'s command line with the work_dir written as $WORK_DIR and the
  repository as $REPO (its parent as $REPO/..): what an archived run must
  match to be restored, wherever the checkout is."""
  argv = []
  for arg in run.argv:
    for path, name in ((plan_lib.work_dir(study), "$WORK_DIR"),
                       (plan_lib.REPO, "$REPO"),
                       (os.path.dirname(plan_lib.REPO), "$REPO/..")):
      arg = arg.replace(path + os.sep, name + os.sep).replace(
          path + '"', name + '"')
      arg = name if arg == path else arg
    argv.append(arg)
  return argv


def result_files(study, run):
  """The files of `run` the archive keeps, relative to the work_dir, those
  that exist; its done file last (restored last, it marks the run done)."""
  model_dir = os.path.join(plan_lib.data_dir(study), "models", run.model)
  if run.kind == "pretrain":
    results = os.path.join(model_dir, "results")
    extra = [os.path.join(model_dir, "config.json"),
             os.path.join(results, "pretrain_eval.txt"),
             os.path.join(results, "pretrain_eval_history.json")]
  elif run.kind == "finetune":
    task = os.path.basename(run.done_file)[:-len("_results.json")]
    extra = [os.path.splitext(run.done_file)[0] + ".txt",
             os.path.join(model_dir, "finetuning_models", task,
                          "config.json")]
  else:
    extra = []
  work = plan_lib.work_dir(study)
  return [os.path.relpath(path, work) for path in extra
          if os.path.isfile(path)] + [os.path.relpath(run.done_file, work)]


def save(study, run, timing=None):
  """Archives finished `run` (replacing an earlier entry), with `timing`
  (seconds, [start, end]) if known; returns its entry's directory."""
  target = run_dir(study, run)
  if os.path.isdir(target):
    shutil.rmtree(target)
  files = result_files(study, run)
  work = plan_lib.work_dir(study)
  for path in files:
    write_bytes_atomic(os.path.join(target, path),
                       io_utils.read_bytes(os.path.join(work, path)))
  manifest = dict(id=run.id, kind=run.kind, settings=settings(study, run),
                  files=files, archived=datetime.datetime.now(
                      datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
  if timing:
    manifest.update(seconds=timing[0], span=timing[1])
  write_json_atomic(os.path.join(target, MANIFEST), manifest)
  return target


def load(study, run):
  """(manifest, why not) of `run`'s archive entry: the manifest when the
  entry is complete and has `run`'s settings, else None and a reason (None
  when there is no entry)."""
  if not directory(study):
    return None, None
  path = os.path.join(run_dir(study, run), MANIFEST)
  if not os.path.isfile(path):
    return None, None
  manifest = io_utils.read_json(path)
  if manifest.get("id") != run.id or manifest.get("settings") != settings(
      study, run):
    return None, "archived with other settings"
  if not all(os.path.isfile(os.path.join(run_dir(study, run), f))
             for f in manifest["files"]):
    return None, "its archive entry lacks files"
  return manifest, None


def copy_back(study, run, manifest):
  """Copies `run`'s archived files into the work_dir, the done file last."""
  work = plan_lib.work_dir(study)
  for path in manifest["files"]:
    write_bytes_atomic(os.path.join(work, path), io_utils.read_bytes(
        os.path.join(run_dir(study, run), path)))


def has_model(study, run):
  """Whether the model a run makes for others is in the work_dir: a
  pre-training's checkpoint of its last step, an export's discriminator
  weights. A fine-tuning makes none that another run reads."""
  if run.kind == "pretrain":
    return os.path.isfile(os.path.join(
        plan_lib.data_dir(study), "models", run.model, "checkpoints",
        "ckpt-%d.index" % run.steps))
  if run.kind == "export":
    return os.path.isfile(os.path.join(os.path.dirname(run.done_file),
                                       "model.safetensors"))
  return True


def size(study, run):
  """Bytes of `run`'s archive entry (0 without one)."""
  top = run_dir(study, run)
  return sum(os.path.getsize(os.path.join(root, name))
             for root, _, names in os.walk(top) for name in names)
