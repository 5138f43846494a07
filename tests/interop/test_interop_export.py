"""export_model.py: a pre-training model dir -> hf -> tf1 -> ours, exactly;
the loader behind fine-tuning's init_checkpoint; the raw-text SavedModel."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import export_model
from finetune import runner
from interop import convert
from interop import loader
from text import tokenization
from tests import interop_fixtures as ix
from tests import paths
from tests import pretrain_fixtures as pretrain_fx
from util.errors import UserError

pytestmark = pytest.mark.slow

_HPARAMS = dict(model_hparam_overrides=dict(ix.pf.TINY_MODEL),
                embedding_size=ix.pf.TINY_EMBEDDING_SIZE,
                vocab_size=ix.VOCAB_SIZE, max_seq_length=ix.SEQ_LEN,
                sampling="hp_loss")


def _pretrained_dir(tmp_path):
  """D/models/M as pre-training leaves it: config.json + checkpoints/."""
  data = tmp_path / "D"
  data.mkdir()
  ix.write_vocab(data / "vocab.txt")
  return ix.pretrained_dir(data, _HPARAMS)


def test_export_hf_then_convert_to_tf1_round_trips(tmp_path):
  data, model = _pretrained_dir(tmp_path)
  out_hf, out_tf1 = str(tmp_path / "hf"), str(tmp_path / "tf1")
  assert export_model.main(["--data-dir", data, "--model-name", "M",
                            "--format", "hf", "--output", out_hf]) == 0
  with open(os.path.join(out_hf, "generator", "config.json")) as f:
    assert json.load(f)["hidden_size"] == 8
  # HF -> TF1: sizes from the folders' config.json, the rest from hparams.
  assert export_model.main(["--checkpoint", out_hf, "--format", "tf1",
                            "--output", out_tf1]) == 0
  assert tf.train.latest_checkpoint(out_tf1)
  config = convert.pretraining_config("back", data, dict(_HPARAMS))
  back = pretrain_fx.build_pretrainer_with_variables(config)
  report = loader.load_into(back, out_tf1, log=lambda _: None)
  # HF has no sampling head: it alone starts fresh after hf -> tf1.
  sampling = {v.ref() for v in back.generator.sampling_head.weights}
  assert sorted(report["fresh"]) == sorted(
      v.name for v in back.generator.sampling_head.weights)
  for a, b in zip(model.variables, back.variables):
    if b.ref() not in sampling:
      np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.name)
  # The sizes came from the source; the vocab beside it is used.
  hparams = convert.source_hparams(out_tf1)
  assert hparams["model_hparam_overrides"]["intermediate_size"] == 64
  assert hparams["generator_hidden_size"] == 0.25
  assert hparams["vocab_file"] == os.path.join(out_tf1, "vocab.txt")


def test_export_errors_are_user_errors(tmp_path):
  with pytest.raises(UserError, match="does not exist"):
    export_model.main(["--checkpoint", str(tmp_path / "nothing"), "--format",
                       "hf", "--output", str(tmp_path / "o")])
  with pytest.raises(UserError, match="config.json not found"):
    export_model.main(["--data-dir", str(tmp_path), "--model-name", "M",
                       "--format", "hf", "--output", str(tmp_path / "o")])


def test_finetuning_init_checkpoint_takes_hf_folders(tmp_path):
  data, model = _pretrained_dir(tmp_path)
  out = str(tmp_path / "hf")
  export_model.main(["--data-dir", data, "--model-name", "M", "--format",
                     "hf", "--output", out])
  from tests import finetune_fixtures as ff  # pylint: disable=g-import-not-at-top
  for source in (out, os.path.join(out, "discriminator")):
    config = ff.tiny_config(init_checkpoint=source, vocab_size=ix.VOCAB_SIZE,
                            max_seq_length=ix.SEQ_LEN,
                            embedding_size=ix.pf.TINY_EMBEDDING_SIZE,
                            model_hparam_overrides=dict(ix.pf.TINY_MODEL))
    assert runner.resolve_init_checkpoint(config) == source
  encoder = pretrain_fx.build_discriminator_encoder(config)
  feats = ix.features()
  inputs = {k: feats[k] for k in ("input_ids", "input_mask", "segment_ids")}
  encoder(inputs)
  loader.load_into(encoder, out, log=lambda _: None)
  np.testing.assert_array_equal(encoder(inputs).numpy(),
                                model.discriminator.encoder(inputs).numpy())


_SERVE = """
import sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401 (registers the tokenizer ops)
served = tf.saved_model.load(sys.argv[1])
out = served.signatures["serving_default"](text=tf.constant(sys.argv[3:]))
np.savez(sys.argv[2], **{k: v.numpy() for k, v in out.items()})
assert set(sys.modules) & {"tf_keras", "official", "model"} == set()
"""


def test_saved_model_serves_raw_text_in_a_fresh_process(tmp_path):
  data, model = _pretrained_dir(tmp_path)
  out = str(tmp_path / "served")
  assert export_model.main(["--data-dir", data, "--model-name", "M",
                            "--format", "saved_model", "--output", out]) == 0
  texts = ["w1 W2 w3", "w4, w5 zz " + " ".join("w%d" % i for i in range(30))]
  result = str(tmp_path / "served.npz")
  subprocess.run([sys.executable, "-c", _SERVE, out, result] + texts,
                 check=True, timeout=300, env=ix.serving_env())
  served = np.load(result)
  # Our tokenizer and Keras model on the same texts: [CLS] text [SEP],
  # truncated to max_seq_length, padded.
  tokenizer = tokenization.WordPieceTokenizer(os.path.join(data, "vocab.txt"))
  ids = np.zeros((2, ix.SEQ_LEN), np.int32)
  for row, text in enumerate(texts):
    pieces = [2] + tokenizer.encode(text)[:ix.SEQ_LEN - 2] + [3]
    ids[row, :len(pieces)] = pieces
  mask = (ids > 0).astype(np.int32)
  np.testing.assert_array_equal(served["input_ids"], ids)
  np.testing.assert_array_equal(served["input_mask"], mask)
  assert 1 in ids[1]  # "," and "zz" are [UNK] in both.
  logits = model.discriminator(dict(input_ids=ids, input_mask=mask,
                                    segment_ids=np.zeros_like(ids)))
  want = tf.sigmoid(logits).numpy() * mask
  assert ix.max_diff(served["replaced_probability"], want) < 1e-5


def test_an_export_never_overwrites_silently(tmp_path):
  """A non-empty --output is refused; --overwrite replaces an earlier
  export of any format (no mixed formats) and keeps files not ours."""
  data, _ = _pretrained_dir(tmp_path)
  out = tmp_path / "out"
  argv = ["--data-dir", data, "--model-name", "M", "--output", str(out)]
  assert export_model.main(argv + ["--format", "hf"]) == 0
  before = (out / "discriminator" / "model.safetensors").read_bytes()
  with pytest.raises(UserError, match=r"--output %s is not empty "
                     r"\(EXPORT_COMPLETE.json, discriminator, "
                     r"generator\); pass --overwrite" % out):
    export_model.main(argv + ["--format", "tf1"])
  assert (out / "discriminator" / "model.safetensors").read_bytes() == before
  assert not tf.train.latest_checkpoint(str(out))
  (out / "notes.txt").write_text("mine")
  (out / "discriminator" / "README.md").write_text("mine too")
  assert export_model.main(argv + ["--format", "tf1", "--overwrite"]) == 0
  assert tf.train.latest_checkpoint(str(out))
  assert convert.source_hparams(str(out))["vocab_size"] == ix.VOCAB_SIZE
  assert sorted(os.listdir(out / "discriminator")) == ["README.md"]
  assert not (out / "generator").exists()
  assert (out / "notes.txt").read_text() == "mine"
  (tmp_path / "file").write_text("")
  with pytest.raises(UserError, match="--output %s is a file" % (
      tmp_path / "file")):
    export_model.main(["--data-dir", data, "--model-name", "M", "--output",
                       str(tmp_path / "file"), "--format", "hf"])
  with pytest.raises(UserError, match="cannot write to %s" % (
      tmp_path / "file" / "x")):
    export_model.main(["--data-dir", data, "--model-name", "M", "--output",
                       str(tmp_path / "file" / "x"), "--format", "hf"])


_KILLED_EXPORT = """
import os, signal, sys
import export_model
from interop import hf
from util.cli import run_main
real = hf.export_hf
def export_then_die(*args, **kwargs):
  real(*args, **kwargs)  # Every file written: killed before the swap.
  os.kill(os.getpid(), signal.SIGKILL)
