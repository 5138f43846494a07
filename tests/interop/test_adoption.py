"""Everything a source determines is adopted from it (interop/adoption.py).

Sources at tiny sizes, written here: Hugging Face folders saved by
transformers (an ELECTRA pair whose generator FFN is not 4x its width, a
BertModel with "gelu_new" and 3 token types), Google-layout TF1
checkpoints, and a model directory of ours. Each run takes their sizes,
activation and vocab.txt with no size hparam; a size the user sets that
differs is an error naming both values; a TF1 export with a non-4x
generator FFN equals transformers' own TF1 conversion.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest
import tensorflow as tf

import configure
import export_model
import run_finetuning
import run_pretraining
from interop import adoption
from interop import hf
from tests import finetune_fixtures as ff
from tests import interop_fixtures as ix
from tests import paths
from tests import pretrain_fixtures as pf
from util.errors import UserError

pytestmark = pytest.mark.slow

# The runner data directory's vocabulary (pretrain_fixtures.make_data_dir).
VOCAB = len(pf.RUNNER_SPECIAL_TOKENS) + pf.RUNNER_NUM_WORDS
_SHARED = dict(vocab_size=VOCAB, embedding_size=16, max_position_embeddings=32,
               hidden_act="gelu")
_HF = {  # folder: (class, config)
    "pair/discriminator": ("ElectraForPreTraining", dict(
        _SHARED, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64)),
    "pair/generator": ("ElectraForMaskedLM", dict(
        _SHARED, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=48)),
    "bert": ("BertModel", dict(
        _SHARED, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=80, type_vocab_size=3, hidden_act="gelu_new")),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
  """HF folders made by transformers, each with the runner vocab.txt (the
  BERT one cased). Returns dict: root, vocab (a copy of that vocab.txt)."""
  root = tmp_path_factory.mktemp("adoption")
  template = pf.make_data_dir(root / "template", num_examples=2)
  jobs = [{"op": "make", "class": cls, "seed": i, "folder": str(root / sub),
           "config": cfg} for i, (sub, (cls, cfg)) in enumerate(_HF.items())]
  ix.reference(jobs, root)
  for sub in ("pair/discriminator", "bert"):
    shutil.copy(os.path.join(template, "vocab.txt"), str(root / sub))
  with open(str(root / "bert" / "tokenizer_config.json"), "w") as f:
    json.dump({"do_lower_case": False}, f)
  return dict(root=root, vocab=os.path.join(template, "vocab.txt"))


def _data_dir(path, vocab=True):
  """A pre-training data directory; without `vocab`, no vocab.txt."""
  data = pf.make_data_dir(path, num_examples=16)
  if not vocab:
    os.remove(os.path.join(data, "vocab.txt"))
  return data


def _adopted_lines(text):
  return [line for line in text.splitlines()
          if line.startswith("adopted from ")]


def test_hf_pair_sizes_activation_generator_and_vocab_are_adopted(
    world, tmp_path, capsys):
  pair = str(world["root"] / "pair")
  data = _data_dir(tmp_path / "D", vocab=False)
  config = run_pretraining.build_config(data, "m", {"init_checkpoint": pair})
  disc, gen = _HF["pair/discriminator"][1], _HF["pair/generator"][1]
  for role, want in (("discriminator", disc), ("generator", gen)):
    mine = config.network_hparams(role)
    for key in ("vocab_size", "embedding_size", "hidden_size",
                "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings"):
      assert mine[key] == want[key], (role, key)
    assert mine["hidden_act"] == "gelu_exact"  # HF "gelu" is the erf form.
  assert config.max_seq_length == 32
  out = capsys.readouterr().out
  lines = _adopted_lines(out)
  assert len(lines) == 1, out
  assert lines[0].startswith("adopted from %s: " % pair)
  for item in ("hidden_act=gelu_exact", "generator_intermediate_size=48",
               "generator_num_attention_heads=2", "generator_layers=0.5",
               "intermediate_size=64", "vocab_size=%d" % VOCAB):
    assert item in lines[0], lines[0]
  # The source's vocab.txt became the data directory's.
  copied = os.path.join(data, "vocab.txt")
  assert "vocabulary: copied the source's %s to %s" % (
      os.path.join(pair, "discriminator", "vocab.txt"), copied) in out
  with open(copied) as a, open(world["vocab"]) as b:
    assert a.read() == b.read()
  record = config.to_dict()["adopted_from"]
  assert record["source"] == pair
  assert record["hparams"]["generator_intermediate_size"] == 48
  assert record["hparams"]["model_hparam_overrides"]["hidden_act"] == (
      "gelu_exact")


def test_pretraining_from_hf_pair_loads_and_saves_what_it_adopted(
    world, tmp_path):
  """A real run (subprocess): no size hparam; config.json records it."""
  pair = str(world["root"] / "pair")
  data = _data_dir(tmp_path / "D", vocab=False)
  hparams = dict(init_checkpoint=pair, num_train_steps=2, train_batch_size=8,
                 iterations_per_loop=1, save_checkpoints_steps=2,
                 num_warmup_steps=1, log_every=1)
  run = subprocess.run(
      [sys.executable, "run_pretraining.py", "--data-dir", data,
       "--model-name", "m", "--hparams", json.dumps(hparams)],
      cwd=paths.REPO, capture_output=True, text=True, timeout=600,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert run.returncode == 0, run.stderr[-3000:]
  assert len(_adopted_lines(run.stdout)) == 1, run.stdout
  assert "loaded" in run.stdout and "Hugging Face folders in" in run.stdout
  with open(os.path.join(data, "models", "m", "config.json")) as f:
    saved = json.load(f)
  assert saved["adopted_from"]["source"] == pair
  assert saved["generator_intermediate_size"] == 48
  assert saved["generator_hparams"]["intermediate_size"] == 48
  assert saved["generator_hparams"]["num_attention_heads"] == 2
  assert saved["model_hparams"]["hidden_act"] == "gelu_exact"


def test_bert_activation_token_types_and_casing_are_adopted(world, tmp_path):
  lines = []
  data = str(tmp_path / "F")
  os.makedirs(data)
  hparams, record = adoption.adopt(
      configure.FinetuningConfig, "m", data,
      {"init_checkpoint": str(world["root"] / "bert")}, str(
          world["root"] / "bert"), log=lines.append)
  config = configure.FinetuningConfig("m", data, **hparams)
  mine = config.network_hparams()
  assert mine["hidden_act"] == "gelu"  # HF "gelu_new" is our tanh "gelu".
  assert (mine["type_vocab_size"], mine["num_attention_heads"],
          mine["intermediate_size"], mine["embedding_size"]) == (3, 4, 80, 16)
  assert config.do_lower_case is False  # tokenizer_config.json's.
  assert record["hparams"]["do_lower_case"] is False
  assert os.path.isfile(os.path.join(data, "vocab.txt"))
  assert len(_adopted_lines("\n".join(lines))) == 1


def test_a_contradicting_hparam_names_both_values(world, tmp_path, capsys):
  pair = str(world["root"] / "pair")
  data = _data_dir(tmp_path / "D", vocab=False)
  with pytest.raises(UserError) as e:
    run_pretraining.build_config(data, "m", {
        "init_checkpoint": pair, "generator_intermediate_size": 64,
        "model_hparam_overrides": {"intermediate_size": 48}})
  message = str(e.value)
  assert ("intermediate_size: 64 in the source, 48 here (from hparam "
          "model_hparam_overrides.intermediate_size 48)") in message
  assert ("generator intermediate_size: 48 in the source, 64 here (from "
          "hparam generator_intermediate_size 64)") in message
  # Only what the user set is blamed: G's width differs, its FFN and heads
  # are the source's.
  with pytest.raises(UserError) as e:
    run_pretraining.build_config(data, "m", {
        "init_checkpoint": pair, "generator_hidden_size": 0.25})
  message = str(e.value)
  assert ("generator hidden_size: 16 in the source, 8 here (from hparam "
          "generator_hidden_size 0.25)") in message
  assert "in hparams" not in message and "generator intermediate" not in (
      message)
  assert not os.path.exists(os.path.join(data, "vocab.txt"))
  # From the command line: exit 2, one error line.
  argv = ["--data-dir", data, "--model-name", "m", "--hparams", json.dumps(
      {"init_checkpoint": pair, "embedding_size": 32})]
  capsys.readouterr()
  with pytest.raises(SystemExit) as e:
    run_pretraining.run_main(run_pretraining.main, argv)
  assert e.value.code == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and err[0].startswith("error: hparams contradict")
  assert "embedding_size: 16 in the source, 32 here" in err[0]


def test_another_vocabulary_in_the_data_dir_is_refused(world, tmp_path):
  pair = str(world["root"] / "pair")
  data = str(tmp_path / "D")
  os.makedirs(data)
  ix.write_vocab(os.path.join(data, "vocab.txt"))  # 40 other tokens.
  with pytest.raises(UserError) as e:
    run_pretraining.build_config(data, "m", {"init_checkpoint": pair})
  assert os.path.join(data, "vocab.txt") in str(e.value)
  assert os.path.join(pair, "discriminator", "vocab.txt") in str(e.value)


def test_tf1_shapes_and_bert_config_are_adopted(tmp_path):
  ix.write_google_checkpoint(tmp_path, disc=(32, 2, 64), gen=(16, 1, 24))
  with open(str(tmp_path / "bert_config.json"), "w") as f:
    json.dump({"num_attention_heads": 4, "hidden_act": "gelu"}, f)
  lines = []
  hparams, _ = adoption.adopt(configure.PretrainingConfig, "m", ".", {},
                              str(tmp_path), into_data_dir=False,
                              log=lines.append)
  config = configure.PretrainingConfig("m", ".", **hparams)
  disc, gen = config.network_hparams(), config.network_hparams("generator")
  assert (disc["hidden_size"], disc["num_attention_heads"],
          disc["intermediate_size"], disc["vocab_size"]) == (32, 4, 64, 40)
  assert (gen["hidden_size"], gen["num_hidden_layers"],
          gen["intermediate_size"]) == (16, 1, 24)
  # G's heads are recorded nowhere: said so, as the value used.
  assert any(line.startswith("not recorded by") and
             "generator num_attention_heads=" in line for line in lines), lines


def test_tf1_export_with_a_non_4x_generator_ffn_matches_transformers(
    tmp_path):
  """No bert_config.json: only the heads are given. The HF folders we write
  equal transformers' own conversion of the TF1 checkpoint."""
  source = tmp_path / "tf1"
  source.mkdir()
  ix.write_google_checkpoint(source, disc=(32, 2, 64), gen=(16, 1, 24))
  ix.write_vocab(source / "vocab.txt")
  out = str(tmp_path / "hf")
  heads = {"model_hparam_overrides": {"num_attention_heads": 2},
           "generator_num_attention_heads": 2}
  assert export_model.main(["--checkpoint", str(source), "--format", "hf",
                            "--output", out, "--hparams",
                            json.dumps(heads)]) == 0
  with open(os.path.join(out, "generator", "config.json")) as f:
    assert json.load(f)["intermediate_size"] == 24
  inputs = ix.save_inputs(tmp_path / "in.npz", ix.features())
  sizes = dict(vocab_size=ix.VOCAB_SIZE, embedding_size=16,
               max_position_embeddings=32, hidden_act="gelu_new",
               num_attention_heads=2)
  jobs, outs = [], {}
  for role, cls, hidden, layers, ffn in (
      ("discriminator", "ElectraForPreTraining", 32, 2, 64),
      ("generator", "ElectraForMaskedLM", 16, 1, 24)):
    theirs = str(tmp_path / ("theirs_" + role))
    jobs.append({"op": "tf1", "class": cls, "checkpoint": str(source),
                 "role": role, "folder": theirs,
                 "config": dict(sizes, hidden_size=hidden,
                                num_hidden_layers=layers,
                                intermediate_size=ffn)})
    for who, folder in (("theirs", theirs), ("ours", os.path.join(out, role))):
      outs[who, role] = str(tmp_path / ("%s_%s.npz" % (who, role)))
      jobs.append(ix.run_job(cls, folder, inputs, outs[who, role]))
  ref = ix.reference(jobs, tmp_path)
  for role in ("discriminator", "generator"):
    ours, theirs = ref[outs["ours", role]], ref[outs["theirs", role]]
    assert ix.loaded_cleanly(ours), role
    assert ix.max_diff(ours["logits"], theirs["logits"]) < 1e-4, role
    assert ix.max_diff(ours["hidden"], theirs["hidden"]) < 1e-4, role


