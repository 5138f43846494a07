"""The share of a task's training tokens that are [UNK], checked before
training.

A model fine-tuned on text its vocabulary does not cover learns from
[UNK] alone and ends at the majority class without a word of warning. The
usual cause is casing: a cased vocabulary (upper-case letters only, or
both cases) read with `do_lower_case` true. Above `WARN_FRACTION` one line
names the rate and the likely cause; above hparam `max_unk_fraction` the
run stops before any model is built.
"""

import numpy as np

from text import casing
from util.errors import UserError

WARN_FRACTION = 0.05


def unknown_fraction(features, tokenizer):
  """The share of [UNK] among the text tokens of `features` (`input_ids`
  and `input_mask` [n, seq_len]; special tokens and padding left out);
  0 when there are none."""
  ids = features["input_ids"]
  special = sorted(set(tokenizer.special_ids) - {tokenizer.unk_id})
  text = features["input_mask"].astype(bool) & ~np.isin(ids, special)
  total = int(text.sum())
  return float((ids[text] == tokenizer.unk_id).sum()) / total if total else 0.0


def _cause(tokenizer):
  if getattr(tokenizer, "kind", None) != "wordpiece":
    return ("the vocabulary was made for another language or domain: use "
            "the vocabulary the model was trained with")
  return casing.unknown_hint(tokenizer.vocab, tokenizer.do_lower_case,
                             "set hparam \"do_lower_case\": false",
                             "set hparam \"do_lower_case\": true")


def check_unknown_rate(task_name, features, tokenizer, max_fraction,
                       log=print):
  """Warns (one line) or stops on a training text that is mostly [UNK].

  Args:
    task_name: named in the messages.
    features: the task's training features (see `unknown_fraction`).
    tokenizer: the project's tokenizer they were made with.
    max_fraction: hparam max_unk_fraction: above it, a UserError.
    log: gets the warning line.
  Returns the fraction.
  """
  fraction = unknown_fraction(features, tokenizer)
  if fraction <= min(WARN_FRACTION, max_fraction):
    return fraction
  lower = getattr(tokenizer, "do_lower_case", None)
  what = "%.1f%% of task %s's training tokens are [UNK] (vocabulary %s%s)" % (
      100 * fraction, task_name, tokenizer.vocab_file,
      "" if lower is None else ", do_lower_case %s" % str(lower).lower())
  if fraction > max_fraction:
    raise UserError("%s: likely %s. Nothing was trained; set hparam "
                    "\"max_unk_fraction\" to 1 to train anyway." % (
                        what, _cause(tokenizer)))
  log("warning: %s; likely %s." % (what, _cause(tokenizer)))
  return fraction
