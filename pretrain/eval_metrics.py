"""Pre-training evaluation: ELECTRA's metrics and analyses (docs/method.md §13).

Pure numpy. The eval loop feeds one dict of numpy arrays per batch to
`PretrainEvalAccumulator.update`; `result()` gives plain floats/lists ready
for JSON (written, tabled and plotted by pretrain/eval_report.py). Shapes
(B batch, P max predictions per sequence, L sequence length):

  masked-LM positions [B, P] (need `masked_lm_weights`, 1 real / 0 padding):
    masked_lm_preds     int    argmax_v p_G(v) at the masked position
    masked_lm_ids       int    true token x_t
    mlm_loss_per_pos    float  MLM cross-entropy -log p_G(x_t), any gamma
    mlm_focal_loss_per_pos float  focal MLM loss (runs with focal_gamma > 0)
    gen_max_prob        float  max_v p_G(v)
    sampled_tokens      int    replacement x'_t put at the position
    est_log_disc_loss   float  log of the estimated L^_D(x'_t) (HP modes; up
                               to a constant per position, as HP-Dist's
                               log p_S / p_G)
    actual_log_disc_loss float log of the actual L_D(x'_t) (HP modes)
  token positions [B, L] (need `input_mask`, 1 real token / 0 padding):
    disc_probs          float  sigma(z_t)
    disc_labels         int    1 = replaced
    disc_loss_per_token float  per-token discriminator loss (with
                               `disc_labels`: also its means on replaced
                               and on original tokens)
    input_ids           int    the original tokens: their counts rank the
                               vocabulary by frequency, for the frequency
                               rank of replacements against the originals
                               (with `sampled_tokens`, `masked_lm_ids`)
    masked_position_mask int   1 at masked positions
    disc_correct_<src>  int    1 where D was right, replacements drawn from
                               <src> (DRAW_SOURCES: pG = p_G, pS = the
                               learned sampler p_S, uniform)
  token states [B, L, H] (need `input_mask`):
    disc_states         float  D's encoder's top-layer states of the original
                               text: how spread out they are
                               (`disc_state_cosine`, `disc_state_rank`,
                               util/state_geometry.py), over the first
                               MAX_STATE_TOKENS real tokens seen

Any subset may be given; a metric appears in `result()` only if its inputs were
seen. Where a metric is undefined (no positives for AUC, constant estimates for
a correlation, nothing counted) it is None and `result()["notes"]` says why.

The estimator's correlations are over log-space pairs: Spearman (the
primary figure, unchanged by any monotone map) and Pearson of the logs.

Choices, differing from the TF1 code where noted:
- AUC is exact (Mann-Whitney U with average ranks for ties) over real tokens
  only; the TF1 code used tf.metrics.auc (200 thresholds) over all positions
  with padding scored as (label 0, prob 0). Memory: ~5 bytes per real token.
- D predicts "replaced" when sigma(z_t) > 0.5 (the TF1 code's sign(logit)).
- disc_loss is the mean over all real tokens (token-weighted); the TF1 code
  averaged the per-example means, which weighs short examples' tokens more.
- Probabilities for the histogram are clipped to [0, 1] (float32 softmax can
  give 1.0000001); the last bin is [0.9, 1.0] including 1.0.
"""

import numpy as np

from pretrain.rank_stats import exact_auc
from pretrain.rank_stats import pearson
from pretrain.rank_stats import spearman
from util import state_geometry

NUM_HIST_BINS = 10
HIST_EDGES = np.linspace(0.0, 1.0, NUM_HIST_BINS + 1)

# The distributions replacements are drawn from, as keys name them
# (`model.samplers.Sampler.drawn_from`): p_G, the learned p_S, uniform.
DRAW_SOURCES = ("pG", "pS", "uniform")

_PRED_KEYS = ("masked_lm_preds", "masked_lm_ids", "masked_lm_weights",
              "mlm_loss_per_pos", "mlm_focal_loss_per_pos", "gen_max_prob",
              "sampled_tokens", "est_log_disc_loss", "actual_log_disc_loss")
_TOKEN_KEYS = (("disc_probs", "disc_labels", "input_mask",
                "disc_loss_per_token", "masked_position_mask", "input_ids") +
               tuple("disc_correct_" + src for src in DRAW_SOURCES))
