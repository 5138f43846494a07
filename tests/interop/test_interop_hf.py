"""Hugging Face interop against the real transformers (PyTorch classes).

Export: our tiny pre-training model -> OUT/discriminator, OUT/generator;
transformers' ElectraForPreTraining / ElectraForMaskedLM load them with no
missing or unexpected keys and compute our outputs on padded input.
Load: random transformers ELECTRA and BERT models (save_pretrained) load
into ours and compute theirs. Round trip ours -> hf -> ours is exact.
"""

import numpy as np
import pytest

from interop import loader
from tests import finetune_fixtures as ff
from tests import interop_fixtures as ix
from tests import pretrain_fixtures as pretrain_fx
from util.errors import UserError

TOL = 1e-4
pytestmark = pytest.mark.slow


def _electra_config(hidden, layers, heads, intermediate):
  return dict(vocab_size=ix.VOCAB_SIZE, embedding_size=16, hidden_size=hidden,
              num_hidden_layers=layers, num_attention_heads=heads,
              intermediate_size=intermediate, max_position_embeddings=32,
              hidden_act="gelu")


_BERT_CONFIG = dict(vocab_size=ix.VOCAB_SIZE, hidden_size=32,
                    num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=32,
                    hidden_act="gelu")
# (class, folder below the module's directory, config of a random model or
# None for our export).
_FOLDERS = {
    "ours_d": ("ElectraForPreTraining", "out/discriminator", None),
    "ours_g": ("ElectraForMaskedLM", "out/generator", None),
    "hf_d": ("ElectraForPreTraining", "pair/discriminator",
             _electra_config(32, 2, 2, 64)),
    "hf_g": ("ElectraForMaskedLM", "pair/generator",
             _electra_config(8, 2, 1, 32)),
    "bert_mlm": ("BertForMaskedLM", "bert_mlm", _BERT_CONFIG),
    "bert": ("BertModel", "bert", _BERT_CONFIG),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
  """Our export and transformers' random models, with transformers' outputs.

  One reference process for the module (importing torch takes long).
  Returns dict: root, vocab, model (the exported one), feats, ref
  {_FOLDERS key: outputs}.
  """
  root = tmp_path_factory.mktemp("interop_hf")
  vocab = ix.write_vocab(root / "vocab.txt")
  # Untied MLM output table: generator_lm_head.weight is exported too.
  config = ix.config(vocab, untied_mlm_output=True)
  model = ix.build(config)
  ix.export_hf(model, config, str(root / "out"), log=lambda _: None)
  feats = ix.features()
  inputs = ix.save_inputs(root / "in.npz", feats)
  jobs = [{"op": "make", "class": cls, "seed": i, "folder": str(root / sub),
           "config": cfg}
          for i, (cls, sub, cfg) in enumerate(_FOLDERS.values()) if cfg]
  jobs += [ix.run_job(cls, root / sub, inputs, root / (key + ".npz"))
           for key, (cls, sub, _) in _FOLDERS.items()]
  outputs = ix.reference(jobs, root)
  ref = {key: outputs[str(root / (key + ".npz"))] for key in _FOLDERS}
  return dict(root=root, vocab=vocab, model=model, feats=feats, ref=ref)


def test_export_loads_in_transformers_with_equal_outputs(world):
  ref = world["ref"]
  assert world["feats"]["input_mask"].min() == 0  # Padding is checked too.
  mine = ix.ours(world["model"], world["feats"])
  assert ix.loaded_cleanly(ref["ours_d"]) and ix.loaded_cleanly(ref["ours_g"])
  assert ix.max_diff(mine["disc_logits"], ref["ours_d"]["logits"]) < TOL
  assert ix.max_diff(mine["disc_hidden"], ref["ours_d"]["hidden"]) < TOL
  assert ix.max_diff(mine["gen_hidden"], ref["ours_g"]["hidden"]) < TOL
  assert ix.max_diff(mine["gen_logits"], ref["ours_g"]["logits"]) < TOL
  # AutoTokenizer reads the tokenizer files: [CLS] w1 w2 w3 [SEP], lower-cased.
  for key in ("ours_d", "ours_g"):
    assert list(ref[key]["tokenized"]) == [2, 6, 7, 8, 3]


def test_round_trip_ours_hf_ours_is_exact(world, tmp_path):
  config = ix.config(world["vocab"])
  source = ix.build(config, seed=1)
  ix.export_hf(source, config, str(tmp_path / "out"), log=lambda _: None)
  target = ix.build(config, seed=2)
  report = loader.load_into(target, str(tmp_path / "out"), log=lambda _: None)
  assert report["kind"] == "hf_pair" and report["fresh"] == []
  # The models' top-level scopes differ; compare variable by variable.
  assert len(source.variables) == len(target.variables) > 0
  for a, b in zip(source.variables, target.variables):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.name)


