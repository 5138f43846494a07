"""Pre-training evaluation results as files, a table and a plot.

What `pretrain/eval_metrics.py`'s `PretrainEvalAccumulator.result()` gives
(a dict of floats, ints, None and the max-probability histogram), written
for people and tools: `<name>.json` and a readable `<name>.txt`
(`write_results`), the history of the main metrics by step
(`append_history`), a Markdown table comparing runs
(`format_results_table`), the generator's max-probability histogram as a
PNG (`plot_max_prob_histogram`, matplotlib) and the log line for a
discriminator still in ELECTRA's early phase (`discriminator_warning`).
"""

import io

import numpy as np

from pretrain.eval_metrics import HIST_EDGES
from pretrain.eval_metrics import CURVE_METRICS
from pretrain.eval_metrics import MAIN_METRICS
from pretrain.eval_metrics import NUM_HIST_BINS
from util import io_utils
from util.io_utils import write_bytes_atomic
from util.io_utils import write_json_atomic
from util.io_utils import write_text_atomic


def _ordered_metric_names(names):
  main = [k for k in MAIN_METRICS if k in names]
  rest = sorted(k for k in names if k not in MAIN_METRICS
                and k not in ("notes", "gen_max_prob_histogram", "step"))
  return main + rest


def _fmt(value):
  if value is None:
    return "n/a"
  if isinstance(value, (bool, np.bool_)):
    return str(value)
  if isinstance(value, (int, np.integer)):
    return str(int(value))
  if isinstance(value, (float, np.floating)):
    return "%.4f" % value
  return str(value)


def _histogram_lines(hist):
  lines = ["generator max-probability histogram (masked positions):"]
  for i, (c, f) in enumerate(zip(hist["counts"], hist["fractions"])):
    lo, hi = hist["bin_edges"][i], hist["bin_edges"][i + 1]
    close = "]" if i == len(hist["counts"]) - 1 else ")"
    lines.append("  [%.1f, %.1f%s %8d  %6.4f  %s"
                 % (lo, hi, close, c, f, "#" * int(round(40 * f))))
  return lines


# Below this held-out AUC the discriminator has not learned to use context.
# Below this held-out AUC on temperature-1 draws a discriminator was not
# worth fine-tuning in this project's measurements (docs/performance.md,
# 2026-12-06): encoders at 0.52-0.54 fine-tuned 5-6 points below random
# initialisation on SST-500 (level with it from a counted table,
# 2026-12-07), one at 0.67 drew level on full SST.
CONTEXT_AUC = 0.7
# Early in training G's temperature-1 draws are far rarer than the tokens
# they replace (an untrained G is near uniform), and D spots them without
# context: an AUC on such draws says nothing of context. Above this gap in
# mean log10 frequency rank (a factor of about 1.8) it is not read as such.
RARITY_GAP = 0.25


def discriminator_warning(results):
  """A line for the log when D does not yet use context, judged on
  temperature-1 draws (`disc_auc_t1`, else `disc_auc`), else None."""
  key = "disc_auc_t1" if "disc_auc_t1" in results else "disc_auc"
  auc = results.get(key)
  if not isinstance(auc, float) or auc >= CONTEXT_AUC:
    return None
  return ("Note: %s %.3f < %.1f: the discriminator barely uses context "
          "(ELECTRA's early phase), so its transformer adds nothing yet: "
          "measured here, encoders at 0.52-0.54 fine-tuned 5-6 points below "
          "random initialisation on 500 movie-review examples from a random "
          "embedding table, and level with it from a table counted from the "
          "corpus (embedding_init 'corpus'). Train "
          "far longer, or continue a released encoder (docs/continuing.md); "
          "docs/performance.md has the measurements." % (key, auc,
                                                         CONTEXT_AUC))


