"""The statistics a study's report states: spreads, and whether two rows
are separated.

Two rows are compared by Welch's t-test (unequal variances) on their
independent units: the pre-training seeds of a pre-trained row (for a
downstream task, each pre-trained model's mean over its fine-tuning seeds)
and the fine-tuning seeds of random initialisation. Two rows are called
separated when the two-sided p-value is below `SEPARATION_P`. With 3
values a row, that takes a difference of about 3 combined standard errors:
a 1-standard-error gap is well within what seeds alone give.
"""

import math

import numpy as np
from scipy import stats as scipy_stats

# Two rows whose Welch p-value is below this are called separated.
SEPARATION_P = 0.05


def summary(values):
  """(mean, sample std, n) of the finite values; (None, None, 0) if none."""
  values = [float(v) for v in values
            if v is not None and math.isfinite(float(v))]
  if not values:
    return None, None, 0
  std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
  return float(np.mean(values)), std, len(values)


def welch(a, b):
  """(mean of a - mean of b, its standard error sqrt(s_a^2/n_a +
  s_b^2/n_b), two-sided Welch p-value) of two lists of values; None when
  either has fewer than 2. Two rows without any spread get p 1 when equal,
  0 when not."""
  (ma, sa, na), (mb, sb, nb) = summary(a), summary(b)
  if na < 2 or nb < 2:
    return None
  se = math.sqrt(sa ** 2 / na + sb ** 2 / nb)
  if se == 0:
    return ma - mb, 0.0, 1.0 if ma == mb else 0.0
  p = scipy_stats.ttest_ind_from_stats(ma, sa, na, mb, sb, nb,
                                       equal_var=False).pvalue
  return ma - mb, se, float(p)


def separation(a, b):
  """"separated", "not separated" or "n/a (...)" for two lists of values."""
  test = welch(a, b)
  if test is None:
    return "n/a (fewer than 2 runs)"
  return "separated" if test[2] < SEPARATION_P else "not separated"


def difference(a, b):
  """"+d ± se (p=...)" of the mean of `a` minus the mean of `b`; "n/a
  (...)" with fewer than 2 values in either."""
  test = welch(a, b)
  if test is None:
    return separation(a, b)
  diff, se, p = test
  p_text = "p=%.3f" % p if p >= 0.001 else "p<0.001"
  return "%+.4f ± %.4f (%s)" % (diff, se, p_text)


def versus(a, b):
  """"+d ± se (p=...): verdict" of the mean of `a` minus the mean of `b`."""
  if welch(a, b) is None:
    return separation(a, b)
  return "%s: %s" % (difference(a, b), separation(a, b))


def holm(pvalues):
  """Holm's step-down adjustment of a family of p-values (same order):
  each adjusted p is the family-wise error rate at which it would be
  rejected, so `adjusted < SEPARATION_P` keeps the chance of any false
  "separated" in the family below SEPARATION_P."""
  order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
  adjusted = [None] * len(pvalues)
  running = 0.0
  for rank, i in enumerate(order):
    running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
    adjusted[i] = running
  return adjusted
