#!/usr/bin/env bash
# The boxoban reading probe (plan.md beside this file): the default model's shape (S, 2 x 128) and, by plan.md's
# addition, model B (4 x 256), each from random weights on the same one-turn boxoban demonstrations with grounded
# thoughts; then each 1,000-step weight copy on the first 128 val levels. Resumable: rerun the same line; finished
# chunks and evaluations are skipped. STAGES picks: train (S), train-b (B), eval (the copies that exist so far, so
# it can run beside the training).
# Usage: [STAGES="train eval"] experiments/boxoban_reading/run.sh [OUT]
set -euo pipefail
OUT=${1:-runs/boxoban_reading}
STAGES=${STAGES:-train eval}
export CHUNK=${CHUNK:-500}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS...
PROTOCOL=(--protocol max_turns=1)
play() {  # RUN-NAME MODEL [ARGS...]
  [ -f "$OUT/eval/$1/summary.json" ] && return 0
  local name=$1 model=$2; shift 2
  ragen-eval --model "$model" "$@" --env boxoban --split val --seed-start 0 --episodes 128 \
    "${PROTOCOL[@]}" --out "$OUT/eval" --run-name "$name" --no-progress
}
train() {  # NAME LAYERS HIDDEN
  chunked "$OUT/$1" --model tiny --tiny-num-layers "$2" --tiny-hidden-size "$3" --env boxoban --mode oracle \
    --thought grounded "${PROTOCOL[@]}" --episodes 128000 --batch-size 16 --epochs 1 --lr 1e-3 --warmup-steps 20 \
    --seed 0 --demo-seed 902 --checkpoint-every 500 --log-every 100 --drop-long
}
for stage in $STAGES; do
  case $stage in
    train) train S 2 128 ;;
    train-b) train B 4 256 ;;
    eval) play random random
          play oracle oracle
          for model in S B; do
            for step in 1000 2000 3000 4000 5000 6000 7000 8000; do
              [ -d "$OUT/$model/snapshots/step_$step" ] && play "$model-step$step" "$OUT/$model/snapshots/step_$step" --backend hf
            done
          done ;;
    *) echo "run.sh: unknown stage $stage (train, train-b, eval)" >&2; exit 2 ;;
  esac
done
