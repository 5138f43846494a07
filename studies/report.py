"""RESULTS.md of a study: tables with spreads, every run, and figures.

Pre-training rows are (regime, variant), each the mean +- std (sample std)
over its seeds of the held-out metrics; downstream rows add random
initialisation and the released start (when the study has one), each over
every (pre-training seed, fine-tuning seed) pair. A row is compared with its
baselines (ELECTRA in the same regime; downstream random initialisation and
the start too: studies/comparisons.py) by the difference of the means, its
standard error and Welch's t-test on the rows' independent units
(studies/statistics.py). Every run appears in the per-run tables. The
downstream comparisons also go to summary.json beside the figures, in the
study's results directory (results/<name> by default), which the report
links to.
"""

import datetime
import io
import os

import numpy as np

from pretrain import eval_report
from pretrain import peak
from studies import comparisons
from studies import plan as plan_lib
from studies import runner
from studies import statistics
from util import io_utils
from util.io_utils import write_bytes_atomic
from util.io_utils import write_json_atomic
from util.io_utils import write_text_atomic
from util.progress import format_duration

PRETRAIN_COLUMNS = ("disc_auc", "masked_lm_accuracy", "disc_loss",
                    "estimator_pearson", "estimator_spearman",
                    "disc_accuracy_pG_all", "disc_accuracy_pS_all",
                    "disc_accuracy_pG_masked", "disc_accuracy_pS_masked")
# study.py's --output default, relative to the repository, for a study
# config without a "report".
DEFAULT_OUTPUT = os.path.join("docs", "RESULTS.md")
# The pre-training metric rows are compared on.
PRIMARY_PRETRAIN_METRIC = "disc_auc"


def default_output(study):
  """The report study.py writes without --output (relative to the
  repository): the config's "report", else DEFAULT_OUTPUT."""
  return os.path.normpath(study.get("report", DEFAULT_OUTPUT))


def _cell(values, scale=1.0):
  mean, std, n = statistics.summary(values)
  if n == 0:
    return "-"
  return "%.3f ± %.3f (n=%d)" % (mean * scale, std * scale, n)


def _read(path):
  return io_utils.read_json(path) if os.path.isfile(path) else None


def collect(study):
  """{"pretrain": {model: {...}}, "downstream": {task: {row: {model:
  [values]}}}, "metrics": {task: primary metric}} of the finished runs: a
  downstream row (the start's name, regime/variant, or random_init) holds
  each of its models' scores, one a fine-tuning seed."""
  models = os.path.join(plan_lib.data_dir(study), "models")
  pre = {}
  for name, regime, variant, seed in plan_lib.pretrained_models(study):
    results = os.path.join(models, name, "results")
    pre[name] = dict(regime=regime, variant=variant, seed=seed,
                     final=_read(os.path.join(results, "pretrain_eval.json")),
                     history=_read(os.path.join(
                         results, "pretrain_eval_history.json")) or [])
  down, metrics, per_run = {}, {}, []
  for task in study.get("finetuning", {}).get("tasks", []):
    name = task["name"]
    down[name] = {}
    for model, row, _ in plan_lib.downstream_sources(study):
      record = _read(os.path.join(models, model, "results",
                                  "%s_results.json" % name))
      if record is None:
        continue
      metric = record["primary_metric"]
      metrics[name] = metric
      for trial in record["trials"]:
        split = next(iter(trial["best"]["results"]))
        value = trial["best"]["results"][split][metric]
        down[name].setdefault(row, {}).setdefault(model, []).append(value)
        per_run.append((name, model, trial["seed"], metric, value))
  return dict(pretrain=pre, downstream=down, metrics=metrics,
              per_run=per_run)


def _rows(pre):
  """{(regime, variant): [model results]} of finished pre-training runs."""
  rows = {}
  for info in pre.values():
    if info["final"] is not None:
      rows.setdefault((info["regime"], info["variant"]), []).append(info)
  return rows


def pretraining_tables(study, data):
  rows = _rows(data["pretrain"])
  base = plan_lib.baseline(study)
  lines = ["## Pre-training: held-out metrics at the end", "",
           "mean ± sample std over seeds; the last column is the "
           "difference of %s from the %s row of its regime ± its standard "
           "error, with the p-value of Welch's t-test over the seeds "
           "(separated: p < %.2g)." % (PRIMARY_PRETRAIN_METRIC, base,
                                       statistics.SEPARATION_P), ""]
  lines.append("| regime / variant | " + " | ".join(PRETRAIN_COLUMNS) +
               " | vs %s |" % base)
  lines.append("|---" * (len(PRETRAIN_COLUMNS) + 2) + "|")
  for (regime, variant), runs in rows.items():
    cells = [_cell([r["final"].get(k) for r in runs])
             for k in PRETRAIN_COLUMNS]
    ref = rows.get((regime, base), [])
    compared = "-" if variant == base else statistics.versus(
        [r["final"].get(PRIMARY_PRETRAIN_METRIC) for r in runs],
        [r["final"].get(PRIMARY_PRETRAIN_METRIC) for r in ref])
    lines.append("| %s / %s | %s | %s |" % (regime, variant,
                                           " | ".join(cells), compared))
  lines += ["", "Every pre-training run:", "",
            "| model | seed | step | " + " | ".join(PRETRAIN_COLUMNS) + " |",
            "|---" * (len(PRETRAIN_COLUMNS) + 3) + "|"]
  for name, info in data["pretrain"].items():
    final = info["final"] or {}
    lines.append("| %s | %d | %s | %s |" % (
        name, info["seed"], final.get("step", "not run"), " | ".join(
            "%.4f" % final[k] if isinstance(final.get(k), float) else "-"
            for k in PRETRAIN_COLUMNS)))
  return lines


