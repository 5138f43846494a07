"""interop/weight_files.py: every Hugging Face weights layout of a folder.

transformers (tests/hf_reference.py, in its own process) writes one tiny
BERT and two ELECTRA models as model.safetensors, sharded safetensors,
pytorch_model.bin, sharded .bin and tf_model.h5; each reads to the tensors
of the safetensors file and loads into our model alike. Pickles that would
run code, broken files and folders without weights are UserErrors naming
the file.
"""

import io
import json
import os
import pickle
import shutil
import zipfile

import numpy as np
import pytest

from interop import hf
from interop import loader
from interop import safetensors_io
from interop import torch_pickle
from interop import weight_files
from tests import interop_fixtures as ix
from util.errors import UserError

_BERT = dict(vocab_size=ix.VOCAB_SIZE, max_position_embeddings=32,
             hidden_act="gelu", **{k: v for k, v in ix.pf.TINY_MODEL.items()
                                   if k != "max_position_embeddings"})
_ELECTRA = dict(_BERT, embedding_size=16)
_MODELS = {"bert_mlm": ("BertForMaskedLM", _BERT), "bert": ("BertModel", _BERT),
           "electra_d": ("ElectraForPreTraining", _ELECTRA),
           "electra_g": ("ElectraForMaskedLM", _ELECTRA)}
# Derived folders: (source model, op, safe_serialization, max_shard_size).
_DERIVED = {"bert_mlm_st_shards": ("bert_mlm", "save", True, "40KB"),
            "bert_mlm_bin": ("bert_mlm", "save", False, None),
            "bert_mlm_bin_shards": ("bert_mlm", "save", False, "40KB"),
            "electra_g_bin": ("electra_g", "save", False, None)}
_DERIVED.update({key + "_tf": (key, "save_tf", None, None) for key in _MODELS})
# What torch.save keeps of a tie and safetensors once: {copy: original}.
_TIED = {"cls.predictions.decoder.weight":
         "bert.embeddings.word_embeddings.weight",
         "cls.predictions.decoder.bias": "cls.predictions.bias",
         "generator_lm_head.weight":
         "electra.embeddings.word_embeddings.weight"}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  """The folders of _MODELS and _DERIVED, and torch.pt / expected.npz of
  the "torch_save" job, written by one transformers process."""
  root = tmp_path_factory.mktemp("weight_files")
  jobs = [{"op": "make", "class": cls, "config": config, "seed": i,
           "folder": str(root / key)}
          for i, (key, (cls, config)) in enumerate(_MODELS.items())]
  for key, (source, op, safe, shard_size) in _DERIVED.items():
    jobs.append({"op": op, "class": _MODELS[source][0],
                 "folder": str(root / source), "out": str(root / key),
                 "safe_serialization": safe, "max_shard_size": shard_size})
  jobs.append({"op": "torch_save", "file": str(root / "torch.pt"),
               "expected": str(root / "expected.npz")})
  ix.reference(jobs, root)
  return root


def _assert_same(mine, reference):
  """Same keys, dtypes, shapes and values bit for bit."""
  assert sorted(mine) == sorted(reference)
  for key, value in reference.items():
    assert mine[key].dtype == value.dtype, key
    np.testing.assert_array_equal(mine[key], value, err_msg=key)


@pytest.mark.parametrize("folder,source,files", [
    ("bert_mlm_st_shards", "bert_mlm", "model.safetensors.index.json"),
    ("bert_mlm_bin", "bert_mlm", "pytorch_model.bin"),
    ("bert_mlm_bin_shards", "bert_mlm", "pytorch_model.bin.index.json"),
    ("electra_g_bin", "electra_g", "pytorch_model.bin"),
    ("bert_mlm_tf", "bert_mlm", "tf_model.h5"),
    ("bert_tf", "bert", "tf_model.h5"),
    ("electra_d_tf", "electra_d", "tf_model.h5"),
    ("electra_g_tf", "electra_g", "tf_model.h5")])
