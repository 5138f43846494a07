"""How spread out a start's token states are, beside a fresh encoder's.

A weak pre-trained start can be worse than random initialisation for
fine-tuning (docs/finetuning.md). Its token states show why: measured on
256 movie-snippet sentences, the 1,500-step from-scratch ELECTRA of the
cpu_curriculum study maps tokens to states whose mean pairwise cosine is
0.85 (a fresh encoder of its shape: 0.35) and whose effective rank is 56
(fresh: 112); its [CLS] states span an effective rank of 15 (fresh: 78).
The released all-MiniLM-L6-v2 is the other way round: cosine 0.08 and rank
323 against its fresh shape's 0.37 and 292. Fine-tuning logs these numbers
for every pre-trained start, and calls a start "collapsed" when its states
are less spread than fresh ones by both measures (util/state_geometry.py).
"""

import numpy as np

from finetune import reinit
from util import state_geometry

# How many text rows the measure reads (their real tokens, [PAD] excluded).
NUM_ROWS = 64


def token_state_geometry(encoder, inputs):
  """The mean pairwise cosine and the effective rank of `encoder`'s token
  states.

  Args:
    encoder: a built `ElectraEncoder`.
    inputs: a dict of `input_ids`, `input_mask`, `segment_ids` [batch, seq]
      int32 (real texts; the first NUM_ROWS rows are read).

  Returns: (mean cosine over distinct token pairs, effective rank).
  """
  rows = {k: v[:NUM_ROWS] for k, v in inputs.items()}
  states = np.asarray(encoder(rows, training=False), np.float64)
  return state_geometry.spread(states[np.asarray(rows["input_mask"]) > 0])


def describe_start(encoder, inputs):
  """One line comparing `encoder`'s token states with a fresh encoder's of
  its shape (built under the current Keras seed), and whether the start is
  collapsed. Returns (line, measures dict)."""
  cosine, rank = token_state_geometry(encoder, inputs)
  fresh_cosine, fresh_rank = token_state_geometry(
      reinit.fresh_like(encoder, inputs), inputs)
  collapsed = cosine > fresh_cosine and rank < fresh_rank
  line = ("start: token states' mean cosine %.2f, effective rank %.1f (a "
          "fresh encoder: %.2f, %.1f)%s" % (
              cosine, rank, fresh_cosine, fresh_rank,
              "; collapsed: less spread than random initialisation; from "
              "a random embedding table such starts fine-tuned below it on "
              "500 sentences, and level with it on 15,000 at lr 1e-3 "
              "(docs/finetuning.md)"
              if collapsed else ""))
  return line, dict(cosine=cosine, effective_rank=rank,
                    fresh_cosine=fresh_cosine, fresh_effective_rank=fresh_rank,
                    collapsed=bool(collapsed))
