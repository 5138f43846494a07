"""Text-in TFLite exports (`export_model.py --format tflite --task`).

One tiny fine-tuning run (sst, and sts for a regression of sentence
pairs, at max_seq_length 16 so texts get cut) is exported as TFLite,
float32 and dynamic-range INT8, and compared with the function a
SavedModel export serves (`saved_model.task_module`'s `serve_text`, run
in the test's process: tests/export/test_saved_model_serving.py checks
the saved and loaded one). The float TFLite model,
run in a fresh process that imports only ai_edge_litert and
tensorflow_text, gives the SavedModel's ids exactly and its outputs
within 1e-4 on texts that are empty, blank, punctuation only, too long,
of mixed scripts and with emoji; the INT8 model's labels mostly agree,
and its mean shift on the training texts is taken off the head's bias
(the regression's too, measured on training pairs).
tensorflow_text imports TensorFlow itself (its kernels link against it),
so the fresh process asserts that neither the project's packages nor
tf_keras were imported. Also: the SentencePiece tokenizer in TFLite gives
`TextEncoder`'s ids (but [UNK] where SentencePiece falls back to bytes),
the encoder as the export converts it computes the Keras encoder's
outputs for 1 to 4 heads, and bad flags exit 2.
"""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import configure_specs
import export_model
from export import inference_encoder
from export import saved_model
from export import tflite
from export import tflite_calibration as calibration
from export import tflite_text
from export.text_encoder import TextEncoder
from finetune import finetuned_model
from finetune import runner
from tests import finetune_fixtures as ff
from tests import interop_fixtures as ix
from tests import sentencepiece_fixtures as spf
from tests.export import test_inference_encoder as encoders
from util.errors import UserError

SEQ = 16
TOL = 1e-4
EDGE_TEXTS = [
    "", "  ", "\t\n", "?!... ,;", "the film was great .",
    "the dog barked at the sailors " * 6,  # longer than SEQ tokens
    "Café crème 東京の首都 Привет мир naïve",
    "😀 great 👍 film 🍕",
]
# The fresh process: only the interpreter and tensorflow-text imported.
_RUN = """
import json, sys
import numpy as np
import tensorflow_text
from ai_edge_litert.interpreter import InterpreterWithCustomOps
job = json.load(open(sys.argv[1]))
for name, path in job["models"].items():
  run = InterpreterWithCustomOps(
      custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
      model_path=path, num_threads=1).get_signature_runner()
  out = run(**{k: np.array(v) for k, v in job["inputs"][name].items()})
  np.savez(job["results"][name], **{
      k: a.astype("U") if a.dtype == object else a for k, a in out.items()})
ours = {"export", "model", "finetune", "util", "configure", "tf_keras"}
assert not ours & set(m.split(".")[0] for m in sys.modules), sorted(
    ours & set(m.split(".")[0] for m in sys.modules))
"""


def _train_texts(name, column):
  path = os.path.join(ff.FIXTURE_DIR, "finetuning_data", name, "train.tsv")
  with open(path, encoding="utf-8") as f:
    return [row[column] for row in csv.DictReader(f, delimiter="\t",
                                                   quoting=csv.QUOTE_NONE)]


def _export(model_dir, task, fmt, out, *extra):
  assert export_model.main([
      "--data-dir", ff.FIXTURE_DIR, "--model-name", "tiny", "--task", task,
      "--format", fmt, "--output", out,
      "--hparams", json.dumps({"model_dir": model_dir})] + list(extra)) == 0
  return out