def test_each_layout_reads_the_tensors_of_model_safetensors(root, folder,
                                                           source, files):
  reference = safetensors_io.load(str(root / source / "model.safetensors"))
  tensors, description = weight_files.read_weights(str(root / folder))
  assert description.startswith(files)
  if files.endswith(".index.json"):
    shards = [n for n in os.listdir(root / folder) if n.endswith(
        (".safetensors", ".bin"))]
    assert 2 <= len(shards) <= 5
    assert description == "%s (%d shards)" % (files, len(shards))
  # torch.save keeps tied tables twice; the copies are their originals.
  for copy in set(tensors) - set(reference):
    assert files.startswith("pytorch_model") and copy in _TIED
    np.testing.assert_array_equal(tensors.pop(copy), reference[_TIED[copy]])
  _assert_same(tensors, reference)
  # hf.py reads a tied copy as the tie: what it offers the loader is equal.
  mine, theirs = (hf.read_hf_folder(str(root / f)) for f in (folder, source))
  assert mine["ignored"] == theirs["ignored"]
  assert mine["description"].endswith("(%s)" % description)
  for role in theirs["tensors"]:
    _assert_same(mine["tensors"][role], theirs["tensors"][role])


def test_every_layout_loads_into_our_model_alike(root):
  vocab = ix.write_vocab(root / "vocab.txt")
  config = ix.config(vocab, model_hparam_overrides=dict(
      ix.pf.TINY_MODEL, hidden_act="gelu_exact"), embedding_size=32,
                     untied_generator=False, generator_hidden_size=1.0)
  model = ix.build(config, randomise=False)
  start = [v.numpy() for v in model.variables]
  results = {}
  for folder in ("bert_mlm", "bert_mlm_st_shards", "bert_mlm_bin",
                 "bert_mlm_bin_shards", "bert_mlm_tf"):
    for variable, value in zip(model.variables, start):
      variable.assign(value)
    lines = []
    report = loader.load_into(model, str(root / folder), log=lines.append)
    assert report["kind"] == "hf"
    assert any(line.startswith("loaded ") and line.endswith(")")
               for line in lines)
    results[folder] = (report, [v.numpy() for v in model.variables])
  first, values = results.pop("bert_mlm")
  assert len(first["loaded"]) > 30
  for folder, (report, loaded) in results.items():
    for key in ("loaded", "fresh", "unused"):
      assert report[key] == first[key], (folder, key)
    for variable, a, b in zip(model.variables, loaded, values):
      np.testing.assert_array_equal(a, b, err_msg=folder + variable.name)


def test_torch_views_dtypes_and_offsets(root):
  """Strides, storage offsets, scalars, empty tensors and every dtype come
  out as torch holds them."""
  tensors = torch_pickle.load(
      "torch.pt", (root / "torch.pt").read_bytes())
  expected = dict(np.load(root / "expected.npz"))
  _assert_same(tensors, expected)
  assert tensors["bfloat16"].dtype == np.float32


class _Call:
  """Pickles as a call of `function(*args)`."""

  def __init__(self, function, *args):
    self.reduced = (function, args)

  def __reduce__(self):
    return self.reduced


def _torch_zip(path, state, protocol=2, top="archive"):
  """A zip in torch.save's layout whose data.pkl pickles `state`."""
  with zipfile.ZipFile(str(path), "w") as archive:
    archive.writestr(top + "/data.pkl", pickle.dumps(state, protocol))
    archive.writestr(top + "/byteorder", "little")


def _hf_folder(folder, source):
  """`folder` with `source`'s config.json; returns its path as str."""
  folder.mkdir()
  shutil.copy(source / "config.json", folder / "config.json")
  return str(folder)


@pytest.mark.parametrize("call,refused,protocol", [
    (lambda marker: _Call(os.system, "touch " + marker),
     r"(posix|os)\.system", 2),
    (lambda marker: {"w": _Call(eval, "open(%r, 'w')" % marker)},
     r"builtins\.eval", 4)])
def test_a_pickle_that_runs_code_is_refused(root, tmp_path, call, refused,
                                            protocol):
  folder = _hf_folder(tmp_path / "evil", root / "bert_mlm")
  marker = str(tmp_path / "MARKER")
  _torch_zip(tmp_path / "evil" / "pytorch_model.bin", call(marker), protocol)
  assert loader.detect(folder) == "hf"
  with pytest.raises(UserError, match=refused) as e:
    loader.read_source(folder)
  assert "pytorch_model.bin" in str(e.value)
  assert not os.path.exists(marker)