def _our_model_dir(data):
  """data/models/M as pre-training leaves it (config.json, checkpoints/),
  over the fine-tuning fixtures' vocabulary; sizes no preset has."""
  config = configure.PretrainingConfig(
      "M", data, vocab_size=ff.VOCAB_SIZE, embedding_size=16,
      max_seq_length=32, generator_intermediate_size=24,
      model_hparam_overrides=dict(ff.TINY_MODEL, hidden_act="gelu_exact"))
  model = pf.build_pretrainer_with_variables(config)
  config.save()
  tf.train.Checkpoint(model=model).save(
      os.path.join(config.model_dir, "checkpoints", "ckpt"))
  return config


def test_finetuning_our_pretrained_model_needs_no_size_hparams(
    tmp_path, capsys):
  data = str(tmp_path / "D")
  shutil.copytree(os.path.join(ff.FIXTURE_DIR, "finetuning_data", "sst"),
                  os.path.join(data, "finetuning_data", "sst"))
  shutil.copy(ff.VOCAB_FILE, data)
  pretrained = _our_model_dir(data)
  results = run_finetuning.main([
      "--data-dir", data, "--model-name", "M", "--hparams",
      json.dumps({"task_names": ["sst"], "debug": True})])
  assert "sst" in results
  out = capsys.readouterr().out
  assert len(_adopted_lines(out)) == 1, out
  assert "all 39 weight tensors restored" in out
  with open(os.path.join(pretrained.model_dir, "finetuning_models", "sst",
                         "config.json")) as f:
    saved = json.load(f)
  assert saved["model_hparams"]["hidden_act"] == "gelu_exact"
  assert saved["model_hparams"]["max_position_embeddings"] == 64
  assert saved["embedding_size"] == 16
  assert saved["adopted_from"]["source"] == os.path.join(
      pretrained.model_dir, "checkpoints")
  # init_checkpoint naming the model directory or its checkpoints: the same.
  for source in (pretrained.model_dir,
                 os.path.join(pretrained.model_dir, "checkpoints")):
    hparams, _ = adoption.adopt(configure.FinetuningConfig, "other", data,
                                {"init_checkpoint": source}, source,
                                log=lambda _: None)
    config = configure.FinetuningConfig("other", data, **hparams)
    assert config.network_hparams() == pretrained.network_hparams()


