#!/usr/bin/env bash
# A candidate v13 of the default model: stage 9 of train.sh once more, on fresh levels. Stage 9 took
# the lake from 0.66 to 0.87 x the oracle (1,024 test levels) with 128,000 lake levels; a lake-only model
# of this size was still climbing between 128,000 and 256,000 (docs/baselines.md). From the embedded
# default model (v12, the nine-stage model, copied to OUT/stage9), one stage on 128,000 FrozenLake,
# 32,000 SimpleSokoban and 2,000 Bandit fresh levels (demo seed 16) with the default protocol, lr 1e-3.
# Rerun to resume. Usage: experiments/default_model/lake_mix_more.sh [OUT]   (then evaluate.py --split val)
set -euo pipefail
OUT=${1:-runs/default_model_v13}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS..., copy_model DIR [MODEL]
copy_model "$OUT/stage9"
chunked "$OUT/sft" --model "$OUT/stage9" --env simple_sokoban,frozenlake,bandit --episodes 32000,128000,2000 \
  --mode oracle --thought none --epochs 1 --batch-size 16 --lr 1e-3 --warmup-steps 20 --seed 0 --demo-seed 16 \
  --checkpoint-every 250 --log-every 100
