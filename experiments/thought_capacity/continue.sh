#!/usr/bin/env bash
# The probe's addition (plan.md, "S continued"): S's final weights on 64,000 further one-turn larger_sokoban
# demonstrations (demo seed 901), a weight copy every 1,000 steps, each played on run.sh's 128 val levels and named
# by its step counted on from S's 2,000. Resumable: rerun the same line.
# Usage: experiments/thought_capacity/continue.sh [OUT]
set -euo pipefail
OUT=${1:-runs/thought_capacity}
export CHUNK=1000
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS...
[ -f "$OUT/S/model.safetensors" ] || { echo "run.sh has not finished S yet" >&2; exit 1; }
chunked "$OUT/S-more" --model "$OUT/S" --env larger_sokoban --mode oracle --thought templated \
  --protocol max_turns=1 --episodes 64000 --batch-size 16 --epochs 1 --lr 1e-3 --warmup-steps 20 --seed 0 \
  --demo-seed 901 --checkpoint-every 1000 --log-every 200
for step in 1000 2000 3000 4000; do
  name="S-step$((2000 + step))"
  [ -f "$OUT/eval/$name/summary.json" ] && continue
  ragen-eval --model "$OUT/S-more/snapshots/step_$step" --backend hf --env larger_sokoban --split val \
    --seed-start 0 --episodes 128 --protocol max_turns=1 --out "$OUT/eval" --run-name "$name" --no-progress
done