def test_transformers_electra_loads_into_ours(world):
  ref, feats = world["ref"], world["feats"]
  pair = str(world["root"] / "pair")
  # HF "gelu" is the exact erf GELU: our "gelu_exact".
  config = ix.config(world["vocab"], model_hparam_overrides=dict(
      ix.pf.TINY_MODEL, hidden_act="gelu_exact"),
                     untied_generator_embeddings=True)
  model = ix.build(config, randomise=False)
  report = loader.load_into(model, pair, log=lambda _: None)
  assert report["fresh"] == [] and report["unused"] == []
  mine = ix.ours(model, feats)
  assert ix.max_diff(mine["disc_logits"], ref["hf_d"]["logits"]) < TOL
  assert ix.max_diff(mine["disc_hidden"], ref["hf_d"]["hidden"]) < TOL
  assert ix.max_diff(mine["gen_hidden"], ref["hf_g"]["hidden"]) < TOL
  assert ix.max_diff(mine["gen_logits"], ref["hf_g"]["logits"]) < TOL

  # Sizes come from config.json: other hparams are an error naming both.
  other = ix.build(ix.config(world["vocab"], untied_generator_embeddings=True,
                             model_hparam_overrides=dict(
                                 ix.pf.TINY_MODEL, intermediate_size=48,
                                 hidden_act="gelu_exact")), randomise=False)
  with pytest.raises(UserError, match=r"intermediate_size: 64 in the source, "
                     r"48 in this model"):
    loader.load_into(other, pair, log=lambda _: None)


def test_transformers_bert_loads_into_ours(world):
  ref, feats = world["ref"], world["feats"]
  sizes = dict(ix.pf.TINY_MODEL, hidden_act="gelu_exact")
  # A generator sharing D's transformer: BERT's MLM head fits its head.
  config = ix.config(world["vocab"], model_hparam_overrides=sizes,
                     embedding_size=32,
                     untied_generator=False, generator_hidden_size=1.0)
  model = ix.build(config, randomise=False)
  lines = []
  report = loader.load_into(model, str(world["root"] / "bert_mlm"),
                            log=lines.append)
  mine = ix.ours(model, feats)
  assert ix.max_diff(mine["disc_hidden"], ref["bert_mlm"]["hidden"]) < TOL
  assert ix.max_diff(mine["gen_logits"], ref["bert_mlm"]["logits"]) < TOL
  # D's replaced-token head is not in a BERT: logged, left fresh.
  assert sorted(n.split("/")[-2] for n in report["fresh"]) == [
      "logit", "logit", "transform", "transform"]
  assert any("not in the source, initialised fresh" in line and
             "replaced_token_head" in line for line in lines)

  # Fine-tuning's target: the encoder alone, from a BertModel (no prefix).
  finetune_config = ff.tiny_config(model_hparam_overrides=sizes,
                                   embedding_size=32, vocab_size=ix.VOCAB_SIZE)
  encoder = pretrain_fx.build_discriminator_encoder(finetune_config)
  inputs = dict(input_ids=feats["input_ids"], input_mask=feats["input_mask"],
                segment_ids=feats["segment_ids"])
  encoder(inputs)
  report = loader.load_into(encoder, str(world["root"] / "bert"),
                            log=lambda _: None)
  assert report["fresh"] == []
  assert ix.max_diff(encoder(inputs).numpy(), ref["bert"]["hidden"]) < TOL


def test_relative_position_is_refused(world, tmp_path):
  config = ix.config(world["vocab"], relative_position=True)
  model = ix.build(config, randomise=False)
  with pytest.raises(UserError, match="relative position bias"):
    ix.export_hf(model, config, str(tmp_path / "out"))


def test_sizes_come_from_an_hf_init_checkpoint(world, tmp_path):
  """run_pretraining.py / run_finetuning.py with only `init_checkpoint`: the
  model's sizes are the source's (the user's hparams still win)."""
  import configure  # pylint: disable=g-import-not-at-top
  import run_pretraining  # pylint: disable=g-import-not-at-top
  from interop import convert  # pylint: disable=g-import-not-at-top
  data_dir = tmp_path / "D"
  data_dir.mkdir()
  ix.write_vocab(data_dir / "vocab.txt")
  pair = str(world["root"] / "pair")
  config = run_pretraining.build_config(str(data_dir), "m",
                                        {"init_checkpoint": pair})
  disc = _FOLDERS["hf_d"][2]
  for key in ("hidden_size", "num_hidden_layers", "num_attention_heads",
              "intermediate_size", "embedding_size", "vocab_size",
              "max_position_embeddings"):
    assert config.network_hparams()[key] == disc[key], key
  assert config.generator_hparams["hidden_size"] == 8
  assert config.max_seq_length == 32  # the source's positions
  # Fine-tuning takes the sizes only (no generator fields).
  finetune = convert.with_source_hparams(
      {"init_checkpoint": pair, "learning_rate": 1e-4},
      configure.FINETUNE_FIELDS)
  assert finetune["model_hparam_overrides"]["hidden_size"] == 32
  assert "generator_hidden_size" not in finetune
  assert finetune["learning_rate"] == 1e-4
  # A size the user gives wins over the source's (and the loader then
  # refuses the mismatch by name: test_transformers_electra_loads_into_ours).
  mine = convert.with_source_hparams(
      {"init_checkpoint": pair,
       "model_hparam_overrides": {"intermediate_size": 48}},
      configure.PRETRAIN_FIELDS)
  assert mine["model_hparam_overrides"]["intermediate_size"] == 48
  assert mine["model_hparam_overrides"]["hidden_size"] == 32
