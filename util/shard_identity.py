"""The identity of a set of pre-training shards: their names and sizes.

Pre-training records it in the model's config.json (`train_shards`) and in
each checkpoint's data-stream settings; a resume on other shards (rebuilt
in place, added or removed) is refused unless hparam accept_new_data
(interop/saved_config.py). Sizes are a cheap fingerprint: a rebuild that
writes other examples changes them; a byte-identical rebuild does not
matter.
"""

import hashlib
import json
import posixpath

from util import io_utils


def shard_set(files):
  """The identity of a set of shards, recorded in a model's config.json:
  {"fingerprint": "sha256:<16 hex>" of their names and sizes, "files":
  {name: bytes}}."""
  sizes = {posixpath.basename(f): io_utils.file_size(f) for f in files}
  digest = hashlib.sha256(json.dumps(sorted(sizes.items())).encode("utf-8"))
  return {"fingerprint": "sha256:" + digest.hexdigest()[:16], "files": sizes}


def shard_set_changes(saved, current):
  """What differs between two `shard_set`s, in words (at most 3 files)."""
  old, new = saved.get("files", {}), current["files"]
  changes = (["%s removed" % n for n in sorted(set(old) - set(new))] +
             ["%s added" % n for n in sorted(set(new) - set(old))] +
             ["%s %d -> %d bytes" % (n, old[n], new[n]) for n in sorted(old)
              if n in new and old[n] != new[n]])
  more = " and %d more" % (len(changes) - 3) if len(changes) > 3 else ""
  return ", ".join(changes[:3]) + more
