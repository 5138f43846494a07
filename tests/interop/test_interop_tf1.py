"""Google TF1 layout: round trip, a hand-written Google checkpoint, and
transformers' own TF1-ELECTRA converter reading our export."""

import json

import numpy as np
import pytest
import tensorflow as tf

from interop import loader
from tests import interop_fixtures as ix
from util.errors import UserError

pytestmark = pytest.mark.slow


@pytest.fixture
def vocab(tmp_path):
  return ix.write_vocab(tmp_path / "vocab.txt")


def _no_log(_):
  pass


def test_round_trip_ours_tf1_ours_is_exact_with_sampling_head(tmp_path, vocab):
  config = ix.config(vocab, sampling="hp_loss", untied_mlm_output=True)
  source = ix.build(config, seed=1)
  prefix = ix.export_tf1(source, config, str(tmp_path / "tf1"), step=7,
                         log=_no_log)
  names = dict(tf.train.list_variables(prefix))
  assert "electra/encoder/layer_1/attention/self/query/kernel" in names
  assert names["generator/encoder/layer_0/intermediate/dense/kernel"] == [
      8, 32]
  assert "generator_predictions/output_bias" in names
  assert tf.train.load_variable(prefix, "global_step") == 7
  assert tf.train.latest_checkpoint(str(tmp_path / "tf1")) == prefix
  target = ix.build(config, seed=2)
  report = loader.load_into(target, str(tmp_path / "tf1"), log=_no_log)
  assert report["kind"] == "tf1" and report["fresh"] == []
  assert report["unused"] == []
  assert len(source.variables) == len(target.variables) > 0
  for a, b in zip(source.variables, target.variables):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.name)


def test_google_named_tf1_checkpoint_loads(tmp_path, vocab):
  values = ix.write_google_checkpoint(tmp_path)
  config = ix.config(vocab)
  model = ix.build(config, randomise=False)
  # No bert_config.json: the heads come from hparams (unchecked); the other
  # sizes from the shapes.
  lines = []
  report = loader.load_into(model, str(tmp_path), log=lines.append)
  assert report["fresh"] == [] and report["unused"] == []
  enc = model.discriminator.encoder
  layer = enc.transformer_layers[1]
  query = [v for v in layer.weights if "query/kernel" in v.name][0]
  np.testing.assert_array_equal(
      query.numpy().reshape(32, 32),
      values["electra/encoder/layer_1/attention/self/query/kernel"])
  np.testing.assert_array_equal(
      model.generator.mlm_head.output_bias.numpy(),
      values["generator_predictions/output_bias"])
  np.testing.assert_array_equal(
      enc.embeddings.type_embeddings.embeddings.numpy(),
      values["electra/embeddings/token_type_embeddings"])

  # With a bert_config.json beside it, its head count is checked.
  with open(tmp_path / "bert_config.json", "w") as f:
    json.dump({"num_attention_heads": 4, "hidden_act": "gelu"}, f)
  with pytest.raises(UserError, match=r"num_attention_heads: 4 in the "
                     r"source, 2 in this model"):
    loader.load_into(model, str(tmp_path), log=_no_log)
  # Other shapes than the hparams: an error naming both.
  small = ix.build(ix.config(vocab, model_hparam_overrides=dict(
      ix.pf.TINY_MODEL, intermediate_size=48)), randomise=False)
  (tmp_path / "bert_config.json").unlink()
  with pytest.raises(UserError, match=r"intermediate_size: 64 in the "
                     r"source, 48 in this model"):
    loader.load_into(small, str(tmp_path), log=_no_log)


def test_transformers_tf1_converter_reads_our_export(tmp_path, vocab):
  config = ix.config(vocab)
  model = ix.build(config)
  prefix = ix.export_tf1(model, config, str(tmp_path / "tf1"),
                         log=_no_log)
  feats = ix.features()
  inputs = ix.save_inputs(tmp_path / "in.npz", feats)
  sizes = dict(vocab_size=ix.VOCAB_SIZE, embedding_size=16,
               max_position_embeddings=32, hidden_act="gelu_new")
  jobs, outs = [], {}
  for role, cls, hidden, heads, inter in (
      ("discriminator", "ElectraForPreTraining", 32, 2, 64),
      ("generator", "ElectraForMaskedLM", 8, 1, 32)):
    folder = str(tmp_path / role)
    jobs.append({"op": "tf1", "class": cls, "checkpoint": prefix,
                 "role": role, "folder": folder,
                 "config": dict(sizes, hidden_size=hidden,
                                num_hidden_layers=2, num_attention_heads=heads,
                                intermediate_size=inter)})
    outs[role] = str(tmp_path / (role + ".npz"))
    jobs.append(ix.run_job(cls, folder, inputs, outs[role]))
  ref = ix.reference(jobs, tmp_path)
  mine = ix.ours(model, feats)
  disc, gen = ref[outs["discriminator"]], ref[outs["generator"]]
  assert ix.max_diff(mine["disc_logits"], disc["logits"]) < 1e-4
  assert ix.max_diff(mine["disc_hidden"], disc["hidden"]) < 1e-4
  assert ix.max_diff(mine["gen_hidden"], gen["hidden"]) < 1e-4
  assert ix.max_diff(mine["gen_logits"], gen["logits"]) < 1e-4
