"""Analytic FLOPs of one pre-training step (as ELECTRA's flops_computation).

Counts multiply-adds as 2 FLOPs, the dense matmuls and attention of both
transformers, the heads and the embedding projections; a training step is
forward + backward = 3x the forward pass, except for HP-Loss's sampling
scores over the vocabulary, which have no backward pass (its loss reads them
at the drawn token only). bench/matmul_floor.py checks these counts against
the matmuls of the traced step. Element-wise work (softmax,
LayerNorm, GELU, sampling) is ignored, as it is small next to the matmuls.

The peak FLOP/s that MFU divides by is pretrain/peak.py's
(`peak_flops_per_second`, re-exported here).
"""

import functools

from model import samplers
from pretrain.peak import peak_flops_per_second as peak_flops_per_second  # pylint: disable=unused-import,useless-import-alias


def _encoder_forward(h, seq, num_layers, ffn, emb):
  """Forward FLOPs of one encoder over one sequence."""
  per_layer = (2 * 4 * h * h * seq         # q, k, v and output projections
               + 2 * 2 * seq * seq * h      # scores and weighted values
               + 2 * 2 * h * ffn * seq)     # feed-forward
  projection = 2 * emb * h * seq if emb != h else 0
  return num_layers * per_layer + projection


def _vocab_head(h, emb, vocab, positions, projection_backward=True):
  """Training FLOPs of one vocabulary head (transform and projection).

  Without `projection_backward` the [positions, vocab] projection runs
  forward only (HP-Loss's scores: its loss reads u at the drawn token, a
  dot product per position).
  """
  transform = 3 * positions * 2 * h * emb
  if projection_backward:
    return transform + 3 * positions * 2 * emb * vocab
  return transform + positions * 2 * emb * vocab + 3 * positions * 2 * emb


def pretraining_step_flops(network, objective, masking, batch_size):
  """Training FLOPs for one global batch.

  Args:
    network: a configure_specs.NetworkSpec (both networks' sizes).
    objective: a configure_specs.ObjectiveSpec (`electra_objective`,
      `sampling`: the parts that run).
    masking: a configure_specs.MaskingSpec (tokens and masked positions of
      an example).
    batch_size: the examples of the global batch (`train_batch_size`).
  """
  d = network.network_hparams("discriminator")
  g = network.network_hparams("generator")
  seq, preds = masking.max_seq_length, masking.max_predictions_per_seq
  emb = d["embedding_size"]
  forward = 0
  if objective.electra_objective:  # A plain MLM runs no discriminator.
    forward += _encoder_forward(d["hidden_size"], seq, d["num_hidden_layers"],
                                d["intermediate_size"], emb)
    forward += seq * (2 * d["hidden_size"] * d["hidden_size"] +
                      2 * d["hidden_size"])                 # RTD head
  forward += _encoder_forward(g["hidden_size"], seq, g["num_hidden_layers"],
                              g["intermediate_size"], g["embedding_size"])
  head = functools.partial(_vocab_head, g["hidden_size"],
                           g["embedding_size"], g["vocab_size"], preds)
  training = 3 * forward + head()  # the MLM head
  sampler = samplers.sampler_class(objective.sampling)
  if sampler.learns:
    training += head(projection_backward=sampler.scores_backward_over_vocab)
  return training * batch_size
