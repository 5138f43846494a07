"""Runs a study's grid in order, skipping what is done, with an ETA.

Each run is a child process of the project's own entry scripts, logging to
`<work_dir>/logs/<run>.log`; its wall time goes to `<work_dir>/timings.json`
(its start and end to `spans.json`), from which the ETA of the rest is
estimated (pre-training per step, fine-tuning per task). A failed run
stops the study with its log's path; running the study again resumes:
finished runs are skipped, and an interrupted pre-training resumes from
its last checkpoint.

Several workers (`study.py` started more than once on the same config, on
one machine) share the grid: a worker claims a run before starting it
(`<work_dir>/claims/<run>.claim`, created exclusively, holding its pid),
skips runs that are done or claimed by a live worker, and takes over the
claim of a worker that died. A run starts only once the runs it reads
from (`Run.needs`: the pre-training a fine-tuning starts from, the export a
continued pre-training loads) are done, so a worker never reads a model
that another worker is still making.
"""

import fcntl
import functools
import json
import os
import re
import socket
import subprocess
import sys
import time

import configure
from studies import plan as plan_lib
from util import io_utils
from util import run_lock
from util.errors import UserError
from util.io_utils import write_json_atomic
from util.progress import format_duration

# Estimates before any run of a kind has finished.
DEFAULT_SECONDS_PER_STEP = 1.0
DEFAULT_SECONDS = dict(finetune=300.0, export=30.0)
# How often a worker looks again at the runs it waits for.
POLL_SECONDS = 10.0


def _timings_path(study):
  return os.path.join(plan_lib.work_dir(study), "timings.json")


def load_timings(study):
  path = _timings_path(study)
  return io_utils.read_json(path) if os.path.isfile(path) else {}


def is_done(run):
  """Whether `run` finished: its results exist and are final (pre-training
  evaluates along the way too; fine-tuning writes after each trial)."""
  if not os.path.isfile(run.done_file):
    return False
  if run.kind == "export":
    return True
  results = io_utils.read_json(run.done_file)
  if run.kind == "pretrain":
    return results.get("step", 0) >= run.steps
  return results.get("num_trials", 0) >= run.trials


@functools.lru_cache(maxsize=None)
def _data_rows(path):
  """Rows of a TSV file with a header, or None if it is not there yet."""
  if not os.path.isfile(path):
    return None
  with open(path, encoding="utf-8") as f:
    return max(sum(1 for _ in f) - 1, 0)


def finetune_work(run):
  """How much a fine-tuning run computes, in training-example passes:
  trials x epochs x (training examples + a third of the dev examples, which
  are evaluated once an epoch with a forward pass only). None before the
  study's data is prepared."""
  hparams = json.loads(run.argv[run.argv.index("--hparams") + 1])
  task = os.path.join(run.argv[run.argv.index("--data-dir") + 1],
                      "finetuning_data", hparams["task_names"][0])
  train, dev = (_data_rows(os.path.join(task, split + ".tsv"))
                for split in ("train", "dev"))
  if train is None or dev is None:
    return None
  epochs = hparams.get(
      "num_train_epochs",
      configure.FINETUNE_FIELDS["num_train_epochs"].default)
  return run.trials * epochs * (train + dev / 3.0)


def estimate_seconds(run, runs, timings):
  """Expected wall time of `run` from the finished runs of its kind:
  pre-training per step; fine-tuning per trial of the same task's runs if
  any has finished, else per unit of `finetune_work` of every task's."""
  measured = [r for r in runs if r.id in timings and r.kind == run.kind]
  if run.kind == "pretrain":
    steps = sum(r.steps for r in measured)
    per_step = (sum(timings[r.id] for r in measured) / steps if steps else
                DEFAULT_SECONDS_PER_STEP)
    return per_step * run.steps
  same_task = [r for r in measured
               if r.id.split(" from ")[0] == run.id.split(" from ")[0]]
  chosen = same_task or measured
  if not chosen:
    return DEFAULT_SECONDS[run.kind]
  if run.kind == "finetune" and not same_task:
    work = [finetune_work(r) for r in chosen + [run]]
    if None not in work and sum(work[:-1]) > 0:
      return sum(timings[r.id] for r in chosen) / sum(work[:-1]) * work[-1]
  if run.kind == "finetune":
    trials = sum(r.trials for r in chosen)
    return sum(timings[r.id] for r in chosen) / trials * run.trials
  return sum(timings[r.id] for r in chosen) / len(chosen)


def live_workers(study):
  """How many workers run the study now: this one and every other live
  claim holder."""
  claims = os.path.join(plan_lib.work_dir(study), "claims")
  holders = {(os.getpid(), socket.gethostname())}
  for name in (os.listdir(claims) if os.path.isdir(claims) else []):
    path = os.path.join(claims, name)
    found = run_lock.holder(path)
    if found and run_lock.is_held(path):
      holders.add(found)
  return len(holders)


