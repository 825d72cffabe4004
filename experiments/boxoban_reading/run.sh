#!/usr/bin/env bash
# The boxoban reading probe (plan.md beside this file): the default model's shape from random weights on one-turn
# boxoban demonstrations with grounded thoughts, then each 1,000-step weight copy on the first 128 val levels.
# Resumable: rerun the same line; finished chunks and evaluations are skipped. STAGES=train or STAGES=eval runs one
# half (the evaluations of the copies that exist so far can run beside the training).
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
for stage in $STAGES; do
  case $stage in
    train) chunked "$OUT/S" --model tiny --env boxoban --mode oracle --thought grounded "${PROTOCOL[@]}" \
             --episodes 128000 --batch-size 16 --epochs 1 --lr 1e-3 --warmup-steps 20 --seed 0 --demo-seed 902 \
             --checkpoint-every 500 --log-every 100 --drop-long ;;
    eval) play random random
          play oracle oracle
          for step in 1000 2000 3000 4000 5000 6000 7000 8000; do
            [ -d "$OUT/S/snapshots/step_$step" ] && play "S-step$step" "$OUT/S/snapshots/step_$step" --backend hf
          done ;;
    *) echo "run.sh: unknown stage $stage (train, eval)" >&2; exit 2 ;;
  esac
done
