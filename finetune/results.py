"""Results of several trials: per-trial metrics, mean and standard deviation.

Written atomically after every trial to
`<model_dir>/results/<task>_results.{json,txt}`. Two views of each trial
are summarised:
  * `final`: the model at the end of training (what ELECTRA reports);
  * `best`: the checkpoint kept, the epoch with the best primary dev metric
    (selected on dev, so optimistic as a dev estimate).
`std` is the sample standard deviation over trials (0 for one trial).
"""

import collections
import os

import numpy as np

from util.io_utils import write_json_atomic
from util.io_utils import write_text_atomic


def summarize(per_trial):
  """[{split: {metric: value}}] -> {split: {metric: {mean, std, trials}}}.

  Only float metrics are summarised (counts such as num_examples are not).
  """
  summary = collections.OrderedDict()
  per_trial = [results for results in per_trial if results]
  if not per_trial:
    return summary
  for split, metrics in per_trial[0].items():
    summary[split] = collections.OrderedDict()
    for name, value in metrics.items():
      if not isinstance(value, float):
        continue
      values = [float(results[split][name]) for results in per_trial]
      summary[split][name] = collections.OrderedDict([
          ("mean", float(np.mean(values))),
          ("std", float(np.std(values, ddof=1)) if len(values) > 1 else 0.0),
          ("trials", values)])
  return summary


def task_record(task_name, trials, primary_metric):
  """The JSON record of a task: each trial and the summaries."""
  return collections.OrderedDict([
      ("task", task_name),
      ("num_trials", len(trials)),
      ("primary_metric", primary_metric),
      ("summary", collections.OrderedDict([
          ("final", summarize([t.get("final") for t in trials])),
          ("best", summarize([(t.get("best") or {}).get("results")
                              for t in trials]))])),
      ("trials", trials)])


def record_text(record):
  """Human-readable lines of a task record."""
  lines = ["task %s: %d trial(s); mean +- std over trials (each trial); "
           "primary metric %s" % (record["task"], record["num_trials"],
                                  record["primary_metric"])]
  for view, title in (("final", "end of training"),
                      ("best", "best epoch on dev (kept checkpoint)")):
    summary = record["summary"][view]
    if not summary:
      continue
    lines.append("  %s:" % title)
    for split, metrics in summary.items():
      for name, stats in metrics.items():
        lines.append("    %s %s: %.2f +- %.2f (%s)" % (
            split, name, stats["mean"], stats["std"],
            ", ".join("%.2f" % v for v in stats["trials"])))
  for index, trial in enumerate(record["trials"], 1):
    best = trial.get("best") or {}
    lines.append("  trial %d (seed %d): best at step %s, %.0f s" % (
        index, trial["seed"], best.get("step", "-"), trial["seconds"]))
  return "\n".join(lines) + "\n"


def write_task_results(model_dir, record):
  """Writes the JSON and TXT results of a task; returns their paths."""
  base = os.path.join(model_dir, "results", "%s_results" % record["task"])
  write_json_atomic(base + ".json", record)
  write_text_atomic(base + ".txt", record_text(record))
  return base + ".json", base + ".txt"