_STATES_KEY = "disc_states"
KNOWN_KEYS = frozenset(_PRED_KEYS + _TOKEN_KEYS + (_STATES_KEY,))
# Enough tokens for a stable effective rank at ELECTRA-Base's width (768),
# few enough to keep in memory and decompose in about a second.
MAX_STATE_TOKENS = 4096
# D's accuracy under each source, on all real tokens and at masked ones.
_HARDNESS_METRICS = tuple("disc_accuracy_%s_%s" % (src, where)
                          for where in ("all", "masked")
                          for src in DRAW_SOURCES)

# Row order of the text outputs; other keys follow alphabetically.
MAIN_METRICS = (
    "masked_lm_accuracy", "masked_lm_loss", "masked_lm_focal_loss",
    "sampled_masked_lm_accuracy", "replacement_rate", "disc_loss", "disc_auc",
    "disc_accuracy", "disc_precision", "disc_recall", "disc_accuracy_masked",
    "disc_loss_replaced", "disc_loss_original", "replacement_log10_rank",
    "original_log10_rank", "disc_state_cosine", "disc_state_rank",
    "estimator_spearman", "estimator_pearson") + (
        _HARDNESS_METRICS) + (
    "num_masked", "num_tokens", "num_estimator_pairs")

# What each evaluation adds to the run's history (eval_report.
# append_history) and to TensorBoard's `eval` folder: the main metrics and
# D on temperature-1 draws (suffix `_t1`, pretrain/evaluation.py), so the
# curves show whether D leaves the early phase (docs/method.md §5.1).
CURVE_METRICS = MAIN_METRICS + (
    "disc_auc_t1", "disc_loss_replaced_t1", "disc_loss_original_t1",
    "replacement_log10_rank_t1", "original_log10_rank_t1", "temperature")


# Metrics that are a weighted mean sum(w * value) / sum(w).
_MEAN_METRICS = (
    "masked_lm_accuracy", "masked_lm_loss", "masked_lm_focal_loss",
    "sampled_masked_lm_accuracy", "disc_accuracy", "disc_accuracy_masked",
    "disc_loss", "disc_loss_replaced", "disc_loss_original") + (
        _HARDNESS_METRICS)


def _ratio(num, den, name, notes):
  if den == 0:
    notes.append("%s: undefined (nothing counted)" % name)
    return None
  return float(num) / float(den)


