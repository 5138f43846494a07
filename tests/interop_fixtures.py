"""Shared pieces of the interop tests: tiny models, inputs, the reference run.

Token ids follow tests/pretrain_fixtures.py (vocab 40). Every model here has
random biases and LayerNorm parameters too (not just 0/1), so a tensor
mapped to the wrong place shows in the outputs.
"""

import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

import configure
import configure_specs
from interop import hf
from interop import tf1
from tests import pretrain_fixtures as pf

VOCAB_SIZE = 40
SEQ_LEN = 16
BATCH = 3
HERE = os.path.dirname(os.path.abspath(__file__))


def write_vocab(path):
  """A 40-token vocab.txt ([PAD] [UNK] [CLS] [SEP] [MASK], then words)."""
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
      "w%d" % i for i in range(VOCAB_SIZE - 5)]
  with open(path, "w") as f:
    f.write("\n".join(tokens) + "\n")
  return str(path)


def config(vocab_file, **hparams):
  """A tiny `PretrainingConfig` (tests/pretrain_fixtures.py) of `vocab_file`."""
  return pf.tiny_config(vocab_size=VOCAB_SIZE, seq_len=SEQ_LEN,
                        vocab_file=str(vocab_file), **hparams)


def features():
  """A padded batch (input_mask has zeros) as numpy arrays."""
  return pf.make_features(BATCH, SEQ_LEN, 3, VOCAB_SIZE, seed=3,
                          as_tensors=False)


def build(config_, randomise=True, seed=0):
  """An `ElectraPretrainer` called once; optionally all its biases and
  LayerNorm parameters moved off their 0/1 starts."""
  model = pf.build_pretrainer(config_)
  model({k: tf.constant(v) for k, v in features().items()}, training=False)
  if randomise:
    rng = np.random.default_rng(seed)
    for v in model.variables:
      if any(k in v.name for k in ("bias", "gamma", "beta")):
        v.assign_add(0.1 * rng.standard_normal(v.shape).astype(np.float32))
  return model


def export_hf(model, config, output_dir, **kwargs):
  """interop/hf.py's `export_hf` of `model` with the network and
  vocabulary specs of its `PretrainingConfig`; `kwargs` are passed on."""
  specs = configure_specs.pretraining_specs(config)
  return hf.export_hf(model, specs.network, specs.vocabulary, output_dir,
                      **kwargs)


def export_tf1(model, config, output_dir, **kwargs):
  """interop/tf1.py's `export_tf1` of `model` with the network and
  vocabulary specs of its `PretrainingConfig`; `kwargs` are passed on."""
  specs = configure_specs.pretraining_specs(config)
  return tf1.export_tf1(model, specs.network, specs.vocabulary, output_dir,
                        **kwargs)


def pretrained_dir(data, hparams, seed=4):
  """`data`/models/M as pre-training leaves it: config.json (of `hparams`)
  and a checkpoint of a model built with `build`. Returns (str(data),
  model)."""
  config_ = configure.PretrainingConfig("M", str(data), **hparams)
  model = build(config_, seed=seed)
  config_.save()
  tf.train.Checkpoint(model=model, step=tf.Variable(3, dtype=tf.int64)).save(
      os.path.join(config_.model_dir, "checkpoints", "ckpt"))
  return str(data), model


def ours(model, feats):
  """Our outputs on `feats`: disc logits, disc hidden, gen hidden, gen MLM
  logits at every position ([batch, seq_len(, ...)] float32 numpy)."""
  inputs = dict(input_ids=feats["input_ids"], input_mask=feats["input_mask"],
                segment_ids=feats["segment_ids"])
  positions = np.tile(np.arange(SEQ_LEN, dtype=np.int32), (BATCH, 1))
  gen = model.generator(dict(masked_input_ids=feats["input_ids"],
                             input_mask=feats["input_mask"],
                             segment_ids=feats["segment_ids"],
                             masked_lm_positions=positions))
  return dict(disc_logits=model.discriminator(inputs).numpy(),
              disc_hidden=model.discriminator.encoder(inputs).numpy(),
              gen_hidden=model.generator.encoder(inputs).numpy(),
              gen_logits=gen["mlm_logits"].numpy())


def reference(jobs, tmp_path):
  """Runs tests/hf_reference.py on `jobs`; returns {outputs path: arrays}."""
  jobs_path = os.path.join(str(tmp_path), "jobs.json")
  with open(jobs_path, "w") as f:
    json.dump(jobs, f)
  env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="2")
  subprocess.run([sys.executable, os.path.join(HERE, "hf_reference.py"),
                  jobs_path], check=True, env=env, timeout=600)
  return {job["outputs"]: dict(np.load(job["outputs"]))
          for job in jobs if job["op"] == "run"}


# Serves SavedModels in a process that imports only tensorflow and
# tensorflow_text: each job {"saved_model", "inputs": {name: [str]},
# "result"} gets serving_default's outputs saved to its result (.npz).
_SERVE = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401 (registers the tokenizer ops)
for job in json.load(open(sys.argv[1])):
  served = tf.saved_model.load(job["saved_model"])
  out = served.signatures["serving_default"](
      **{k: tf.constant(v) for k, v in job["inputs"].items()})
  arrays = {k: v.numpy() for k, v in out.items()}
  np.savez(job["result"], **{  # Strings as unicode: no pickled objects.
      k: a.astype("U") if a.dtype == object else a for k, a in arrays.items()})
