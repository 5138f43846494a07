"""export/tflite_embeddings.py: the input embeddings of a TFLite export
compute what `ElectraEmbeddings` computes in inference, and TFLite's
dynamic-range INT8 converter leaves their tables as they are stored (it
stores the Keras layer's word table as int8 with one scale)."""

import numpy as np
import pytest
import tensorflow as tf

from export import tflite
from export import tflite_embeddings
from model.layers.embeddings import ElectraEmbeddings

# 120 x 24 = 2880 weights: over the converter's 1024-weight threshold.
VOCAB, WIDTH = 120, 24


def _layer():
  layer = ElectraEmbeddings(VOCAB, WIDTH, max_position_embeddings=48,
                            initializer_range=0.3)
  ids = tf.zeros([1, 4], tf.int32)
  layer(ids, ids, training=False)
  for i, variable in enumerate(layer.weights):  # LayerNorm off 1 and 0 too
    variable.assign_add(tf.random.stateless_normal(variable.shape, [5, i],
                                                   stddev=0.1))
  return layer


def _inputs():
  ids = tf.random.stateless_uniform([3, 11], [2, 0], maxval=VOCAB,
                                    dtype=tf.int32)
  segments = tf.constant(np.tile([0] * 6 + [1] * 5, [3, 1]), tf.int32)
  return ids, segments


@pytest.mark.parametrize("tables, tol", [("float", 1e-5), ("int8_rows", 0.05)])
def test_the_embeddings_compute_the_keras_layers_outputs(tables, tol):
  layer = _layer()
  ids, segments = _inputs()
  want = layer(ids, segments, training=False).numpy()
  got = tflite_embeddings.TfliteEmbeddings(layer, tables)(ids, segments)
  assert np.abs(got.numpy() - want).max() < tol
  with pytest.raises(ValueError, match="tables must be one of"):
    tflite_embeddings.TfliteEmbeddings(layer, "int4")


def _int8_tables(flatbuffer):
  """{shape: number of scales} of the int8 tensors of a .tflite."""
  from ai_edge_litert import interpreter  # pylint: disable=g-import-not-at-top
  details = interpreter.Interpreter(
      model_content=flatbuffer).get_tensor_details()
  return {tuple(d["shape"]): len(d["quantization_parameters"]["scales"])
          for d in details if d["dtype"] == np.int8}


@pytest.mark.parametrize("tables", [None, "float", "int8_rows"])
def test_dynamic_int8_keeps_the_tables_as_stored(tables):
  """The converter quantizes the Keras layer's word table with one scale;
  float tables stay float, int8_rows ones keep their scale per row."""
  layer = _layer()
  module = tf.Module()
  module.embeddings = layer if tables is None else (
      tflite_embeddings.TfliteEmbeddings(layer, tables))
  spec = tf.TensorSpec([None, None], tf.int32)

  @tf.function(input_signature=[spec, spec])
  def embed(input_ids, segment_ids):
    return dict(out=module.embeddings(input_ids, segment_ids, training=False))
  flatbuffer = tflite.convert(embed.get_concrete_function(), module,
                              "dynamic")
  int8 = _int8_tables(flatbuffer)
  if tables is None:
    assert int8.get((VOCAB, WIDTH)) == 1  # one scale for every row
  elif tables == "float":
    assert (VOCAB, WIDTH) not in int8
  else:  # int8 values; their scales, stored as int32 bits, not quantized
    for shape in ((VOCAB, WIDTH), (48, WIDTH), (2, WIDTH)):
      assert int8[shape] == 0, shape
  from ai_edge_litert import interpreter  # pylint: disable=g-import-not-at-top
  run = interpreter.Interpreter(model_content=flatbuffer).get_signature_runner()
  ids, segments = _inputs()
  got = run(input_ids=ids.numpy(), segment_ids=segments.numpy())["out"]
  want = layer(ids, segments, training=False).numpy()
  assert np.abs(got - want).max() < (1e-5 if tables == "float" else 0.1)
