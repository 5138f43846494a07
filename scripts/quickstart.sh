#!/usr/bin/env bash
# Quick start (README's first command): set up, build a vocabulary and
# TFRecords from the corpus embedded in data/corpus, pre-train a small ELECTRA
# with HP-Loss sampling, the focal MLM loss, an embedding table counted from
# the corpus and a replacement curriculum
# (temperature 3 decaying to 1) on the CPU, evaluate, and say what the model
# is good for and where the checkpoint, results and plot are. Re-running
# resumes or skips what is done. QUICKSTART_DIR changes the working directory (default runs/quickstart);
# QUICKSTART_STEPS shortens the schedule (default 400 training steps; CI uses 60).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
cd "$root"
py="${ELECTRA_VENV:-$root/.venv}/bin/python"
data="${QUICKSTART_DIR:-$root/runs/quickstart}"
mkdir -p "$data"
start=$(date +%s)

if [ ! -s "$data/vocab.txt" ]; then
  echo "== 1/3 Building an 8,000-token WordPiece vocabulary from data/corpus"
  "$py" build_vocab.py --corpus-dir data/corpus --output "$data/vocab.txt" \
    --vocab-size 8000
else
  echo "== 1/3 Vocabulary exists: $data/vocab.txt"
fi

# (Shards of builders older than the held-out guarantee are rebuilt.)
if ! grep -qs '"heldout_unit"' "$data/pretrain_tfrecords/manifest.json"; then
  echo "== 2/3 Building pre-training TFRecords (5% of documents held out)"
  "$py" build_pretraining_dataset.py --corpus-dir data/corpus \
    --vocab-file "$data/vocab.txt" --output-dir "$data/pretrain_tfrecords" \
    --max-seq-length 128 --num-processes 2 --num-shards 4 --no-blanks-separate-docs \
    --heldout-fraction 0.05 --overwrite
else
  echo "== 2/3 TFRecords exist: $data/pretrain_tfrecords"
fi

hparams=scripts/quickstart_hparams.json
if [ -n "${QUICKSTART_STEPS:-}" ]; then
  # The same hparams with a shorter schedule (warm-up 10% of the steps).
  hparams="$("$py" -c 'import json, sys
h = json.load(open(sys.argv[1])); n = int(sys.argv[2])
h.update(num_train_steps=n, num_warmup_steps=max(1, n // 10))
print(json.dumps(h))' "$hparams" "$QUICKSTART_STEPS")"
fi
echo "== 3/3 Pre-training ELECTRA-HP (hp_loss sampling, focal gamma 1, embedding table counted from the corpus, temperature 3 -> 1) and evaluating"
"$py" run_pretraining.py --data-dir "$data" --model-name quickstart-hp \
  --hparams "$hparams"

echo
echo "Done in $(( $(date +%s) - start )) s."
echo "What it is good for: $("$py" -c 'import json, sys
from pretrain import eval_report
print(eval_report.what_it_is_good_for(json.load(open(sys.argv[1]))))' \
  "$data/models/quickstart-hp/results/pretrain_eval.json")"
echo "  checkpoint: $data/models/quickstart-hp/checkpoints"
echo "  metrics:    $data/models/quickstart-hp/results/pretrain_eval.txt"
echo "  plot:       $data/models/quickstart-hp/results/gen_max_prob_histogram.png"
echo "  TensorBoard: tensorboard --logdir $data/models/quickstart-hp"
