"""TFRecord shard writing for the dataset builder; the example-level hold-out.

`ShardWriter` deals serialized examples round-robin to shard files written
under temporary names; `commit()` renames them to
`<prefix>-0000i-of-0000n`. It never leaves an empty shard: with fewer
examples than requested shards it writes one shard per example and says so.

`hold_out_tail` is the builder's fallback when the held-out fraction picked
no whole document (a corpus of few, long documents): it moves the last
examples of the corpus stream to the held-out shards.
"""

import os
import posixpath

import numpy as np

from util import io_utils
from util.errors import UserError


class ShardWriter(object):
  """Deals examples round-robin to `<prefix>-0000i-of-0000n` TFRecord files.

  Files are written under temporary names and renamed by `commit()`. They are
  opened on the first write, so that worker processes are forked before this
  process makes any TensorFlow object.

  Args:
    output_dir: the directory of the shards.
    prefix: file name prefix, e.g. "pretrain_data.tfrecord".
    num_shards: the number of shards asked for; `commit()` writes
      min(num_shards, examples written) of them.
    tmp_tag: distinguishes the temporary files of two writers of one prefix.
  """

  def __init__(self, output_dir, prefix, num_shards, tmp_tag=""):
    self.prefix = prefix
    self.requested = num_shards
    self._dir = output_dir
    # The pid keeps two builders of one folder apart (and says whose).
    self._tmp = [posixpath.join(output_dir, ".tmp-%d-%s%s-%05d" % (
        os.getpid(), prefix, tmp_tag, i)) for i in range(num_shards)]
    self._writers = None
    self.counts = [0] * num_shards
    self._next = 0

  @property
  def total(self):
    return sum(self.counts)

  @property
  def num_written(self):
    """Shards that hold at least one example (the ones `commit` keeps)."""
    return min(self.requested, self.total)

  @property
  def names(self):
    n = self.num_written
    return ["%s-%05d-of-%05d" % (self.prefix, i, n) for i in range(n)]

  def _open(self):
    if self._writers is None:
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      self._writers = [tf.io.TFRecordWriter(p) for p in self._tmp]

  def write(self, records):
    self._open()
    for record in records:
      self._writers[self._next].write(record)
      self.counts[self._next] += 1
      self._next = (self._next + 1) % len(self._writers)

  def close(self):
    self._open()
    for w in self._writers:
      w.close()

  def records(self):
    """Yields the closed temporary shards' records in the order written."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    readers = [tf.data.TFRecordDataset(p).as_numpy_iterator()
               for p in self._tmp]
    for i in range(self.total):
      yield next(readers[i % len(readers)])

  def commit(self):
    """Renames the non-empty shards to their final names; drops the rest."""
    for tmp, name in zip(self._tmp, self.names):
      io_utils.rename(tmp, posixpath.join(self._dir, name))
    self.discard()

  def discard(self):
    """Removes the temporary shards, even when closing them fails (a full
    disk fails the last flush too)."""
    if self._writers is not None:
      for w in self._writers:
        try:
          w.close()
        except Exception:  # pylint: disable=broad-except
          pass  # The file goes below either way.
    for tmp in self._tmp:
      try:
        if io_utils.exists(tmp):
          io_utils.remove(tmp)
      except Exception:  # pylint: disable=broad-except
        pass  # Best effort: the next build removes leftovers too.

  def summary(self):
    return [{"file": name, "examples": c}
            for name, c in zip(self.names, self.counts)]

  def note(self):
    """Why fewer shards than asked for were written, or None."""
    if self.num_written == self.requested:
      return None
    return ("%d of the %d requested %s shards written: there are only %d "
            "examples, and no shard is left empty" % (
                self.num_written, self.requested, self.prefix, self.total))


def text_tokens(serialized):
  """Tokens of one serialized example without [CLS], [SEP] and padding."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  feature = tf.train.Example.FromString(serialized).features.feature
  mask = np.array(feature["input_mask"].int64_list.value)
  segments = np.array(feature["segment_ids"].int64_list.value)
  return int(mask.sum()) - 2 - int(segments.max() > 0)


def hold_out_tail(train, heldout, fraction, output_dir):
  """Moves the last examples of the (closed) training shards to `heldout`.

  Holds out max(1, round(fraction * N)) of the N training examples: the end of
  the corpus stream, so the held-out examples are contiguous text and share a
  document with the training set only at the boundary.

  Args:
    train: the closed ShardWriter of the training examples.
    heldout: the (empty) ShardWriter of the held-out examples.
    fraction: the --heldout-fraction, in (0, 1).
    output_dir: where the shards are written.

  Returns:
    (new training ShardWriter, examples moved, their text tokens).

  Raises:
    UserError: the corpus is too small to hold out one example and still
      keep one to train on.
  """
  total = train.total
  count = max(1, int(round(fraction * total)))
  if total - count < 1:
    raise UserError(
        "the corpus makes only %d example(s): too few to hold out %d for "
        "evaluation (--heldout-fraction %g) and still train. Add text, or "
        "build with --heldout-fraction 0 and evaluate on the training "
        "shards." % (total, count, fraction))
  kept = ShardWriter(output_dir, train.prefix, train.requested,
                     tmp_tag=".kept")
  tokens = 0
  try:
    for i, record in enumerate(train.records()):
      if i < total - count:
        kept.write([record])
      else:
        heldout.write([record])
        tokens += text_tokens(record)
    kept.close()
  except BaseException:
    kept.discard()
    raise
  train.discard()
  return kept, count, tokens
