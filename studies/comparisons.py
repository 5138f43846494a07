"""Which downstream rows a study's report compares, and the comparisons as
data.

A downstream row is a pre-trained model's "regime/variant", random
initialisation (`plan.RANDOM_INIT`) or the released start (its name). A
pre-trained row is compared with the start (when the study has one), with
random initialisation, and with its regime's baseline variant; random
initialisation is compared with the start. Each comparison is Welch's
t-test (studies/statistics.py) on the two rows' independent units
(`units`). `summary` lists every comparison of the finished runs, for the
report's summary.json.
"""

from studies import plan as plan_lib
from studies import statistics


def _seed_rows(study):
  """The rows of one model each, whose fine-tuning seeds are its units."""
  return {plan_lib.RANDOM_INIT, plan_lib.start_name(study)} - {None}


def units(study, row, models):
  """The independent values of downstream row `row` ({model: [scores]}):
  the scores of random initialisation or of the start, one a fine-tuning
  seed, or each pre-trained model's mean over its fine-tuning seeds (the
  fine-tunings of one model are not independent of each other)."""
  if row in _seed_rows(study):
    return [v for scores in models.values() for v in scores]
  return [statistics.summary(scores)[0] for scores in models.values()]


def headers(study):
  """The comparison columns of a downstream table."""
  start = plan_lib.start_name(study)
  return (["vs %s" % start] if start else []) + [
      "vs random init", "vs %s" % plan_lib.baseline(study)]


def baselines(study, row):
  """The row that `row` is compared with under each of `headers(study)`;
  None where it is not compared."""
  start = plan_lib.start_name(study)
  if row == start:
    found = [None, None, None]
  elif row == plan_lib.RANDOM_INIT:
    found = [start, None, None]
  else:
    regime, variant = row.split("/", 1)
    base = plan_lib.baseline(study)
    found = [start, plan_lib.RANDOM_INIT,
             None if variant == base else "%s/%s" % (regime, base)]
  return found if start else found[1:]


def unit_pair(study, rows, row, baseline):
  """(units of `row`, units of `baseline`) of one task's rows ({row: {model:
  [scores]}}); a row without results has none."""
  return (units(study, row, rows.get(row, {})),
          units(study, baseline, rows.get(baseline, {})))


def compare(study, rows, row, baseline):
  """{row, baseline, diff, se, p, n_row, n_baseline} of `row` against
  `baseline` in one task's rows: the difference of their means, its
  standard error and Welch's p (se and p None with fewer than 2 units a
  row)."""
  a, b = unit_pair(study, rows, row, baseline)
  (mean_a, _, n_a), (mean_b, _, n_b) = (statistics.summary(a),
                                        statistics.summary(b))
  test = statistics.welch(a, b)
  return dict(row=row, baseline=baseline,
              diff=mean_a - mean_b if n_a and n_b else None,
              se=test[1] if test else None, p=test[2] if test else None,
              n_row=n_a, n_baseline=n_b)


def summary(study, data):
  """Every comparison of the finished downstream runs (`report.collect`'s
  data): a list of `compare` dicts with their `task` and `metric`."""
  entries = []
  for task, rows in data["downstream"].items():
    for row in rows:
      for baseline in baselines(study, row):
        if baseline in rows:
          entries.append(dict(compare(study, rows, row, baseline), task=task,
                              metric=data["metrics"].get(task)))
  return entries