def test_pretraining_and_export_from_our_model_dir(tmp_path):
  data = str(tmp_path / "D")
  os.makedirs(data)
  shutil.copy(ff.VOCAB_FILE, data)
  pretrained = _our_model_dir(data)
  config = run_pretraining.build_config(
      data, "next", {"init_checkpoint": pretrained.model_dir})
  for role in ("discriminator", "generator"):
    assert config.network_hparams(role) == pretrained.network_hparams(role)
  assert config.to_dict()["adopted_from"]["hparams"][
      "generator_intermediate_size"] == 24
  # export_model --checkpoint: no hparams at all.
  out = str(tmp_path / "tf1")
  assert export_model.main(["--checkpoint", pretrained.model_dir, "--format",
                            "tf1", "--output", out]) == 0
  with open(os.path.join(out, "generator_config.json")) as f:
    assert json.load(f)["intermediate_size"] == 24


def test_our_relative_position_is_adopted_and_other_layer_norms_refused(
    tmp_path):
  data = str(tmp_path / "D")
  os.makedirs(data)
  config = configure.PretrainingConfig(
      "R", data, vocab_size=ff.VOCAB_SIZE, relative_position=True,
      relative_num_buckets=16, max_seq_length=32,
      model_hparam_overrides=dict(ff.TINY_MODEL))
  config.save()
  tf.train.Checkpoint(v=tf.Variable(1.0)).save(
      os.path.join(config.model_dir, "checkpoints", "ckpt"))
  hparams, _ = adoption.adopt(configure.FinetuningConfig, "R", data, {},
                              config.model_dir, log=lambda _: None)
  assert (hparams["relative_position"], hparams["relative_num_buckets"]) == (
      True, 16)
  with pytest.raises(UserError, match="relative_position: True in the "
                     "source, False in hparams"):
    adoption.adopt(configure.FinetuningConfig, "R", data,
                   {"relative_position": False}, config.model_dir,
                   log=lambda _: None)
  # Our LayerNorms are fixed at 1e-12: an HF folder with another epsilon is
  # refused by name, not adopted.
  with pytest.raises(UserError, match="layer_norm_eps 1e-05 cannot be "
                     "adopted: .* fixed at epsilon 1e-12"):
    hf.sizes_from_hf_config(dict(_HF["bert"][1], layer_norm_eps=1e-5),
                            "bert/config.json")


def test_a_vocabulary_changed_since_pre_training_is_refused(tmp_path):
  """config.json records the vocabulary's fingerprint: a data-dir vocab.txt
  rewritten in place with other tokens (same path, same size) is refused
  when fine-tuning from the model."""
  data = str(tmp_path / "D")
  os.makedirs(data)
  shutil.copy(ff.VOCAB_FILE, data)
  pretrained = _our_model_dir(data)
  with open(os.path.join(pretrained.model_dir, "config.json")) as f:
    assert json.load(f)["vocab_fingerprint"].startswith("sha256:")
  vocab = os.path.join(data, "vocab.txt")
  with open(vocab) as f:
    lines = f.read().split("\n")
  lines[6], lines[7] = lines[7], lines[6]
  with open(vocab, "w") as f:
    f.write("\n".join(lines))
  source = pretrained.model_dir
  with pytest.raises(UserError, match=r"%s holds another vocabulary "
                     r"\(fingerprint sha256:\w+\) than the one checkpoint "
                     r".* was pre-trained with" % vocab):
    adoption.adopt(configure.FinetuningConfig, "other", data,
                   {"init_checkpoint": source}, source, log=lambda _: None)
