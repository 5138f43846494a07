#!/usr/bin/env bash
# Sets up the environment and runs the test suite (README's test command).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ELECTRA_TEST_DEPS=1 bash "$root/scripts/setup.sh"
cd "$root"
export TF_CPP_MIN_LOG_LEVEL=2
exec "${ELECTRA_VENV:-$root/.venv}/bin/python" -m pytest -q tests "$@"
