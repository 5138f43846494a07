"""The pre-training dataset builder: raw text -> TFRecord shards, manifest.

`build_pretraining_dataset.py` is its command line and `build_vocab.py` that
of the vocabulary learner. Modules, in the order data flows through them:

  vocabulary.py         WordPiece vocab.txt from a corpus (build_vocab.py)
  text.py               chunks of a file, documents, sentences
  packing.py            sentences -> example spans -> [CLS] A [SEP] B [SEP]
  tfrecord_encoding.py  examples -> serialized tf.train.Example bytes
  examples.py           ExampleBuilder: one chunk of text -> serialized examples
  parallel.py           chunks built by worker processes, results in order
  progress.py           the progress line on stderr
  output.py             the output directory and manifest.json
  used_shards.py        shards a model records: no rebuild in place unless
                        --overwrite-used
  build.py              build_dataset: the whole build

Shard files are written by `pretrain/tfrecord_shards.py`.
"""
