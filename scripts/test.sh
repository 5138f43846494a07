#!/usr/bin/env bash
# Sets up the environment and runs the test suite (README's test command).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ELECTRA_TEST_DEPS=1 bash "$root/scripts/setup.sh"
cd "$root"
export TF_CPP_MIN_LOG_LEVEL=2
# Test files run in TEST_WORKERS parallel processes (pytest-xdist; default 2,
# the CI machine's cores; 0 runs them in this process), each file's tests in
# one worker and in order; files are handed out in collection order, which
# tests/conftest.py starts with the longest files.
workers="${TEST_WORKERS:-2}"
parallel=()
if [ "$workers" != 0 ]; then
  parallel=(-n "$workers" --dist loadfile --no-loadscope-reorder)
fi
# --durations: the slowest tests are listed, so CI logs show where its time
# goes (the whole .ci/run must stay well under 30 minutes).
exec "${ELECTRA_VENV:-$root/.venv}/bin/python" -m pytest -q --durations=25 ${parallel[@]+"${parallel[@]}"} \
  tests "$@"