hf.export_hf = export_then_die
run_main(export_model.main, sys.argv[1:])
"""


def test_an_export_killed_before_it_finishes(tmp_path):
  """kill -9 during an export: with --overwrite the earlier export is
  intact; into a new folder nothing is left at --output; the next export
  clears the killed one's temporary folder."""
  data, _ = _pretrained_dir(tmp_path)
  out = tmp_path / "out"
  argv = ["--data-dir", data, "--model-name", "M", "--output", str(out)]
  assert export_model.main(argv + ["--format", "tf1"]) == 0
  before = sorted(os.listdir(out))

  def killed(*extra):
    return subprocess.run(
        [sys.executable, "-c", _KILLED_EXPORT] + argv + ["--format", "hf"] +
        list(extra), cwd=paths.REPO,
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  proc = killed("--overwrite")
  assert proc.returncode == -9, proc.stderr[-3000:]
  assert sorted(os.listdir(out)) == before  # The tf1 export, whole.
  assert tf.train.latest_checkpoint(str(out))
  new = tmp_path / "new"
  argv[-1] = str(new)
  proc = killed()
  assert proc.returncode == -9, proc.stderr[-3000:]
  assert not new.exists()
  assert [n for n in os.listdir(tmp_path) if n.startswith(".new.tmp-export-")]
  assert export_model.main(argv + ["--format", "hf"]) == 0
  assert (new / "discriminator" / "model.safetensors").exists()
  assert not [n for n in os.listdir(tmp_path) if n.startswith(".new.")]