class PretrainEvalAccumulator(object):
  """Sums and keeps what the metrics need, over any number of eval batches."""

  def __init__(self):
    self._sums = {}        # name -> float/int running total
    self._seen = set()     # groups of metrics whose inputs were given
    self._hist = np.zeros(NUM_HIST_BINS, np.int64)
    self._auc_probs, self._auc_labels = [], []
    self._est, self._actual = [], []
    self._token_counts = np.zeros(0, np.int64)
    self._replaced_pairs = []  # [n, 2] (x'_t, x_t) where x'_t != x_t
    self._states = []  # [n, H] D's states at real tokens, n <= MAX_STATE_TOKENS

  def _add(self, name, value):
    self._sums[name] = self._sums.get(name, 0) + value

  def update(self, batch):
    """Adds one batch: a dict of arrays keyed as in the module docstring."""
    unknown = set(batch) - KNOWN_KEYS
    if unknown:
      raise ValueError("unknown eval keys %s; known: %s"
                       % (sorted(unknown), sorted(KNOWN_KEYS)))
    b = {k: np.asarray(v) for k, v in batch.items()}
    self._check_shapes(b, _PRED_KEYS, "masked_lm_weights")
    self._check_shapes(b, _TOKEN_KEYS, "input_mask")
    if any(k in b for k in _PRED_KEYS if k != "masked_lm_weights"):
      self._update_predictions(b)
    if any(k in b for k in _TOKEN_KEYS if k != "input_mask"):
      self._update_tokens(b)
    if _STATES_KEY in b:
      self._update_states(b)

  def _update_states(self, b):
    states, mask = b[_STATES_KEY], b.get("input_mask")
    if mask is None or states.shape[:2] != mask.shape:
      raise ValueError("eval key %r needs 'input_mask' of its first two "
                       "dimensions" % _STATES_KEY)
    left = MAX_STATE_TOKENS - sum(len(s) for s in self._states)
    if left > 0:
      self._states.append(states[mask > 0][:left].astype(np.float32))

  @staticmethod
  def _check_shapes(b, keys, mask_key):
    present = [k for k in keys if k in b]
    if not present or present == [mask_key]:
      return
    if mask_key not in b:
      raise ValueError("eval keys %s need %r" % (present, mask_key))
    for k in present:
      if b[k].shape != b[mask_key].shape:
        raise ValueError("eval key %r has shape %s but %r has %s"
                         % (k, b[k].shape, mask_key, b[mask_key].shape))

  def _mean(self, name, values, weights):
    """Accumulates sum(weights * values) and sum(weights) for metric `name`."""
    self._seen.add(name)
    values = np.where(weights > 0, values, 0).astype(np.float64)
    self._add(name, float((weights * values).sum()))
    self._add(name + "/den", float(weights.sum()))

  def _update_predictions(self, b):
    real = b["masked_lm_weights"] > 0
    w = np.where(real, b["masked_lm_weights"], 0).astype(np.float64)
    self._add("num_masked", int(real.sum()))
    if (("masked_lm_preds" in b or "sampled_tokens" in b)
        and "masked_lm_ids" not in b):
      raise ValueError("masked_lm_preds/sampled_tokens need masked_lm_ids")
    if "masked_lm_preds" in b:
      self._mean("masked_lm_accuracy",
                 b["masked_lm_preds"] == b["masked_lm_ids"], w)
    if "mlm_loss_per_pos" in b:
      self._mean("masked_lm_loss", b["mlm_loss_per_pos"], w)
    if "mlm_focal_loss_per_pos" in b:
      self._mean("masked_lm_focal_loss", b["mlm_focal_loss_per_pos"], w)
    if "sampled_tokens" in b:
      self._mean("sampled_masked_lm_accuracy",
                 b["sampled_tokens"] == b["masked_lm_ids"], w)
      replaced = real & (b["sampled_tokens"] != b["masked_lm_ids"])
      self._replaced_pairs.append(np.stack(
          [b["sampled_tokens"][replaced], b["masked_lm_ids"][replaced]], -1))
    if "gen_max_prob" in b:
      self._seen.add("hist")
      p = np.clip(b["gen_max_prob"][real].astype(np.float64), 0.0, 1.0)
      self._hist += np.histogram(p, bins=HIST_EDGES)[0]
    est, actual = "est_log_disc_loss", "actual_log_disc_loss"
    if (est in b) != (actual in b):
      raise ValueError("%s and %s go together" % (est, actual))
    if est in b:
      self._seen.add("estimator")
      self._est.append(b[est][real].astype(np.float64))
      self._actual.append(b[actual][real].astype(np.float64))

  def _update_tokens(self, b):
    real = (b["input_mask"] > 0).astype(np.float64)
    masked = None
    if "masked_position_mask" in b:
      masked = real * (b["masked_position_mask"] > 0)
    if ("disc_probs" in b) != ("disc_labels" in b):
      raise ValueError("disc_probs and disc_labels go together")
    if "disc_probs" in b or "disc_loss_per_token" in b:
      self._add("num_tokens", int(real.sum()))
    if "disc_probs" in b:
      self._seen.add("disc")
      keep = real > 0
      probs = b["disc_probs"].astype(np.float32)
      labels = b["disc_labels"] > 0
      preds = probs > 0.5
      self._auc_probs.append(probs[keep])
      self._auc_labels.append(labels[keep])
      self._add("disc_tp", int((preds & labels & keep).sum()))
      self._add("disc_fp", int((preds & ~labels & keep).sum()))
      self._add("disc_fn", int((~preds & labels & keep).sum()))
      self._mean("disc_accuracy", preds == labels, real)
      if masked is not None:
        self._mean("disc_accuracy_masked", preds == labels, masked)
    if "disc_loss_per_token" in b:
      self._mean("disc_loss", b["disc_loss_per_token"], real)
      if "disc_labels" in b:
        replaced = (b["disc_labels"] > 0).astype(np.float64)
        self._mean("disc_loss_replaced", b["disc_loss_per_token"],
                   real * replaced)
        self._mean("disc_loss_original", b["disc_loss_per_token"],
                   real * (1.0 - replaced))
    if "input_ids" in b:
      self._seen.add("frequency")
      counts = np.bincount(b["input_ids"][real > 0].astype(np.int64))
      size = max(counts.size, self._token_counts.size)
      self._token_counts = (np.pad(self._token_counts,
                                   (0, size - self._token_counts.size)) +
                            np.pad(counts, (0, size - counts.size)))
    for src in DRAW_SOURCES:
      key = "disc_correct_" + src
      if key not in b:
        continue
      if masked is None:
        raise ValueError("%s needs masked_position_mask" % key)
      self._mean("disc_accuracy_%s_all" % src, b[key] > 0, real)
      self._mean("disc_accuracy_%s_masked" % src, b[key] > 0, masked)

  def result(self):
    """Metrics so far: {name: float|int|None|dict}, plus "notes" if any."""
    s, seen, notes, out = self._sums, self._seen, [], {}
    for count in ("num_masked", "num_tokens"):
      if count in s:
        out[count] = s[count]
    for name in _MEAN_METRICS:
      if name in seen:
        out[name] = _ratio(s[name], s[name + "/den"], name, notes)
    if "sampled_masked_lm_accuracy" in out:
      acc = out["sampled_masked_lm_accuracy"]
      out["replacement_rate"] = None if acc is None else 1.0 - acc
    if "hist" in seen:
      total = int(self._hist.sum())
      out["gen_max_prob_histogram"] = {
          "bin_edges": [round(float(e), 6) for e in HIST_EDGES],
          "counts": [int(c) for c in self._hist],
          "fractions": [float(c) / total if total else 0.0 for c in self._hist]}
      if not total:
        notes.append("gen_max_prob_histogram: no masked positions")
    if "estimator" in seen:
      est, act = np.concatenate(self._est), np.concatenate(self._actual)
      out["num_estimator_pairs"] = int(est.size)
      out["estimator_pearson"] = pearson(est, act)
      out["estimator_spearman"] = spearman(est, act)
      if out["estimator_pearson"] is None:
        notes.append("estimator correlations: undefined (fewer than 2 pairs "
                     "or constant estimated/actual loss)")
    if "frequency" in seen and self._replaced_pairs:
      out.update(self._replacement_ranks())
    tokens = sum(len(s) for s in self._states)
    if tokens >= 2:
      out["disc_state_cosine"], out["disc_state_rank"] = state_geometry.spread(
          np.concatenate(self._states))
    elif self._states:
      notes.append("disc_state_cosine, disc_state_rank: undefined (fewer "
                   "than 2 real tokens)")
    if "disc" in seen:
      tp, fp, fn = s["disc_tp"], s["disc_fp"], s["disc_fn"]
      out["disc_precision"] = _ratio(tp, tp + fp, "disc_precision (no token "
                                     "predicted replaced)", notes)
      out["disc_recall"] = _ratio(tp, tp + fn,
                                  "disc_recall (no replaced token)", notes)
      out["disc_auc"] = exact_auc(np.concatenate(self._auc_probs),
                                  np.concatenate(self._auc_labels))
      if out["disc_auc"] is None:
        notes.append("disc_auc: undefined (all real tokens have one label)")
    if notes:
      out["notes"] = notes
    return out

  def _replacement_ranks(self):
    """Mean log10 frequency rank (1 = the eval data's most frequent
    token; unseen tokens rank after every seen one) of the replacements
    x'_t and of the tokens x_t they replaced: a generator close to the
    unigram distribution gives the two about equal, a flat one (high
    temperature, uniform draws) replacements of far higher rank, which D
    can spot without context."""
    pairs = np.concatenate(self._replaced_pairs).astype(np.int64)
    if not pairs.size:
      return {}
    size = max(self._token_counts.size, int(pairs.max()) + 1)
    counts = np.pad(self._token_counts, (0, size - self._token_counts.size))
    ranks = np.empty(size, np.float64)
    ranks[np.argsort(-counts, kind="stable")] = np.arange(1, size + 1)
    ranks[counts == 0] = int((counts > 0).sum()) + 1
    log_ranks = np.log10(ranks[pairs])
    return dict(replacement_log10_rank=float(log_ranks[:, 0].mean()),
                original_log10_rank=float(log_ranks[:, 1].mean()))