assert set(sys.modules) & {"tf_keras", "official", "model"} == set()
"""


def serving_env():
  """The environment of a serving process: a plain TensorFlow user's, so
  without the project's start-up settings (TF_USE_LEGACY_KERAS would load
  tf_keras with TensorFlow, which serving must not need)."""
  env = {k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"}
  env["TF_CPP_MIN_LOG_LEVEL"] = "2"
  return env


def serve(jobs, job_file):
  """Runs each job's serving_default in one fresh process (see _SERVE)."""
  with open(str(job_file), "w", encoding="utf-8") as f:
    json.dump(jobs, f)
  subprocess.run([sys.executable, "-c", _SERVE, str(job_file)], check=True,
                 timeout=600, env=serving_env())


def run_job(cls, folder, inputs, outputs):
  return {"op": "run", "class": cls, "folder": str(folder),
          "inputs": str(inputs), "outputs": str(outputs)}


def save_inputs(path, feats):
  np.savez(str(path), input_ids=feats["input_ids"],
           input_mask=feats["input_mask"], segment_ids=feats["segment_ids"])
  return str(path)


def max_diff(a, b):
  return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def loaded_cleanly(outputs):
  """True when from_pretrained reported no missing/unexpected/mismatched."""
  return all(list(outputs[k]) == [""] for k in (
      "missing_keys", "unexpected_keys", "mismatched_keys"))


def google_tower(scope, embeddings_scope, hidden, layers, intermediate,
                 with_embeddings):
  """{name: shape} of one tower in google-research/electra's names
  (embedding width 16, 32 positions)."""
  shapes = {}
  if with_embeddings:
    e = embeddings_scope + "/embeddings/"
    shapes.update({e + "word_embeddings": [VOCAB_SIZE, 16],
                   e + "position_embeddings": [32, 16],
                   e + "token_type_embeddings": [2, 16],
                   e + "LayerNorm/gamma": [16], e + "LayerNorm/beta": [16]})
  shapes[scope + "/embeddings_project/kernel"] = [16, hidden]
  shapes[scope + "/embeddings_project/bias"] = [hidden]
  for i in range(layers):
    p = "%s/encoder/layer_%d/" % (scope, i)
    for sub in ("attention/self/query", "attention/self/key",
                "attention/self/value", "attention/output/dense"):
      shapes[p + sub + "/kernel"] = [hidden, hidden]
      shapes[p + sub + "/bias"] = [hidden]
    shapes[p + "intermediate/dense/kernel"] = [hidden, intermediate]
    shapes[p + "intermediate/dense/bias"] = [intermediate]
    shapes[p + "output/dense/kernel"] = [intermediate, hidden]
    shapes[p + "output/dense/bias"] = [hidden]
    for ln in ("attention/output/LayerNorm", "output/LayerNorm"):
      shapes[p + ln + "/gamma"] = [hidden]
      shapes[p + ln + "/beta"] = [hidden]
  return shapes


def write_google_checkpoint(directory, disc=(32, 2, 64), gen=(8, 2, 32)):
  """A TF1 pre-training checkpoint as Google's code names it, with shared
  embeddings, an Adam slot and global_step; no config beside it.

  Args:
    directory: a pathlib directory; gets model.ckpt-100.
    disc, gen: (hidden, layers, intermediate size) of D's and G's towers.
  Returns {name: value} of the model's tensors.
  """
  shapes = google_tower("electra", "electra", *disc, with_embeddings=True)
  shapes.update(google_tower("generator", "electra", *gen,
                             with_embeddings=False))
  d, g = disc[0], gen[0]
  shapes.update({
      "discriminator_predictions/dense/kernel": [d, d],
      "discriminator_predictions/dense/bias": [d],
      "discriminator_predictions/dense_1/kernel": [d, 1],
      "discriminator_predictions/dense_1/bias": [1],
      "generator_predictions/dense/kernel": [g, 16],
      "generator_predictions/dense/bias": [16],
      "generator_predictions/LayerNorm/gamma": [16],
      "generator_predictions/LayerNorm/beta": [16],
      "generator_predictions/output_bias": [VOCAB_SIZE]})
  rng = np.random.default_rng(5)
  values = {n: rng.standard_normal(s).astype(np.float32)
            for n, s in shapes.items()}
  with tf.Graph().as_default():
    variables = [tf.compat.v1.get_variable(n, initializer=tf.constant(v))
                 for n, v in sorted(values.items())]
    variables.append(tf.compat.v1.get_variable(
        "electra/embeddings/word_embeddings/adam_m",
        initializer=tf.zeros([VOCAB_SIZE, 16])))
    variables.append(tf.compat.v1.train.get_or_create_global_step())
    saver = tf.compat.v1.train.Saver(variables)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      saver.save(session, str(directory / "model.ckpt"), global_step=100)
  return values
