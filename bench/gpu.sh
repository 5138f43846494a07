#!/usr/bin/env bash
# One-GPU benchmark: ELECTRA-Base and -Small at seq 128 and 512, in
# mixed_bfloat16 with XLA and in float32, our "mlm" and "hp_loss" steps
# beside tf-models-official's ElectraPretrainer (bench/compare_peer.py, one
# process per size/seq/dtype). Prints one JSON line per model and
# configuration (also saved to $BENCH_DIR/gpu_bench.jsonl), then a table:
# sequences/s, MFU against the device's published peak (and a matmul probe),
# peak device memory, and the largest batch that fits (a doubling search
# capped at BENCH_MAX_BATCH_SECONDS per model; ">=N" when a cap stopped it).
#
# The whole run keeps within BENCH_SECONDS (default 450 s, i.e. under 8
# minutes with start-up): configurations run most important first (Base
# seq 128 bf16 first) and those that no longer fit are listed as skipped.
#
#   bash bench/gpu.sh                 # on a GPU machine
#   BENCH_TINY=1 bash bench/gpu.sh    # tiny model on CPU (CI checks it runs)
#
# Env: PYTHON (default .venv/bin/python, else python3), BENCH_DIR (default
# runs/bench_gpu), BENCH_SECONDS, BENCH_MAX_BATCH_SECONDS, BENCH_MODES (our
# sampling modes; default mlm,hp_loss, in tiny mode hp_loss), BENCH_TINY.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
BENCH_DIR=${BENCH_DIR:-runs/bench_gpu}
BUDGET=${BENCH_SECONDS:-450}
mkdir -p "$BENCH_DIR"
RESULTS="$BENCH_DIR/gpu_bench.jsonl"
: > "$RESULTS"

if [ "${BENCH_TINY:-0}" = 1 ]; then
  CONFIGS="tiny:32:2"
  EXTRA=(--vocab-size 64 --rounds 1 --steps 1 --warmup-steps 1
         --max-batch-limit 8 --hparams '{"max_predictions_per_seq": 4}')
  MAX_BATCH_SECONDS=${BENCH_MAX_BATCH_SECONDS:-2}
  MODES=${BENCH_MODES:-hp_loss}
else
  # size:seq:batch, in the order they run.
  CONFIGS="base:128:128 small:128:256 base:512:32 small:512:64"
  EXTRA=(--rounds 3 --steps 5 --warmup-steps 1)
  MAX_BATCH_SECONDS=${BENCH_MAX_BATCH_SECONDS:-15}
  MODES=${BENCH_MODES:-mlm,hp_loss}
fi

start=$SECONDS
for dtype in "mixed_bfloat16 --jit" float32; do
  for config in $CONFIGS; do
    IFS=: read -r size seq batch <<< "$config"
    set -- $dtype
    left=$(( BUDGET - (SECONDS - start) ))
    label="{\"size\": \"$size\", \"seq_len\": $seq, \"batch_size\": $batch, \"dtype\": \"$1\", \"jit\": $([ $# -gt 1 ] && echo true || echo false)"
    if [ "$left" -lt 30 ]; then
      echo "$label, \"skipped\": \"time budget (BENCH_SECONDS=$BUDGET) spent\"}" | tee -a "$RESULTS"
      continue
    fi
    max_batch=0
    [ "$1" = float32 ] || max_batch=$MAX_BATCH_SECONDS
    status=0
    timeout "$left" "$PYTHON" bench/compare_peer.py --json --size "$size" \
        --seq-len "$seq" --batch-size "$batch" --dtype "$@" \
        --modes "$MODES" --max-batch-seconds "$max_batch" "${EXTRA[@]}" \
        | tee -a "$RESULTS" || status=$?
    if [ "$status" -ne 0 ]; then
      echo "$label, \"skipped\": \"compare_peer.py exit status $status\"}" | tee -a "$RESULTS"
    fi
  done
done

echo
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(( SECONDS - start )) s; results in $RESULTS"
"$PYTHON" bench/compare_peer.py --report "$RESULTS"
