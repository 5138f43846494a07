"""Side-by-side evaluation results of pre-training runs, and their histograms.

  python compare_pretraining_runs.py D/models/mlm D/models/hp [--output DIR]

Reads each model directory's `results/pretrain_eval.json` (written by
run_pretraining.py with do_eval) and prints a table of the main metrics; with
--output it also writes the table (comparison.md), one plot of the
generator's max-probability histograms (gen_max_prob_histograms.png) and,
from each run's `results/pretrain_eval_history.json` (every evaluation,
`eval_every`), the curves of D on temperature-1 draws (curves.png).
"""

import argparse
import os

from util import io_utils
from util.cli import run_main
from util.errors import UserError
from util.io_utils import write_text_atomic


def load_results(model_dir):
  path = os.path.join(model_dir, "results", "pretrain_eval.json")
  if not io_utils.exists(path):
    raise UserError("%s not found; run run_pretraining.py with "
                    "\"do_eval\": true for that model first." % path)
  return io_utils.read_json(path)


def _history(model_dir):
  """The run's evaluation history (a list by step; [] if it has none),
  with D on temperature-1 draws wherever the run's config says its own
  draws were those."""
  from pretrain import eval_report  # pylint: disable=g-import-not-at-top
  path = os.path.join(model_dir, "results", "pretrain_eval_history.json")
  if not io_utils.exists(path):
    return []
  saved = os.path.join(model_dir, "config.json")
  return eval_report.with_t1_keys(
      io_utils.read_json(path),
      io_utils.read_json(saved) if io_utils.exists(saved) else {})


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("model_dirs", nargs="+")
  parser.add_argument("--output", default=None)
  args = parser.parse_args(argv)
  from pretrain import eval_report  # Imports matplotlib.
  runs = {os.path.basename(os.path.normpath(d)): load_results(d)
          for d in args.model_dirs}
  table = eval_report.format_results_table(runs)
  print(table)
  if args.output:
    write_text_atomic(os.path.join(args.output, "comparison.md"), table + "\n")
    plot = eval_report.plot_max_prob_histogram(
        {name: r["gen_max_prob_histogram"] for name, r in runs.items()},
        os.path.join(args.output, "gen_max_prob_histograms.png"),
        title="Generator max-probability at masked positions")
    histories = {name: _history(d) for name, d in zip(runs, args.model_dirs)}
    curves = eval_report.plot_curves(
        {name: h for name, h in histories.items() if h},
        os.path.join(args.output, "curves.png"))
    print("Wrote %s, %s and %s" % (
        os.path.join(args.output, "comparison.md"), plot, curves))
  return 0


if __name__ == "__main__":
  run_main(main)
