"""A generator for an encoder-only source (BertModel, ElectraModel).

A generator of the discriminator's width starts from the source's bottom
layers; a narrower one stays fresh; a shared one (`untied_generator: false`)
is D's transformer. The source is a random transformers BertModel that the
module writes with save_pretrained.
"""

import numpy as np
import pytest

from interop import loader
from tests import interop_fixtures as ix

pytestmark = pytest.mark.slow

_BERT = dict(vocab_size=ix.VOCAB_SIZE, hidden_size=32, num_hidden_layers=2,
             num_attention_heads=2, intermediate_size=64,
             max_position_embeddings=32, hidden_act="gelu")
_SIZES = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
              intermediate_size=64, max_position_embeddings=32,
              hidden_act="gelu_exact")


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
  """(folder of a random transformers BertModel, vocab.txt)."""
  root = tmp_path_factory.mktemp("bert_source")
  vocab = ix.write_vocab(root / "vocab.txt")
  folder = root / "bert"
  ix.reference([{"op": "make", "class": "BertModel", "seed": 0,
                 "folder": str(folder), "config": _BERT}], root)
  return str(folder), vocab


def _load(bert_source, **hparams):
  folder, vocab = bert_source
  config = ix.config(vocab, model_hparam_overrides=dict(_SIZES),
                     embedding_size=32, **hparams)
  model = ix.build(config, randomise=False)
  lines = []
  report = loader.load_into(model, folder, log=lines.append)
  return model, report, lines


def _layer_weights(encoder, i):
  return [v.numpy() for v in encoder.transformer_layers[i].weights]


def test_full_width_generator_starts_from_the_bottom_layers(bert):
  model, report, lines = _load(bert, generator_hidden_size=1.0,
                               generator_layers=0.5,
                               generator_intermediate_size=64)
  gen, disc = model.generator.encoder, model.discriminator.encoder
  assert gen is not disc and len(gen.transformer_layers) == 1
  assert gen.transformer_layers[0].get_config()["num_attention_heads"] == 2
  for g, d in zip(_layer_weights(gen, 0), _layer_weights(disc, 0)):
    np.testing.assert_array_equal(g, d)
  # Equal values, separate variables: G's training does not move D.
  assert (gen.transformer_layers[0].weights[0].ref() !=
          disc.transformer_layers[0].weights[0].ref())
  assert any("start from the source's bottom 1 encoder layers" in line
             for line in lines)
  # Only the heads are new: D's replaced-token head and G's MLM head.
  fresh = report["fresh"]
  assert fresh and all("replaced_token_head" in n or "mlm_head" in n or
                       n.startswith("output_bias") for n in fresh), fresh


def test_narrow_generator_stays_fresh(bert):
  model, report, lines = _load(bert, generator_hidden_size=0.5)
  assert any("generator_encoder/layer_0" in n for n in report["fresh"])
  assert not any("bottom" in line for line in lines)
  assert model.generator.encoder.transformer_layers[0].get_config()[
      "num_attention_heads"] == 1  # D's head width of 16


def test_shared_generator_is_the_loaded_encoder(bert):
  model, report, _ = _load(bert, untied_generator=False,
                           generator_hidden_size=1.0)
  assert model.generator.encoder is model.discriminator.encoder
  assert not any("encoder/layer" in n for n in report["fresh"])


def test_an_encoder_only_source_trains_its_fresh_generator_faster(bert):
  from interop import convert  # pylint: disable=g-import-not-at-top
  found = convert.describe(bert[0])["hparams"]
  assert found["generator_lr_multiplier"] == (
      convert.ENCODER_ONLY_GENERATOR_LR_MULTIPLIER) == 10.0
  assert "generator_hidden_size" not in found  # ELECTRA's quarter width
