#!/usr/bin/env bash
# Creates (or reuses) the virtual environment .venv and installs what is missing.
# Usage: source-free; run `bash scripts/setup.sh`, then use .venv/bin/python.
# PYTHON picks the interpreter (default python3; TF 2.20 needs 3.9-3.13).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
venv="${ELECTRA_VENV:-$root/.venv}"
if [ ! -x "$venv/bin/python" ]; then
  echo "[setup] creating virtual environment $venv"
  "$py" -m venv "$venv"
fi
# ELECTRA_TEST_DEPS=1 (scripts/test.sh sets it) adds requirements-test.txt:
# transformers and torch, the reference the interoperability tests compare to.
# The stamp records what was installed; a set with the test requirements
# also satisfies a request without them.
stamp="$venv/.electra-hp-requirements"
digest() { cat "$@" constraints.txt | sha256sum | cut -d' ' -f1; }
base="base $(digest requirements.txt)"
with_tests="tests $(digest requirements.txt requirements-test.txt)"
reqs=(-r requirements.txt)
want="$base"
if [ "${ELECTRA_TEST_DEPS:-0}" = 1 ]; then
  reqs+=(-r requirements-test.txt)
  want="$with_tests"
fi
have="$(cat "$stamp" 2>/dev/null || true)"
if [ "$have" = "$want" ] || [ "$have" = "$with_tests" ]; then
  echo "[setup] $venv is up to date"
else
  echo "[setup] installing requirements into $venv (a few minutes the first time)"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q "${reqs[@]}" -c constraints.txt
  echo "$want" > "$stamp"
fi
# The repository on the venv's import path (a .pth file, as an editable
# install makes), so scripts below the root (bench/, scripts/) and the test
# helpers import the project's packages without touching sys.path.
"$venv/bin/python" - "$root" <<'PY'
import os, sys, sysconfig
path = os.path.join(sysconfig.get_paths()["purelib"], "electra_hp.pth")
with open(path, "w") as f:
  f.write(sys.argv[1] + "\n")
PY
