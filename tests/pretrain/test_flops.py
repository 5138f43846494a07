"""The analytic FLOP count of a pre-training step, against hand arithmetic."""

from configure import PretrainingConfig
from tests import pretrain_fixtures as pf

# h 32, 1 layer, ffn 64, embedding 32 (no projection), seq 8, 2 predictions,
# vocab 100, batch 4.
_SHAPE = dict(model_hparam_overrides=dict(
    hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
    intermediate_size=64), embedding_size=32, vocab_size=100,
    max_seq_length=8, max_predictions_per_seq=2, train_batch_size=4,
    untied_generator=False, generator_hidden_size=1.0)


def _encoder(h=32, seq=8, ffn=64):
  return 2 * 4 * h * h * seq + 2 * 2 * seq * seq * h + 2 * 2 * h * ffn * seq


def test_electra_step_counts_both_transformers_and_heads():
  config = PretrainingConfig("m", "/d", **_SHAPE)
  rtd_head = 8 * (2 * 32 * 32 + 2 * 32)
  mlm_head = 2 * (2 * 32 * 32 + 2 * 32 * 100)
  expected = 3 * 4 * (2 * _encoder() + rtd_head + mlm_head)
  assert pf.step_flops(config) == expected


def test_plain_mlm_step_counts_no_discriminator():
  config = PretrainingConfig("m", "/d", electra_objective=False, **_SHAPE)
  mlm_head = 2 * (2 * 32 * 32 + 2 * 32 * 100)
  assert pf.step_flops(config) == 3 * 4 * (_encoder() + mlm_head)


def test_sampling_heads_count_the_backward_their_loss_takes():
  """HP-Dist differentiates its scores over the whole vocabulary: a second
  head like the MLM head. HP-Loss reads them at the drawn token only: its
  [P, vocab] projection is counted forward, with a dot per position."""
  mlm_head = 2 * (2 * 32 * 32 + 2 * 32 * 100)
  base = 3 * 4 * (2 * _encoder() + 8 * (2 * 32 * 32 + 2 * 32) + mlm_head)
  hp_dist = PretrainingConfig("m", "/d", sampling="hp_dist", **_SHAPE)
  assert pf.step_flops(hp_dist) == base + 3 * 4 * mlm_head
  hp_loss = PretrainingConfig("m", "/d", sampling="hp_loss", **_SHAPE)
  sampling_head = 3 * 2 * (2 * 32 * 32) + 2 * (2 * 32 * 100) + 3 * 2 * 2 * 32
  assert pf.step_flops(hp_loss) == base + 4 * sampling_head