def downstream_tables(study, data):
  down, metrics = data["downstream"], data["metrics"]
  if not down:
    return []
  base = plan_lib.baseline(study)
  start = plan_lib.start_name(study)
  headers = comparisons.headers(study)
  lines = ["", "## Downstream: best dev score of each fine-tuning", "",
           "mean ± sample std over every (pre-training seed, fine-tuning "
           "seed); a \"vs X\" column is the difference from row X (\"vs "
           "%s\": the %s row of the same regime) ± its standard error, with "
           "the p-value of Welch's t-test (separated: p < %.2g). The "
           "fine-tunings of one pre-trained model are not independent of "
           "each other, so a pre-trained row enters the test as its models' "
           "means (one a pre-training seed), %s." % (
               base, base, statistics.SEPARATION_P,
               "random initialisation and the released start (%s) as their "
               "fine-tuning seeds" % start if start else
               "random initialisation as its fine-tuning seeds"), ""]
  for task, rows in down.items():
    lines += ["### %s (%s)" % (task, metrics.get(task, "-")), "",
              "| initialisation | %s | %s |" % (
                  metrics.get(task, "score"), " | ".join(headers)),
              "|---" * (len(headers) + 2) + "|"]
    for row, models in rows.items():
      compared = [
          "-" if other is None else statistics.versus(
              *comparisons.unit_pair(study, rows, row, other))
          for other in comparisons.baselines(study, row)]
      values = [v for scores in models.values() for v in scores]
      lines.append("| %s | %s | %s |" % (row, _cell(values),
                                         " | ".join(compared)))
    lines.append("")
  lines += ["Every fine-tuning run:", "", "| task | model | seed | metric | "
            "best dev |", "|---|---|---|---|---|"]
  lines += ["| %s | %s | %d | %s | %.4f |" % r for r in data["per_run"]]
  return lines


