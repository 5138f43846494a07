"""Runs a study: pre-training variants x seeds, then fine-tuning, then a report.

  python study.py --config studies/configs/<name>.json [--dry-run]
      [--output FILE]

The config (studies/plan.py documents its keys) names the data (or a
released model to start from), the regimes, the variants at equal compute
(same steps, batch and data order: only their hparams differ), the seeds
and the downstream tasks. The study builds its data directory under
`work_dir`, runs every run not done yet in order with a progress line and
an ETA for the whole study, and writes RESULTS.md (default: the config's
"report", else docs/RESULTS.md) and its figures and summary.json (in the
config's "results", else results/<name>). Running it again resumes:
finished runs are skipped. Started more than once on one machine, its
workers share the grid (studies/runner.py).
`--dry-run` lists the runs, which are done, and the estimated time;
`--report-only` writes the report of the runs finished so far (its
provenance says how many of all) and runs nothing.

A study can outlive its work_dir (a machine that starts fresh each
session): the config's "archive", a directory in the repository, receives
the small result files of each run as soon as it finishes
(studies/archive.py). Commit it after a session (`git add <archive>`).
On start (a run, --dry-run or --report-only) every run that is not done
in the work_dir but archived is restored from it, so it counts as done;
a pre-training whose model is gone but still needed by a run not done
yet runs again (with its seed, the same model; --dry-run says "rerun").
"""

import argparse

from util.cli import tensorflow_startup
from util.cli import run_main

tensorflow_startup()


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--config", required=True,
                      help="studies/configs/<name>.json")
  parser.add_argument("--dry-run", action="store_true",
                      help="List the runs and the estimated time; run none.")
  parser.add_argument("--report-only", action="store_true",
                      help="Write the report of the finished runs; run none.")
  parser.add_argument("--output",
                      help="The report to write (default: the config's "
                      "\"report\", else docs/RESULTS.md).")
  args = parser.parse_args(argv)
  # pylint: disable=g-import-not-at-top
  from studies import config as config_lib
  from studies import data as data_lib
  from studies import report
  from studies import runner
  study = config_lib.load_study(args.config)
  config_lib.check_hparams(study)
  if args.dry_run:
    runner.describe(study)
    return 0
  if args.report_only:
    runner.restore(study)
    print("report: %s" % report.write_report(
        study, args.output or report.default_output(study)))
    return 0
  data_lib.prepare(study)
  runs = runner.run_all(study)
  busy = [r.id for r in runs if not runner.is_done(r)]
  if busy:
    print("%d run(s) still with other workers (%s%s); the last worker to "
          "finish writes the report." % (len(busy), ", ".join(busy[:3]),
                                         ", ..." if len(busy) > 3 else ""))
    return 0
  print("report: %s" % report.write_report(
      study, args.output or report.default_output(study)))
  return 0


if __name__ == "__main__":
  run_main(main)