def what_it_is_good_for(results):
  """One line on what the evaluated model is good for, from the
  discriminator's AUC on temperature-1 draws and this project's
  measurements (`discriminator_warning`)."""
  warning = discriminator_warning(results)
  if warning:
    return warning
  key = "disc_auc_t1" if "disc_auc_t1" in results else "disc_auc"
  if not isinstance(results.get(key), float):
    return ("A masked-LM generator (masked_lm_accuracy %.3f); no "
            "discriminator to fine-tune." % results["masked_lm_accuracy"])
  drawn = results.get("replacement_log10_rank_t1")
  replaced = results.get("original_log10_rank_t1")
  if (isinstance(drawn, float) and isinstance(replaced, float) and
      drawn - replaced > RARITY_GAP):
    return ("%s %.3f, but G is still so weak that its temperature-1 draws "
            "are far rarer than the tokens they replace (mean log10 "
            "frequency rank %.2f against %.2f): D can spot them without "
            "context, so this AUC does not show that it uses context. "
            "Train far longer before fine-tuning it." % (
                key, results[key], drawn, replaced))
  return ("%s %.3f >= %.1f: the discriminator uses context; whether its "
          "encoder beats random initialisation downstream is for a "
          "fine-tuning run to show (study.py compares both)." % (
              key, results[key], CONTEXT_AUC))


def write_results(results, results_dir, name="pretrain_eval", step=None):
  """Writes `<results_dir>/<name>.json` and a readable `<name>.txt` atomically.

  `step` (the checkpoint's global step) is stored in both. Returns
  {"json": path, "txt": path}.
  """
  payload = dict(results)
  if step is not None:
    payload["step"] = int(step)
  json_path = "%s/%s.json" % (results_dir.rstrip("/"), name)
  txt_path = "%s/%s.txt" % (results_dir.rstrip("/"), name)
  write_json_atomic(json_path, payload)
  lines = ["%s%s" % (name, "" if step is None else " (step %d)" % step)]
  names = _ordered_metric_names(payload)
  width = max([len(k) for k in names] + [1])
  lines += ["  %-*s  %s" % (width, k, _fmt(payload[k])) for k in names]
  if "gen_max_prob_histogram" in payload:
    lines += _histogram_lines(payload["gen_max_prob_histogram"])
  for note in payload.get("notes", []):
    lines.append("note: %s" % note)
  write_text_atomic(txt_path, "\n".join(lines) + "\n")
  return {"json": json_path, "txt": txt_path}


def append_history(results, results_dir, step, name="pretrain_eval_history"):
  """Adds the curves' metrics (CURVE_METRICS) of an evaluation at `step` to
  `<results_dir>/<name>.json` (a list by step, rewritten atomically); the
  entries at `step` or later (a resumed run evaluating again) are replaced."""
  path = "%s/%s.json" % (results_dir.rstrip("/"), name)
  history = io_utils.read_json(path) if io_utils.exists(path) else []
  entry = {k: results[k] for k in CURVE_METRICS
           if isinstance(results.get(k), float)}
  entry["step"] = int(step)
  history = [h for h in history if h["step"] < int(step)] + [entry]
  write_json_atomic(path, history)
  return path


def plot_max_prob_histogram(histograms, path, title=None, log_scale=False):
  """Bar chart (PNG) of 10-bin max-probability fractions, a series per label.

  `histograms`: {label: [10 fractions]} or
  {label: results["gen_max_prob_histogram"]}.
  `log_scale`: a logarithmic y axis, for generators whose mass sits almost
  all in one bin (an empty bin then shows no bar).
  Uses matplotlib's Agg canvas directly (no pyplot, no global backend change).
  """
  from matplotlib.backends.backend_agg import FigureCanvasAgg
  from matplotlib.figure import Figure

  series = {}
  for label, h in histograms.items():
    fractions = h["fractions"] if isinstance(h, dict) else h
    if len(fractions) != NUM_HIST_BINS:
      raise ValueError("histogram %r has %d bins, expected %d"
                       % (label, len(fractions), NUM_HIST_BINS))
    series[label] = [float(f) for f in fractions]
  if not series:
    raise ValueError("no histogram to plot")
  fig = Figure(figsize=(7, 4.2))
  FigureCanvasAgg(fig)
  ax = fig.add_subplot(1, 1, 1)
  width = 0.8 / len(series)
  centers = np.arange(NUM_HIST_BINS)
  for i, (label, fractions) in enumerate(series.items()):
    ax.bar(centers - 0.4 + width * (i + 0.5), fractions, width,
           label=str(label))
  ax.set_xticks(centers)
  ax.set_xticklabels(["%.1f-%.1f" % (HIST_EDGES[i], HIST_EDGES[i + 1])
                      for i in range(NUM_HIST_BINS)], rotation=45, fontsize=8)
  ax.set_xlabel("generator max probability max_v p_G(v | c_t)")
  ax.set_ylabel("fraction of masked positions" +
                (" (log scale)" if log_scale else ""))
  if log_scale:
    ax.set_yscale("log")
  ax.set_title(title or "Generator confidence at masked positions")
  ax.legend()
  fig.tight_layout()
  buf = io.BytesIO()
  fig.savefig(buf, format="png", dpi=100)
  write_bytes_atomic(path, buf.getvalue())
  return path


