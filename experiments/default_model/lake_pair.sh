#!/usr/bin/env bash
# A candidate v11 of the default model: one more lake pair on top of the shipped weights, with the
# lake data that took a lake-only model of this size to 0.37 on test (experiments/lake_data_scale/README.md, "The lake
# alone, by data": 192,000 demonstrations). From the embedded default model (v9 up to commit 1790521, copied to
# OUT/stage8): stage 11 trains on 128,000 fresh FrozenLake levels alone with the short prompt (lr 1e-3,
# demo seed 13), stage 12 brings all three games back to the default protocol with stage 4's mix
# (8,000 Sokoban, 12,000 FrozenLake, 1,000 Bandit fresh levels, demo seed 14). Rerun to resume.
# Usage: experiments/default_model/lake_pair.sh [OUT]     (then evaluate.py --split val, as in experiments/default_model/README.md)
set -euo pipefail
OUT=${1:-runs/default_model_v11}
CHUNK=${CHUNK:-500}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
SHORT=$(cat "$(dirname "$0")/../rl_gain/short_protocol.json")
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS..., copy_model DIR [MODEL]
copy_model "$OUT/stage8"
chunked "$OUT/stage11" --model "$OUT/stage8" --env frozenlake --episodes 128000 --mode oracle --thought none \
  --epochs 1 --batch-size 16 --lr 1e-3 --warmup-steps 20 --seed 0 --demo-seed 13 --checkpoint-every 100 \
  --log-every 100 --protocol "$SHORT"
chunked "$OUT/sft" --model "$OUT/stage11" --env simple_sokoban,frozenlake,bandit --episodes 8000,12000,1000 \
  --mode oracle --thought none --epochs 1 --batch-size 16 --lr 1e-3 --warmup-steps 20 --seed 0 --demo-seed 14 \
  --checkpoint-every 250 --log-every 100
