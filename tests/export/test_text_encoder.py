"""export/text_encoder.py: raw text to ids in the graph, as fine-tuning's
Python tokenizer gives them, including texts with no pieces."""

import numpy as np
import tensorflow as tf

from export.text_encoder import TextEncoder
from text import tokenization
from tests import finetune_fixtures as ff

SEQ = 8


def _python_ids(tokenizer, text):
  pieces = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))
  ids = [tokenizer.cls_id] + pieces[:SEQ - 2] + [tokenizer.sep_id]
  return ids + [0] * (SEQ - len(ids))


def test_edge_case_texts_get_the_ids_fine_tuning_gives():
  # Empty, blank, only punctuation, longer than the sequence, mixed
  # scripts, emoji.
  tokenizer = tokenization.create_tokenizer(ff.VOCAB_FILE, None, True)
  encoder = TextEncoder(SEQ, vocab_file=ff.VOCAB_FILE)
  texts = ["", "   ", "\t\n", "the movie", "", "?!...", "the " * 20,
           "the \u5f71\u7247 movie \u0444\u0438\u043b\u044c\u043c",
           "the movie \U0001f600\U0001f3ac!"]
  features = {k: v.numpy()
              for k, v in encoder.encode(tf.constant(texts)).items()}
  want = np.array([_python_ids(tokenizer, t) for t in texts])
  np.testing.assert_array_equal(features["input_ids"], want)
  np.testing.assert_array_equal(features["input_mask"], (want > 0).astype(int))
  assert features["input_ids"][0].tolist()[:3] == [
      tokenizer.cls_id, tokenizer.sep_id, 0]


def test_an_empty_second_text_keeps_its_sep():
  encoder = TextEncoder(SEQ, vocab_file=ff.VOCAB_FILE)
  tokenizer = tokenization.create_tokenizer(ff.VOCAB_FILE, None, True)
  features = encoder.encode(tf.constant(["the movie"]), tf.constant([" "]))
  ids = features["input_ids"].numpy()[0].tolist()
  n = len(tokenizer.tokenize("the movie"))
  assert ids[:n + 3] == ([tokenizer.cls_id] + ids[1:n + 1] +
                         [tokenizer.sep_id, tokenizer.sep_id])
  assert features["segment_ids"].numpy()[0].tolist()[n + 2] == 1