@pytest.fixture(scope="module")
def served(tmp_path_factory):
  """{(task, format): outputs (dict of numpy arrays) on `inputs[task]`},
  the TFLite ones from a fresh process; and the export directories."""
  root = tmp_path_factory.mktemp("tflite")
  model_dir = str(root / "model")
  runner.run_finetuning(ff.tiny_config(model_dir=model_dir,
                                       task_names=["sst", "sts"],
                                       max_seq_length=SEQ))
  sentences = EDGE_TEXTS + _train_texts("sst", "sentence")
  inputs = dict(sst=dict(text=sentences),
                sts=dict(text=EDGE_TEXTS, text_b=EDGE_TEXTS[::-1]))
  exports = {
      ("sst", "float"): _export(model_dir, "sst", "tflite",
                                str(root / "sst_float")),
      ("sst", "int8"): _export(model_dir, "sst", "tflite",
                               str(root / "sst_int8"), "--quantize",
                               "dynamic"),
      ("sts", "float"): _export(model_dir, "sts", "tflite",
                                str(root / "sts_float")),
      ("sts", "int8"): _export(model_dir, "sts", "tflite",
                               str(root / "sts_int8"), "--quantize",
                               "dynamic"),
  }
  job = dict(models={}, inputs={}, results={})
  for (task, kind), out in exports.items():
    key = "%s_%s" % (task, kind)
    job["models"][key] = os.path.join(out, tflite.MODEL_FILE)
    job["inputs"][key] = inputs[task]
    job["results"][key] = str(root / (key + ".npz"))
  with open(str(root / "job.json"), "w", encoding="utf-8") as f:
    json.dump(job, f)
  subprocess.run([sys.executable, "-c", _RUN, str(root / "job.json")],
                 check=True, timeout=300, env=ix.serving_env())
  results = {key: dict(np.load(path)) for key, path in job["results"].items()}
  for task in ("sst", "sts"):  # What the SavedModel's serving_default runs.
    model, task_object, config = finetuned_model.load_finetuned(
        model_dir, ff.FIXTURE_DIR, task, log=lambda _: None)
    _, module = saved_model.task_module(
        model, task_object, configure_specs.VocabularySpec.from_config(config),
        log=lambda _: None)
    out = module.serve_text(
        **{k: tf.constant(v) for k, v in inputs[task].items()})
    results[task + "_saved"] = {k: v.numpy() for k, v in out.items()}
  return results, exports


@pytest.mark.parametrize("task", ["sst", "sts"])
def test_float_tflite_serves_what_the_saved_model_serves(served, task):
  results, _ = served
  lite, saved = results[task + "_float"], results[task + "_saved"]
  assert set(lite) == set(saved)
  for key in ("input_ids", "input_mask", "segment_ids"):
    np.testing.assert_array_equal(lite[key], saved[key], err_msg=key)
  ids = lite["input_ids"]
  assert (ids[:3, :2] == [2, 3]).all()  # blank texts: [CLS] [SEP]
  if task == "sst":
    assert (ids[:3, 2:] == 0).all()
  assert (lite["input_mask"][5] == 1).all()  # cut to SEQ
  for key in ("probabilities", "score"):
    if key in saved:
      assert np.abs(lite[key] - saved[key]).max() < TOL, key
  if task == "sst":
    np.testing.assert_array_equal(lite["label_id"], saved["label_id"])
    assert list(lite["label"]) == [v.decode() for v in saved["label"]]


def test_int8_tflite_mostly_agrees_with_float(served):
  results, exports = served
  lite, int8 = results["sst_float"], results["sst_int8"]
  np.testing.assert_array_equal(int8["input_ids"], lite["input_ids"])
  assert np.abs(int8["probabilities"] - lite["probabilities"]).max() < 0.1
  assert (int8["label_id"] == lite["label_id"]).mean() >= 0.8
  meta = json.load(open(os.path.join(exports["sst", "int8"], tflite.META_FILE),
                        encoding="utf-8"))
  assert meta["quantize"] == "dynamic" and meta["labels"] == ["0", "1"]
  # Bias correction: the shift measured on the training texts (all of
  # them: fewer than calibration.TEXTS) was taken off the head's bias, so
  # on those texts the INT8 model's mean shift is smaller now.
  shift = np.asarray(meta["bias_correction"])
  train = slice(len(EDGE_TEXTS), None)
  left = calibration.output_shift(
      "classification", dict(probabilities=lite["probabilities"][train]),
      dict(probabilities=int8["probabilities"][train]))
  assert np.abs(shift).max() > 0 and np.abs(shift.sum()) < 1e-6
  assert np.abs(left).max() < 0.5 * np.abs(shift).max()
  sizes = [os.path.getsize(os.path.join(exports["sst", k], tflite.MODEL_FILE))
           for k in ("float", "int8")]
  assert sizes[1] < sizes[0]


def test_a_regression_of_pairs_is_bias_corrected_too(served):
  """The shift is measured on training pairs (`text`, `text_b`): one value,
  the score's."""
  results, exports = served
  meta = json.load(open(os.path.join(exports["sts", "int8"], tflite.META_FILE),
                        encoding="utf-8"))
  assert meta["inputs"] == ["text", "text_b"]
  assert len(meta["bias_correction"]) == 1
  lite, int8 = results["sts_float"], results["sts_int8"]
  assert np.abs(int8["score"] - lite["score"]).max() < 0.1


