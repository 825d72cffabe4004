#!/usr/bin/env bash
# Candidate A of the thinking-model plan (plan.md beside this file): stage T1, all presets mixed, oracle
# play with templated thoughts, from a copy of the shipped default model. Resumable chunks of CHUNK steps
# (experiments/sft_chunks.sh) with a copy of the weights after each; rerun the same line to resume.
# Usage: experiments/thinking_model/train.sh [OUT]   (writes OUT-start, the copied start, and OUT-t1)
set -euo pipefail
OUT=${1:-runs/thinking_model/sft}
CHUNK=${CHUNK:-250}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}  # one thread: faster than a spinning pool on a shared CPU
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS..., copy_model DIR [MODEL]
copy_model "$OUT-start" default
# Episodes per preset, in the order of --env (plan.md, "Training"); demo seed 17: levels v13 never saw.
# --drop-long: the few boxoban episodes whose thoughts pass 4,096 tokens are skipped and counted.
chunked "$OUT-t1" --model "$OUT-start" \
  --env simple_sokoban,simple_sokoban_hard,larger_sokoban,larger_sokoban_hard,boxoban,boxoban_hard,frozenlake,frozenlake_8x8,frozenlake_det,bandit,bandit_heldout,bandit_reversed \
  --episodes 16000,8000,12000,6000,2000,2000,24000,12000,6000,2000,3000,3000 \
  --mode oracle --thought templated --epochs 1 --batch-size 16 --lr 1e-3 --warmup-steps 20 --seed 0 \
  --demo-seed 17 --checkpoint-every 250 --log-every 50 --drop-long
