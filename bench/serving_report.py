"""The numbers and table of bench/serving.py: one side's rows from its
workers' round results (throughput, its spread over the rounds, latency
percentiles, tokenize and model time), the ratios between two sides, the
accuracy against gold labels, and the markdown table with its notes.

It imports nothing of the project, and neither TensorFlow nor PyTorch.
"""

import math
import statistics


def _percentile(values, q):
  """The nearest-rank q-th percentile of `values`."""
  ordered = sorted(values)
  rank = int(math.ceil(q / 100.0 * len(ordered)))
  return ordered[min(len(ordered), max(rank, 1)) - 1]


def summarise(rounds, num_sentences):
  """One side's rows, one per batch size, from its round results."""
  rows = []
  for batch_size in sorted(rounds[0]["times"], key=int):
    per_round = [r["times"][batch_size] for r in rounds]
    rates = [num_sentences / sum(t["e2e"]) for t in per_round]
    pooled = {k: [s for t in per_round for s in t[k]]
              for k in ("e2e", "tokenize", "model")}
    rate = statistics.median(rates)
    row = dict(
        batch_size=int(batch_size), sentences_per_s=rate,
        spread=100.0 * (max(rates) - min(rates)) / rate,
        p50_ms=1e3 * _percentile(pooled["e2e"], 50),
        p99_ms=1e3 * _percentile(pooled["e2e"], 99),
        tokenize_ms=None, model_ms=None, tokenize_share=None,
        padded_length=None, rounds_sentences_per_s=rates, calls_s=pooled)
    if pooled["tokenize"]:  # not a .tflite (its tokenizer is inside)
      tokenize, model = sum(pooled["tokenize"]), sum(pooled["model"])
      row.update(
          tokenize_ms=1e3 * statistics.median(pooled["tokenize"]),
          model_ms=1e3 * statistics.median(pooled["model"]),
          tokenize_share=100.0 * tokenize / (tokenize + model),
          padded_length=statistics.mean(t["padded_length"]
                                        for t in per_round))
    rows.append(row)
  return rows


def compare(rows, side="ours", other="transformers"):
  """{batch size: side / other ratios of throughput and p50}."""
  theirs = {r["batch_size"]: r for r in rows[other]}
  return {str(r["batch_size"]): dict(
      throughput=r["sentences_per_s"] /
      theirs[r["batch_size"]]["sentences_per_s"],
      p50_latency=r["p50_ms"] / theirs[r["batch_size"]]["p50_ms"])
          for r in rows[side]}


def accuracy(label_ids, labels, gold):
  """The share of `gold` (label strings) that `label_ids` (ids into
  `labels`) get right; None without gold labels."""
  if gold is None:
    return None
  return sum(labels[i] == g for i, g in zip(label_ids, gold)) / float(
      len(gold))


_COLUMNS = (("batch_size", "batch", "%d"),
            ("sentences_per_s", "sentences/s", "%.1f"),
            ("spread", "spread", "%.1f%%"), ("p50_ms", "p50 ms", "%.2f"),
            ("p99_ms", "p99 ms", "%.2f"),
            ("tokenize_ms", "tokenize ms", "%.2f"),
            ("model_ms", "model ms", "%.2f"),
            ("tokenize_share", "tokenize share", "%.0f%%"),
            ("padded_length", "padded length", "%.1f"),
            ("accuracy", "accuracy", "%.3f"), ("size_mb", "size MB", "%.1f"),
            ("peak_rss_mb", "peak RSS MB", "%.0f"))


def format_table(result):
  """The result (as `measure` of bench/serving.py returns it: its rows
  by side, in the order the sides ran) as a markdown table and notes."""
  lines = ["| side | %s |" % " | ".join(h for _, h, _ in _COLUMNS),
           "|---|%s" % ("---:|" * len(_COLUMNS))]
  for side, rows in result["rows"].items():
    for row in rows:
      lines.append("| %s | %s |" % (side, " | ".join(
          "-" if row[key] is None else fmt % row[key]
          for key, _, fmt in _COLUMNS)))
  lines.append("")
  for pair, ratios in result["ratios"].items():
    for batch_size, ratio in sorted(ratios.items(),
                                    key=lambda item: int(item[0])):
      lines.append("batch %s: %s throughput %.2fx, p50 latency %.2fx" % (
          batch_size, pair, ratio["throughput"], ratio["p50_latency"]))
  if result["labels_agree"] is not None:
    lines.append("labels of ours and transformers agree on %d of %d "
                 "sentences" % (result["labels_agree"],
                                result["num_sentences"]))
  lines.append("%s, %d threads, %d rounds, %s; %s" % (
      result["cpu"], result["threads"], result["rounds"], result["date"],
      "; ".join("%s: %s" % (side, version)
                for side, version in result["versions"].items())))
  return "\n".join(lines)
