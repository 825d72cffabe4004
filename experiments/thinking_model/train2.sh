#!/usr/bin/env bash
# The second attempt of the thinking-model plan (plan2.md beside this file): stage G1 (reading: one-turn oracle
# demonstrations with grounded thoughts on every preset) from a copy of the shipped default model, then stage G2
# (whole episodes, the default protocol, T1's mix) from G1. Resumable chunks of CHUNK steps with a copy of the weights
# after each (experiments/sft_chunks.sh); rerun the same line to resume. STAGES=g1 stops after G1 (plan2.md's stop
# check comes between the stages).
# Usage: experiments/thinking_model/train2.sh [OUT]   (writes OUT-start, the copied start, OUT-g1 and OUT-g2)
set -euo pipefail
OUT=${1:-runs/thinking_model/g}
STAGES=${STAGES:-g1 g2}
CHUNK=${CHUNK:-500}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}  # one thread: faster than a spinning pool on a shared CPU
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS..., copy_model DIR [MODEL]
copy_model "$OUT-start" default
ENVS=simple_sokoban,simple_sokoban_hard,larger_sokoban,larger_sokoban_hard,boxoban,boxoban_hard,frozenlake,frozenlake_8x8,frozenlake_det,bandit,bandit_heldout,bandit_reversed
COMMON=(--env "$ENVS" --mode oracle --thought grounded --epochs 1 --batch-size 16 --lr 1e-3 --warmup-steps 20
  --seed 0 --checkpoint-every 500 --log-every 100 --drop-long)
for stage in $STAGES; do
  case $stage in
    g1) chunked "$OUT-g1" --model "$OUT-start" "${COMMON[@]}" --demo-seed 18 --protocol max_turns=1 \
          --episodes 16000,8000,32000,32000,16000,8000,16000,48000,8000,2000,15000,15000 ;;
    g2) chunked "$OUT-g2" --model "$OUT-g1" "${COMMON[@]}" --demo-seed 19 \
          --episodes 16000,8000,12000,6000,2000,2000,24000,12000,6000,2000,3000,3000 ;;
    *) echo "unknown stage $stage (g1, g2)" >&2; exit 2 ;;
  esac
done
