#!/usr/bin/env bash
# Runs the quick start (scripts/quickstart.sh) as a new user would, in a fresh
# directory with QUICKSTART_STEPS (default 60) training steps, and checks what
# it must leave: a checkpoint, results/pretrain_eval.json, the histogram PNG
# and the final metrics line. Then runs it again: it must say the training is
# finished and exit 0. Exits non-zero on any failure. Called by .ci/run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export QUICKSTART_DIR="${QUICKSTART_DIR:-$(mktemp -d)/quickstart}"
export QUICKSTART_STEPS="${QUICKSTART_STEPS:-60}"
model="$QUICKSTART_DIR/models/quickstart-hp"
log="$(dirname "$QUICKSTART_DIR")/quickstart.log"

fail() { echo "ci_quickstart: FAILED: $*" >&2; exit 1; }

echo "== quick start, $QUICKSTART_STEPS steps, in $QUICKSTART_DIR"
start=$(date +%s)
bash "$root/scripts/quickstart.sh" 2>&1 | tee "$log" ||
  fail "scripts/quickstart.sh exited with ${PIPESTATUS[0]}"
echo "== quick start took $(( $(date +%s) - start )) s"

ls "$model"/checkpoints/ckpt-"$QUICKSTART_STEPS".index >/dev/null ||
  fail "no checkpoint ckpt-$QUICKSTART_STEPS in $model/checkpoints"
[ -s "$model/results/pretrain_eval.json" ] ||
  fail "no $model/results/pretrain_eval.json"
[ "$(head -c 4 "$model/results/gen_max_prob_histogram.png" | tail -c 3)" = "PNG" ] ||
  fail "no histogram PNG in $model/results"
grep -q "^Eval at step $QUICKSTART_STEPS: .*disc_auc" "$log" ||
  fail "no final metrics line ('Eval at step $QUICKSTART_STEPS: ...') in the output"
grep -q "^What it is good for: .*disc_auc_t1" "$log" ||
  fail "no closing 'What it is good for:' line (from disc_auc_t1) in the output"
grep -q "heldout" "$QUICKSTART_DIR/pretrain_tfrecords/manifest.json" ||
  fail "no manifest"
if grep -q "failed call to cuInit\|Traceback" "$log"; then
  fail "TensorFlow start-up noise or a traceback in the quick start's output"
fi

echo "== quick start again: must find the work done and exit 0"
bash "$root/scripts/quickstart.sh" > "$log.again" 2>&1 ||
  { tail -20 "$log.again"; fail "the second quick-start run exited non-zero"; }
grep -q "Training already finished" "$log.again" ||
  { tail -20 "$log.again"; fail "the second run did not take the 'already done' path"; }
echo "ci_quickstart: OK (checkpoint, results, plot and metrics present; re-run exits 0)"