def provenance(study, output=None):
  """Lines naming the command (with `--output` unless it is the default),
  the date, the machine and the wall time."""
  output = output or default_output(study)
  timings = runner.load_timings(study)
  runs = plan_lib.plan(study)
  by_kind = {}
  for run in runs:
    if run.id in timings:
      by_kind[run.kind] = by_kind.get(run.kind, 0.0) + timings[run.id]
  try:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
  except (ValueError, OSError, AttributeError):
    memory = float("nan")
  command = "python study.py --config %s" % os.path.relpath(
      study["path"], plan_lib.REPO)
  output = os.path.relpath(os.path.abspath(output), plan_lib.REPO)
  if output != default_output(study):
    command += " --output %s" % output
  return [
      "- command: `%s`" % command,
      "- written: %s" % datetime.datetime.now(
          datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
      "- machine: %s, %.0f GiB memory, %s" % (
          peak.cpu_name(), memory, peak.gpu_name() or "no GPU"),
      "- wall time of the %d runs done (of %d), summed over runs: %s (%s)" % (
          sum(r.id in timings for r in runs), len(runs),
          format_duration(sum(by_kind.values())), ", ".join(
              "%s %s" % (kind, format_duration(t))
              for kind, t in by_kind.items()))] + elapsed_lines(
                  runner.load_spans(study), runs) + [""]


def elapsed_lines(spans, runs):
  """The study's elapsed time from its runs' spans ({id: [start, end]}):
  the first start to the last end, and how many runs overlapped at most
  (several workers); no line when no run of `runs` has a span."""
  spans = [spans[r.id] for r in runs if r.id in spans]
  if not spans:
    return []
  events = sorted([(start, 1) for start, _ in spans] +
                  [(end, -1) for _, end in spans])
  running = most = 0
  for _, change in events:  # An end sorts before a start at the same time.
    running += change
    most = max(most, running)
  first = datetime.datetime.fromtimestamp(min(s for s, _ in spans),
                                          datetime.timezone.utc)
  return ["- elapsed: %s from the first of %d timed runs' start (%s) to the "
          "last one's end, at most %d at a time" % (
              format_duration(max(e for _, e in spans) -
                              min(s for s, _ in spans)), len(spans),
              first.strftime("%Y-%m-%d %H:%M UTC"), most)]


def _figure():
  from matplotlib.backends.backend_agg import FigureCanvasAgg  # pylint: disable=g-import-not-at-top
  from matplotlib.figure import Figure  # pylint: disable=g-import-not-at-top
  fig = Figure(figsize=(10, 4))
  FigureCanvasAgg(fig)
  return fig


def _save(fig, path):
  fig.tight_layout()
  buf = io.BytesIO()
  fig.savefig(buf, format="png", dpi=90)
  write_bytes_atomic(path, buf.getvalue())
  return path


def curves_figure(data, path):
  """Held-out D AUC and MLM accuracy against steps, one curve per row."""
  fig = _figure()
  for i, metric in enumerate(("disc_auc", "masked_lm_accuracy")):
    ax = fig.add_subplot(1, 2, i + 1)
    for (regime, variant), runs in _rows(data["pretrain"]).items():
      steps = sorted({h["step"] for r in runs for h in r["history"]})
      means = [statistics.summary([h.get(metric) for r in runs
                                   for h in r["history"]
                                   if h["step"] == s])[0] for s in steps]
      means = [float("nan") if m is None else m for m in means]
      ax.plot(steps, means, marker="o", label="%s/%s" % (regime, variant))
    ax.set_xlabel("step")
    ax.set_ylabel("held-out " + metric)
    ax.legend(fontsize=7)
  return _save(fig, path)


def hardness_figure(data, path):
  """D's accuracy under p_G and p_S, on all and on masked positions, and
  the estimator's correlations, per row (mean over seeds): one panel each,
  since the masked accuracies are an order of magnitude below the rest."""
  fig = _figure()
  fig.set_size_inches(13, 4.5)
  rows = _rows(data["pretrain"])
  labels = ["%s/%s" % key for key in rows]
  groups = ((("disc_accuracy_pG_all", "disc_accuracy_pS_all"),
             "D accuracy, all positions"),
            (("disc_accuracy_pG_masked", "disc_accuracy_pS_masked"),
             "D accuracy, masked positions"),
            (("estimator_pearson", "estimator_spearman"),
             "estimator vs D's loss"))
  for i, (keys, title) in enumerate(groups):
    ax = fig.add_subplot(1, len(groups), i + 1)
    width = 0.8 / len(keys)
    for j, key in enumerate(keys):
      means = [statistics.summary([r["final"].get(key) for r in runs])[0]
               for runs in rows.values()]
      ax.bar(np.arange(len(labels)) - 0.4 + width * (j + 0.5),
             [0.0 if m is None else m for m in means], width, label=key)
    ax.set_xticks(np.arange(len(labels)))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.45),
              ncol=1)
  return _save(fig, path)


def figures_dir(study):
  """Where the figures and summary.json of the study's report go: its
  results directory (`plan.results_dir`: results/<name> by default),
  whichever report links them."""
  return plan_lib.results_dir(study)


def write_report(study, output):
  """Writes `output` (RESULTS.md) and, in the study's results directory
  (`figures_dir`), its figures and summary.json (every downstream
  comparison: studies/comparisons.py); returns `output`."""
  data = collect(study)
  figures = figures_dir(study)
  write_json_atomic(os.path.join(figures, "summary.json"),
                    comparisons.summary(study, data))
  rows = _rows(data["pretrain"])
  lines = ["# Results: study %s" % study["name"], "",
           study.get("description", ""), ""]
  lines += provenance(study, output)
  if study.get("notes"):
    lines += [io_utils.read_text(plan_lib.repo_path(study["notes"])), ""]
  lines += pretraining_tables(study, data)
  lines += downstream_tables(study, data)
  if rows:
    histograms = {}
    for (regime, variant), runs in rows.items():
      fractions = np.mean([r["final"]["gen_max_prob_histogram"]["fractions"]
                           for r in runs], axis=0)
      histograms["%s/%s" % (regime, variant)] = list(fractions)
    pictures = [
        ("Generator max-probability at masked positions (mean over seeds; "
         "log scale)",
         eval_report.plot_max_prob_histogram(
             histograms, os.path.join(figures, "gen_max_prob.png"),
             log_scale=True)),
        ("Held-out D AUC and MLM accuracy against steps",
         curves_figure(data, os.path.join(figures, "curves.png"))),
        ("D accuracy under p_G and p_S; the estimator's correlations",
         hardness_figure(data, os.path.join(figures, "hardness.png")))]
    lines += ["", "## Figures", ""]
    for title, picture in pictures:
      lines += ["%s:" % title, "",
                "![%s](%s)" % (title, os.path.relpath(
                    picture, os.path.dirname(os.path.abspath(output)))), ""]
  write_text_atomic(output, "\n".join(lines) + "\n")
  return output
