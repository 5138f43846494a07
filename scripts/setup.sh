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
stamp="$venv/.electra-hp-requirements"
want="$(cat requirements.txt constraints.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] installing requirements into $venv (a few minutes the first time)"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -r requirements.txt -c constraints.txt
  echo "$want" > "$stamp"
else
  echo "[setup] $venv is up to date"
fi
