"""Truncating texts longer than max_seq_length: keep the head, the tail, or
both ends.

The model input is `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, so one text
has `max_seq_length - 2` token slots and a pair `max_seq_length - 3`. A pair
shares its slots as `preprocessing.truncate_pair` does (the longer text loses
tokens first, so the shorter keeps all of its own if it fits in half the
slots); `segment_lengths` gives the same lengths in closed form. Each text is
then cut to its length by the rule:

  head       keep the first tokens (BERT's and the GLUE tasks' behaviour);
  tail       keep the last tokens;
  head+tail  keep the first quarter and the last three quarters of the
             length (rounded down for the head), as Sun et al. 2019 ("How to
             Fine-Tune BERT for Text Classification?": 128 head + 382 tail
             tokens of 510) found best for long reviews.
"""

from finetune import preprocessing

RULES = ("head", "tail", "head+tail")
DEFAULT_RULE = "head"
# head+tail: the share of a text's kept length taken from its beginning.
HEAD_SHARE = 0.25

DESCRIPTIONS = {"head": "kept the first tokens",
                "tail": "kept the last tokens",
                "head+tail": "kept the first 1/4 and the last 3/4"}


def segment_lengths(length_a, length_b, budget):
  """Tokens kept of each text when `length_a + length_b` must fit in `budget`
  (the lengths `preprocessing.truncate_pair` leaves; `length_b` 0 for one
  text)."""
  if length_a + length_b <= budget:
    return length_a, length_b
  if length_b == 0:
    return budget, 0
  half_a = budget // 2
  half_b = budget - half_a
  if length_a <= half_a:
    return length_a, budget - length_a
  if length_b <= half_b:
    return budget - length_b, length_b
  return half_a, half_b


def keep_tokens(ids, length, rule):
  """`length` of the tokens `ids` as `rule` keeps them (all if they fit)."""
  ids = list(ids)
  if len(ids) <= length:
    return ids
  if rule == "head":
    return ids[:length]
  if rule == "tail":
    return ids[len(ids) - length:]
  if rule == "head+tail":
    head = int(length * HEAD_SHARE)
    tail = length - head
    return ids[:head] + ids[len(ids) - tail:]
  raise ValueError("unknown truncation rule %r; use one of %s" % (
      rule, ", ".join(RULES)))


def truncate_texts(ids_a, ids_b, max_seq_length, rule):
  """(ids_a, ids_b) cut so `[CLS] a [SEP] (b [SEP])` fits max_seq_length;
  `ids_b` None for one text."""
  pair = ids_b is not None
  budget = max_seq_length - (3 if pair else 2)
  length_a, length_b = segment_lengths(len(ids_a), len(ids_b) if pair else 0,
                                       budget)
  return (keep_tokens(ids_a, length_a, rule),
          keep_tokens(ids_b, length_b, rule) if pair else None)


def encode_truncated(tokenizer, ids_a, ids_b, max_seq_length, rule):
  """`preprocessing.encode_pair` with the truncation `rule`.

  Returns (input_ids, input_mask, segment_ids, number of tokens cut).
  """
  kept_a, kept_b = truncate_texts(ids_a, ids_b, max_seq_length, rule)
  lost = len(ids_a) - len(kept_a)
  if ids_b is not None:
    lost += len(ids_b) - len(kept_b)
  ids, mask, segments = preprocessing.encode_pair(tokenizer, kept_a, kept_b,
                                                  max_seq_length)
  return ids, mask, segments, lost


class TruncationStats(object):
  """Counts, over one split, the examples cut and the text tokens lost."""

  def __init__(self):
    self.examples = 0
    self.truncated = 0
    self.tokens = 0
    self.tokens_lost = 0

  def add(self, num_tokens, num_lost):
    self.examples += 1
    self.tokens += num_tokens
    self.tokens_lost += num_lost
    self.truncated += int(num_lost > 0)

  @property
  def share_lost(self):
    """Percent of the split's text tokens cut."""
    return 100.0 * self.tokens_lost / max(self.tokens, 1)

  def as_dict(self):
    return dict(examples=self.examples, truncated=self.truncated,
                tokens=self.tokens, tokens_lost=self.tokens_lost)

  def summary(self, max_seq_length, rule):
    """One log line: how many examples were cut and the share of tokens
    lost."""
    return ("%d of %d examples (%.1f%%) longer than max_seq_length %d were "
            "truncated (truncation %r: %s); %d of %d text tokens (%.2f%%) "
            "cut" % (self.truncated, self.examples,
                     100.0 * self.truncated / max(self.examples, 1),
                     max_seq_length, rule, DESCRIPTIONS[rule],
                     self.tokens_lost, self.tokens, self.share_lost))