# The panels of `plot_curves`: (title, [(history key, line style)]).
CURVE_PANELS = (
    ("D's AUC on temperature-1 draws", [("disc_auc_t1", "-")]),
    ("D's loss: replaced (solid), original (dashed)",
     [("disc_loss_replaced_t1", "-"), ("disc_loss_original_t1", "--")]),
    ("log10 frequency rank: replacement (solid), original (dashed)",
     [("replacement_log10_rank_t1", "-"), ("original_log10_rank_t1", "--")]),
)


def _curve(history, key):
  """(steps, values) of `key` in a run's history, where it has one."""
  points = [(h["step"], h[key]) for h in history if h.get(key) is not None]
  return [p[0] for p in points], [p[1] for p in points]


def with_t1_keys(history, saved_config):
  """A run's history with the `_t1` keys filled in from its own draws'
  where it lacks them (recorded before they were) and its draws were
  temperature-1 draws from p_G at every step (plain ELECTRA, read from
  its `saved_config`), so that they are the same numbers."""
  plain = (saved_config.get("sampling") == "mlm" and
           saved_config.get("temperature", 1.0) == 1.0 and
           saved_config.get("temperature_final") is None)
  if not plain:
    return history
  return [dict({k + "_t1": h[k] for _, keys in CURVE_PANELS
                for k in [key[:-len("_t1")] for key, _ in keys] if k in h},
               **h) for h in history]


def plot_curves(histories, path, title=None):
  """Evaluation curves (PNG) of runs, {label: pretrain_eval_history list}:
  D's AUC on temperature-1 draws, D's loss on replaced and original
  tokens, and the frequency ranks of replacements and originals, against
  steps (CURVE_PANELS)."""
  from matplotlib.backends.backend_agg import FigureCanvasAgg
  from matplotlib.figure import Figure

  fig = Figure(figsize=(14, 4.2))
  FigureCanvasAgg(fig)
  for i, (panel, keys) in enumerate(CURVE_PANELS):
    ax = fig.add_subplot(1, len(CURVE_PANELS), i + 1)
    for j, (label, history) in enumerate(histories.items()):
      for key, style in keys:
        steps, values = _curve(history, key)
        ax.plot(steps, values, style, color="C%d" % j, marker="o",
                markersize=3, label=str(label) if style == "-" else None)
    ax.set_xlabel("step")
    ax.set_title(panel, fontsize=9)
    ax.legend(fontsize=7)
    if keys[0][0] == "disc_auc_t1":
      # The whole range from chance to a useful D, so that noise near the
      # prior does not look like progress.
      ax.axhline(0.5, color="gray", linewidth=0.8)
      ax.set_ylim(0.45, 1.0)
  if title:
    fig.suptitle(title, fontsize=10)
  fig.tight_layout()
  buf = io.BytesIO()
  fig.savefig(buf, format="png", dpi=90)
  write_bytes_atomic(path, buf.getvalue())
  return path


def format_results_table(results_by_run):
  """Markdown table of the main metrics, one column per run ({run: results}).

  Adds the share of masked positions with max p_G in [0.9, 1] (the paper's
  over-confidence measure). Missing metrics show "-", undefined ones "n/a".
  """
  runs = list(results_by_run)
  rows = _ordered_metric_names(
      set().union(*[set(r) for r in results_by_run.values()]))
  cells = [[k] + [_fmt(results_by_run[r][k]) if k in results_by_run[r] else "-"
                  for r in runs] for k in rows]
  if any("gen_max_prob_histogram" in r for r in results_by_run.values()):
    cells.append(["max_prob_in_[0.9,1]"] + [
        _fmt(results_by_run[r]["gen_max_prob_histogram"]["fractions"][-1])
        if "gen_max_prob_histogram" in results_by_run[r] else "-"
        for r in runs])
  header = ["metric"] + [str(r) for r in runs]
  widths = [max(len(row[i]) for row in [header] + cells)
            for i in range(len(header))]

  def line(row):
    return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |"

  sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
  return "\n".join([line(header), sep] + [line(row) for row in cells]) + "\n"
