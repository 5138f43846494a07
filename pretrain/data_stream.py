"""Where a resumed pre-training run picks up its stream of training examples.

Each checkpoint records `examples_seen` and the config fields the stream
depends on (KEYS). A saved input-iterator state is only valid for the values
it was saved with; when one changes (e.g. another `train_batch_size` on more
devices), the trainer restarts the stream at the same example offset
instead (`pretrain_data.InputFn.at_offset`).
"""

import json

# Config fields that decide the stream of training examples; train_shards:
# the fingerprint of the shards' names and sizes (pretrain/shards.py), so a
# resume on other shards (hparam accept_new_data) does not restore an
# iterator state that points into the old files.
KEYS = ("train_batch_size", "max_seq_length", "max_predictions_per_seq",
        "mask_prob", "seed", "shuffle_buffer", "pretrain_tfrecords",
        "train_shards")
# The KEYS of the MaskingSpec; the others are the DataSpec's.
MASKING_KEYS = ("max_seq_length", "max_predictions_per_seq", "mask_prob")
# Checkpoint keys of the step, the examples consumed and the KEYS' values.
STEP_KEY = "step/.ATTRIBUTES/VARIABLE_VALUE"
EXAMPLES_KEY = "examples_seen/.ATTRIBUTES/VARIABLE_VALUE"
STREAM_KEY = "data_stream/.ATTRIBUTES/VARIABLE_VALUE"


def settings(data, masking):
  """The KEYS' values as canonical JSON, from a configure_specs.DataSpec
  and MaskingSpec (train_shards: its fingerprint)."""
  values = {k: getattr(masking if k in MASKING_KEYS else data, k)
            for k in KEYS}
  values["train_shards"] = (values["train_shards"] or {}).get("fingerprint")
  return json.dumps(values, sort_keys=True)


def changed_settings(saved_json, current_json):
  """'key old -> new' for each data-stream setting that differs (a key
  the checkpoint predates is not compared)."""
  saved, current = json.loads(saved_json), json.loads(current_json)
  return ["%s %s -> %s" % (k, json.dumps(saved.get(k)), json.dumps(current[k]))
          for k in KEYS if k in saved and saved[k] != current[k]]