def describe(study, log=print):
  """--dry-run: every run, whether it is done, and the time left."""
  runs = plan_lib.plan(study)
  timings = load_timings(study)
  left, todo = 0.0, 0
  for run in runs:
    done = is_done(run)
    seconds = timings.get(run.id) if done else estimate_seconds(
        run, runs, timings)
    if not done:
      left, todo = left + seconds, todo + 1
    log("%-5s %-52s %s" % ("done" if done else "todo", run.id,
                           format_duration(seconds or 0)))
  log("%d runs, %d to do, estimated %s (budget %s h)" % (
      len(runs), todo, format_duration(left), study.get("budget_hours", "-")))
  return runs


def _file_name(run):
  return re.sub(r"[^A-Za-z0-9_.-]+", "_", run.id)


def _log_name(run):
  return _file_name(run) + ".log"


def claim(study, run):
  """The path of our new claim on `run`, or None when a live worker holds it
  (a dead worker's claim is taken over: the run is ours to redo)."""
  claims = os.path.join(plan_lib.work_dir(study), "claims")
  io_utils.make_dirs(claims)
  path = os.path.join(claims, _file_name(run) + ".claim")
  return path if run_lock.try_acquire(path) else None


def _spans_path(study):
  return os.path.join(plan_lib.work_dir(study), "spans.json")


def load_spans(study):
  """{run id: [start, end]} (seconds since the epoch) of the finished runs
  that recorded them."""
  path = _spans_path(study)
  return io_utils.read_json(path) if os.path.isfile(path) else {}


def _record_timing(study, run, start, end):
  """Adds one run's wall time to timings.json and its start and end to
  spans.json, under a lock: other workers write theirs to the same files."""
  path = _timings_path(study)
  with open(path + ".lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    timings = load_timings(study)
    timings[run.id] = round(end - start, 1)
    spans = load_spans(study)
    spans[run.id] = [round(start, 1), round(end, 1)]
    write_json_atomic(_spans_path(study), spans)
    write_json_atomic(path, timings)
  return timings


def run_all(study, log=print, poll_seconds=POLL_SECONDS):
  """Runs every run not done yet, in order; returns the runs.

  A run whose inputs (`Run.needs`) another worker is still making waits for
  them; the runs after it go on meanwhile. A worker returns when every run
  is done or held by another live worker.
  """
  runs = plan_lib.plan(study)
  by_id = {r.id: r for r in runs}
  timings = load_timings(study)
  todo = [r for r in runs if not is_done(r)]
  logs = os.path.join(plan_lib.work_dir(study), "logs")
  io_utils.make_dirs(logs)
  log("study %s: %d runs, %d done, %d to run" % (
      study["name"], len(runs), len(runs) - len(todo), len(todo)))
  told = set()  # What we said already: the same line once, not each pass.
  while True:
    waiting, ran = [], False
    for i, run in enumerate(todo):
      if is_done(run):
        continue  # Done by us or by another worker.
      held = claim(study, run)
      if held is None:
        _say_once(told, log, "[%d/%d] %s: another worker runs it" % (
            i + 1, len(todo), run.id))
        continue
      missing = [n for n in run.needs if not is_done(by_id[n])]
      if missing:
        os.remove(held)
        waiting.append((run, missing))
        continue
      try:
        if not is_done(run):
          timings = _run_one(study, run, runs, todo[i:], timings, logs,
                             "[%d/%d]" % (i + 1, len(todo)), log)
      finally:
        os.remove(held)
      ran = True
      break  # From the top again: a run that was waiting may be ready now.
    if ran:
      continue
    if not waiting:
      return runs
    run, missing = waiting[0]
    _say_once(told, log, "%s waits for %s (another worker runs it)" % (
        run.id, ", ".join(missing)))
    time.sleep(poll_seconds)


def _say_once(told, log, line):
  if line not in told:
    told.add(line)
    log(line)


def _run_one(study, run, runs, rest, timings, logs, counter, log):
  # The runs left are shared by the workers running now.
  workers = live_workers(study)
  left = sum(estimate_seconds(r, runs, timings) for r in rest
             if not is_done(r)) / workers
  log("%s %s (about %s; study ETA %s%s)" % (
      counter, run.id, format_duration(estimate_seconds(run, runs, timings)),
      format_duration(left),
      " with %d workers" % workers if workers > 1 else ""))
  log_path = os.path.join(logs, _log_name(run))
  start = time.time()
  with open(log_path, "a") as f:
    proc = subprocess.run([sys.executable] + run.argv, cwd=plan_lib.REPO,
                          stdout=f, stderr=subprocess.STDOUT,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  if proc.returncode or not is_done(run):
    raise UserError("%s failed (exit %d); see %s. Run study.py again to "
                    "resume from there." % (run.id, proc.returncode,
                                            log_path))
  return _record_timing(study, run, start, time.time())
