"""ExampleBuilder: one chunk of raw text -> serialized pre-training examples.

A chunk's random choices (packing, held-out documents) come from generators
seeded by (seed, file, chunk index), so a chunk's examples do not depend on
which process builds it or in which order.
"""

import random

import numpy as np

from pretrain.dataset_builder import packing
from pretrain.dataset_builder import text as text_lib
from pretrain.dataset_builder.tfrecord_encoding import serialize_examples


class ExampleBuilder(object):
  """Turns chunks of raw text into serialized examples (runs in the workers).

  Args:
    tokenizer: a text.tokenization tokenizer.
    max_seq_length: tokens per example, [CLS]/[SEP] included.
    blanks_separate_docs: a blank line ends a document (else a file is one).
    heldout_fraction: probability that a document goes to the held-out set.
    seed: base of every random choice.
  """

  def __init__(self, tokenizer, max_seq_length, blanks_separate_docs=True,
               heldout_fraction=0.0, seed=0):
    self.tokenizer = tokenizer
    self.max_seq_length = max_seq_length
    self.blanks_separate_docs = blanks_separate_docs
    self.heldout_fraction = heldout_fraction
    self.seed = seed

  def build(self, relpath, chunk_index, text):
    """Examples of one chunk of a file.

    Args:
      relpath: the file's path relative to the corpus directory.
      chunk_index: the chunk's index in its file.
      text: the chunk (str).
    Returns:
      dict with train / heldout (lists of serialized examples), their token
      counts train_tokens / heldout_tokens (without [CLS]/[SEP]/padding),
      corpus_tokens, documents, positions (non-padding positions) and
      unk_tokens ([UNK] tokens written, in either split).
    """
    units, bounds = text_lib.split_documents(text, self.blanks_separate_docs)
    ids, splits = self.tokenizer.encode_ragged(units)
    lengths = np.diff(splits).tolist()
    splits = splits.tolist()
    rng = random.Random(
        packing.derive_seed(self.seed, relpath, chunk_index, "pack"))
    heldout_rng = random.Random(
        packing.derive_seed(self.seed, relpath, chunk_index, "heldout"))
    spans = {"train": [], "heldout": []}
    documents = 0
    fraction = self.heldout_fraction
    for d in range(len(bounds) - 1):
      u0, u1 = bounds[d], bounds[d + 1]
      heldout = fraction > 0 and heldout_rng.random() < fraction
      doc = packing.pack_document(lengths[u0:u1], splits[u0], rng,
                                  self.max_seq_length)
      if doc:
        documents += 1
        spans["heldout" if heldout else "train"].extend(doc)
    result = {"corpus_tokens": int(splits[-1]), "documents": documents,
              "positions": 0, "unk_tokens": 0}
    for split, split_spans in spans.items():
      examples, tokens, positions, unk = self._serialize(ids, split_spans)
      result[split] = examples
      result[split + "_tokens"] = tokens
      result["positions"] += positions
      result["unk_tokens"] += unk
    return result

  def _serialize(self, ids, spans):
    """Serialized examples of the spans, their text tokens, positions and
    [UNK] tokens.

    Text tokens exclude [CLS], [SEP] and padding (counted from the laid-out
    arrays, independently of the packing); positions include [CLS]/[SEP].
    """
    if not spans:
      return [], 0, 0, 0
    tok = self.tokenizer
    input_ids, input_mask, segment_ids = packing.layout_examples(
        ids, spans, self.max_seq_length, tok.cls_id, tok.sep_id, tok.pad_id)
    positions = int(input_mask.sum(dtype=np.int64))
    num_special = 2 * len(spans) + int((segment_ids.max(axis=1) > 0).sum())
    unk = int(((input_ids == tok.unk_id) & (input_mask > 0)).sum())
    return (serialize_examples(input_ids, input_mask, segment_ids),
            positions - num_special, positions, unk)