def test_the_runner_classifies_a_sentence(served):
  _, exports = served
  classify = tflite.TfliteClassifier(exports["sst", "float"], num_threads=1)
  out = classify(text=["the film was great .", ""])
  assert out["probabilities"].shape == (2, 2)
  assert list(out["label"]) == [["0", "1"][i] for i in out["label_id"]]
  with pytest.raises(ValueError, match="give the inputs text"):
    classify(sentence=["x"])


def test_sentencepiece_tokenizer_in_tflite_gives_the_encoders_ids(tmp_path):
  sp_model = spf.train(tmp_path, "unigram")
  texts = list(spf.TEXTS) + ["", "   ", "Привет " * 20]
  reference = TextEncoder(SEQ, sp_model, truncation_rule="head+tail")
  encoder = tflite_text.TfliteTextEncoder(SEQ, sp_model,
                                          truncation_rule="head+tail")

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def encode(text):
    return encoder.encode(text)
  flatbuffer = tflite.convert(encode.get_concrete_function(), encoder)
  import tensorflow_text  # pylint: disable=g-import-not-at-top
  from ai_edge_litert import interpreter  # pylint: disable=g-import-not-at-top
  run = interpreter.InterpreterWithCustomOps(
      custom_op_registerers=[
          tensorflow_text.tflite_registrar.AddFastSentencepieceTokenize],
      model_content=flatbuffer).get_signature_runner()
  out = run(text=np.array(texts))
  want = {k: v.numpy() for k, v in reference.encode(tf.constant(texts)).items()}
  # FastSentencepieceTokenizer has no byte fallback: where SentencePiece
  # spells a character that has no piece as bytes, it gives one [UNK].
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  processor = spm.SentencePieceProcessor(model_file=sp_model)
  byte_ids = [i for i in range(processor.get_piece_size())
              if processor.is_byte(i)]
  by_bytes = np.isin(want["input_ids"], byte_ids).any(axis=1)
  assert 0 < by_bytes.sum() < len(texts) - 3
  for key, value in want.items():
    np.testing.assert_array_equal(out[key][~by_bytes], value[~by_bytes],
                                  err_msg=key)
  unk = processor.piece_to_id("[UNK]")
  assert (out["input_ids"][by_bytes] == unk).any(axis=1).all()


@pytest.mark.parametrize("argv, message", [
    (["--format", "tflite"], "--format tflite exports a fine-tuned task"),
    (["--format", "saved_model", "--quantize", "dynamic"],
     "--quantize applies to --format tflite only"),
])
def test_bad_flags_exit_2(tmp_path, argv, message):
  with pytest.raises(UserError, match=message) as error:
    export_model.main(["--data-dir", str(tmp_path), "--model-name", "M",
                       "--output", str(tmp_path / "o")] + argv)
  assert error.value.exit_code == 2


@pytest.mark.parametrize("heads", [1, 2, 3, 4])
def test_the_encoder_in_tflite_computes_the_keras_encoders_outputs(heads):
  """`InferenceEncoder` as export/tflite.py converts it (one group, tokens
  as rows), on a padded batch; 37 FFN units."""
  encoder = encoders._encoder(hidden=24, heads=heads, intermediate=37)  # pylint: disable=protected-access
  module = tf.Module()
  module.network = inference_encoder.InferenceEncoder(encoder, parts=1,
                                                      by_columns=False)
  ids = tf.TensorSpec([None, None], tf.int32)

  @tf.function(input_signature=[ids] * 3)
  def forward(input_ids, input_mask, segment_ids):
    return dict(sequence_output=module.network(dict(
        input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids)))
  from ai_edge_litert import interpreter  # pylint: disable=g-import-not-at-top
  run = interpreter.Interpreter(model_content=tflite.convert(
      forward.get_concrete_function(), module)).get_signature_runner()
  inputs = encoders._inputs([9, 4], seq_len=12)  # pylint: disable=protected-access
  got = run(**{k: np.asarray(v) for k, v in inputs.items()})
  want = encoder(inputs, training=False).numpy()
  mask = np.asarray(inputs["input_mask"], bool)
  assert np.abs(got["sequence_output"] - want)[mask].max() < TOL