def test_a_config_without_weights_names_what_the_folder_holds(root, tmp_path):
  folder = _hf_folder(tmp_path / "empty", root / "bert_mlm")
  ix.write_vocab(tmp_path / "empty" / "vocab.txt")
  (tmp_path / "empty" / "model.ckpt").write_bytes(b"")
  with pytest.raises(UserError) as e:
    loader.detect(folder)
  message = str(e.value)
  assert "\n" not in message and "no checkpoint found" not in message
  assert "config.json, model.ckpt, vocab.txt;" in message
  assert "pytorch_model.bin" in message and "tf_model.h5" in message
  assert not hf.is_hf_folder(folder) and not loader.is_foreign(folder)


def test_safetensors_is_preferred(root, tmp_path):
  folder = _hf_folder(tmp_path / "both", root / "bert_mlm")
  for source, name in (("bert_mlm_bin", "pytorch_model.bin"),
                       ("bert_mlm", "model.safetensors")):
    shutil.copy(root / source / name, tmp_path / "both" / name)
  assert weight_files.find_weights(folder).name == "model.safetensors"
  tensors, description = weight_files.read_weights(folder)
  assert description == "model.safetensors"
  assert "cls.predictions.decoder.weight" not in tensors  # Not the .bin.
  assert hf.read_hf_folder(folder)["description"].endswith(
      "(model.safetensors)")


def test_folders_on_other_filesystems_read_alike(root):
  """Every file goes through tf.io.gfile: a ram:// folder reads too."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  for name in ("bert_mlm_bin_shards", "bert_mlm_tf"):
    remote = "ram://weight_files/" + name
    tf.io.gfile.makedirs(remote)
    for entry in os.listdir(root / name):
      tf.io.gfile.copy(str(root / name / entry), remote + "/" + entry,
                       overwrite=True)
    tensors, description = weight_files.read_weights(remote)
    _assert_same(tensors, weight_files.read_weights(str(root / name))[0])
    assert hf.is_hf_folder(remote) and description.endswith(
        ("shards)", "tf_model.h5"))


def _truncate(path):
  data = path.read_bytes()
  path.write_bytes(data[:len(data) // 2])


def _break_index(path):
  path.write_text("{\"weight_map\": ")


def _drop_shard(path):
  weight_map = json.loads(path.read_text())["weight_map"]
  os.remove(path.parent / sorted(set(weight_map.values()))[-1])


def _legacy(path):
  path.write_bytes(pickle.dumps(0x1950a86a20f9469cfc6c, 2) + b"\0" * 64)


@pytest.mark.parametrize("source,name,damage,message", [
    ("bert_mlm_bin", "pytorch_model.bin", _truncate, "broken or truncated"),
    ("bert_mlm_bin", "pytorch_model.bin", _legacy, r"torch\.save\(model"),
    ("bert_mlm", "model.safetensors", _truncate, "cannot be read"),
    ("bert_mlm_tf", "tf_model.h5", _truncate, "not a readable h5"),
    ("bert_mlm_st_shards", "model.safetensors.index.json", _break_index,
     "not a valid index"),
    ("bert_mlm_bin_shards", "pytorch_model.bin.index.json", _drop_shard,
     r"lists the shard pytorch_model-0000\d-of-0000\d\.bin, which is "
     "missing")])
def test_a_broken_file_is_named(root, tmp_path, source, name, damage,
                                message):
  folder = tmp_path / "broken"
  shutil.copytree(root / source, folder)
  damage(folder / name)
  with pytest.raises(UserError, match=message) as e:
    weight_files.read_weights(str(folder))
  assert str(folder / name) in str(e.value)


def test_a_zip_of_other_data_is_refused(tmp_path):
  path = tmp_path / "pytorch_model.bin"
  _torch_zip(path, [1, 2], top="model")
  with pytest.raises(UserError, match="holds a list, not a state dict"):
    torch_pickle.load(str(path), path.read_bytes())
  with io.BytesIO() as buffer:
    with zipfile.ZipFile(buffer, "w") as archive:
      archive.writestr("a/b/data.pkl", b"")
    with pytest.raises(UserError, match="expected one <folder>/data.pkl"):
      torch_pickle.load(str(path), buffer.getvalue())
