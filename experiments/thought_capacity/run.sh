#!/usr/bin/env bash
# The thought-capacity probe (plan.md beside this file): models S (2 x 128) and B (4 x 256) from random
# weights on the same one-turn larger_sokoban demonstrations with templated thoughts, then each weight copy on
# the first 128 val levels. Resumable: rerun the same line; finished chunks and evaluations are skipped.
# Usage: experiments/thought_capacity/run.sh [OUT]
set -euo pipefail
OUT=${1:-runs/thought_capacity}
export CHUNK=${CHUNK:-500}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS...
PROTOCOL=(--protocol max_turns=1)
train() {  # NAME LAYERS HIDDEN
  chunked "$OUT/$1" --model tiny --tiny-num-layers "$2" --tiny-hidden-size "$3" --env larger_sokoban \
    --mode oracle --thought templated "${PROTOCOL[@]}" --episodes 32000 --batch-size 16 --epochs 1 --lr 1e-3 \
    --warmup-steps 20 --seed 0 --demo-seed 900 --checkpoint-every 500 --log-every 100
}
play() {  # RUN-NAME MODEL [ARGS...]
  [ -f "$OUT/eval/$1/summary.json" ] && return 0
  local name=$1 model=$2; shift 2
  ragen-eval --model "$model" "$@" --env larger_sokoban --split val --seed-start 0 --episodes 128 \
    "${PROTOCOL[@]}" --out "$OUT/eval" --run-name "$name" --no-progress
}
play random random
play oracle oracle
for spec in "S 2 128" "B 4 256"; do
  set -- $spec
  train "$1" "$2" "$3"
  for step in 500 1000 1500 2000; do play "$1-step$step" "$OUT/$1/snapshots/step_$step" --backend hf; done
done
