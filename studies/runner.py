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

With an archive (studies/archive.py), each run is archived as soon as it
finishes, and on start (`run_all`, `describe`; study.py --report-only)
`restore` copies back the archived runs that the work_dir lacks; a
pre-training (or export) whose model is gone while a run not done yet
reads it runs again instead.
"""

import collections
import contextlib
import fcntl
import functools
import json
import os
import socket
import subprocess
import sys
import time

import configure
from studies import archive as archive_lib
from studies import plan as plan_lib
from util import interrupt
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


def restore(study, runs=None, archive_done=False):
  """Restores from the study's archive (studies/archive.py) every run that
  is not done in the work_dir but archived with its settings: its files
  are copied back and its wall time and span go to timings.json and
  spans.json, so it counts as done. Returns {run id: (state, note)} in plan
  order, state "done", "restored", "todo" or "rerun".

  A pre-training or export whose model is not in the work_dir but is read
  by a run that is not done (`Run.needs`) is not restored but run again
  ("rerun"; with its seed and data it makes the same model): its done file
  is removed if it is there. `archive_done` also archives the runs done
  in the work_dir that the archive lacks (run_all does).
  """
  runs = runs or plan_lib.plan(study)
  if not archive_lib.directory(study):
    return {r.id: ("done" if is_done(r) else "todo", "") for r in runs}
  readers = {}  # run id -> the ids of the runs that read its output
  for run in runs:
    for need in run.needs:
      readers.setdefault(need, []).append(run.id)
  states, timings, spans, restored = {}, load_timings(study), load_spans(
      study), {}
  for run in reversed(runs):  # A run's readers come after it.
    pending = [r for r in readers.get(run.id, ())
               if states[r][0] in ("todo", "rerun")]
    gone = pending and not archive_lib.has_model(study, run)
    manifest, why = archive_lib.load(study, run)
    if gone and (is_done(run) or manifest):
      if is_done(run):
        with contextlib.suppress(FileNotFoundError):  # Another worker's.
          os.remove(run.done_file)
      states[run.id] = ("rerun", "its model is gone and %s needs it" %
                        pending[0])
    elif is_done(run):
      states[run.id] = ("done", "")
      if archive_done and manifest is None:
        archive_lib.save(study, run, (timings[run.id], spans.get(run.id))
                         if run.id in timings else None)
    elif manifest:
      archive_lib.copy_back(study, run, manifest)
      if "seconds" in manifest:
        restored[run.id] = (manifest["seconds"], manifest.get("span"))
      states[run.id] = ("restored", "from the archive")
    else:
      states[run.id] = ("todo", why or "")
  if restored:
    _record_timings(study, restored)
  return {r.id: states[r.id] for r in runs}


def _restore_line(study, states):
  """"N runs restored from <archive>, M to run again" or None."""
  count = collections.Counter(state for state, _ in states.values())
  if not (count["restored"] or count["rerun"]):
    return None
  return "%d run(s) restored from %s, %d to run again (their model is " \
         "gone)" % (count["restored"], study["archive"], count["rerun"])


def describe(study, log=print):
  """--dry-run: every run, whether it is done (or restored from the
  archive, or to run again), and the time left."""
  runs = plan_lib.plan(study)
  states = restore(study, runs)
  timings = load_timings(study)
  left, todo = 0.0, 0
  for run in runs:
    state, note = states[run.id]
    done = state in ("done", "restored")
    seconds = timings.get(run.id) if done else estimate_seconds(
        run, runs, timings)
    if not done:
      left, todo = left + seconds, todo + 1
    log("%-5s %-52s %s%s" % (
        "done" if done else state, run.id, format_duration(seconds or 0),
        "  %s: %s" % (state, note) if note else ""))
  line = _restore_line(study, states)
  if line:
    log(line)
  log("%d runs, %d to do, estimated %s (budget %s h)" % (
      len(runs), todo, format_duration(left), study.get("budget_hours", "-")))
  return runs


def _log_name(run):
  return plan_lib.file_name(run) + ".log"


def claim(study, run):
  """The path of our new claim on `run`, or None when a live worker holds it
  (a dead worker's claim is taken over: the run is ours to redo)."""
  claims = os.path.join(plan_lib.work_dir(study), "claims")
  io_utils.make_dirs(claims)
  path = os.path.join(claims, plan_lib.file_name(run) + ".claim")
  return path if run_lock.try_acquire(path) else None


def _spans_path(study):
  return os.path.join(plan_lib.work_dir(study), "spans.json")


def load_spans(study):
  """{run id: [start, end]} (seconds since the epoch) of the finished runs
  that recorded them."""
  path = _spans_path(study)
  return io_utils.read_json(path) if os.path.isfile(path) else {}


def _record_timings(study, entries):
  """Adds runs' wall times to timings.json and their starts and ends to
  spans.json ({run id: (seconds, [start, end] or None)}), under a lock:
  other workers write theirs to the same files. Returns the timings."""
  path = _timings_path(study)
  io_utils.make_dirs(plan_lib.work_dir(study))
  with open(path + ".lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    timings, spans = load_timings(study), load_spans(study)
    for run_id, (seconds, span) in entries.items():
      timings[run_id] = seconds
      if span:
        spans[run_id] = span
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
  line = _restore_line(study, restore(study, runs, archive_done=True))
  if line:
    log(line)
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
    code = interrupt.run_child(
        [sys.executable] + run.argv, cwd=plan_lib.REPO, stdout=f,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  if code or not is_done(run):
    raise UserError("%s failed (exit %d); see %s. Run study.py again to "
                    "resume from there." % (run.id, code, log_path))
  end = time.time()
  timing = (round(end - start, 1), [round(start, 1), round(end, 1)])
  timings = _record_timings(study, {run.id: timing})
  if archive_lib.directory(study):
    archive_lib.save(study, run, timing)
  return timings
