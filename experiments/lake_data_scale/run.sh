#!/usr/bin/env bash
# Is the slippery lake data-limited at the default model's size? (issue 11, point 3: what the next
# doubling of FrozenLake data buys.) One tiny model (2 layers, 128 wide, as the default model) is
# SFT'd on the oracle's play of 128,000 fresh FrozenLake train levels, FrozenLake alone, with the
# short prompt of experiments/rl_gain (the curriculum prompt of the default model's lake stage),
# one epoch, batch 16, lr 2e-3 (the RL-gain study's SFT). Its weights are kept every 2,000 steps
# (32,000 levels). A second stage then continues from the finished model on 128,000 more, fresh levels
# (demo seed 1, lr 1e-3: the next doubling), keeping its weights every 4,000 steps. Each kept model
# plays 512 val and 512 test FrozenLake levels at ragen-eval's default temperature. Every step skips
# itself when its output exists, so rerunning resumes.
# Usage: experiments/lake_data_scale/run.sh [OUT]     then: python experiments/lake_data_scale/export.py OUT
set -euo pipefail
OUT=${1:-runs/lake_data_scale}
EPISODES=${EPISODES:-128000}
STAGE1_CHUNK=${STAGE1_CHUNK:-2000}  # steps of batch 16 between kept models of stage 1: 32,000 levels
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
SHORT=$(cat "$(dirname "$0")/../rl_gain/short_protocol.json")
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS...
stage() {  # stage DIR MODEL DEMO_SEED LR: SFT MODEL on $EPISODES fresh lake levels
  chunked "$1" --model "$2" --env frozenlake --episodes "$EPISODES" --mode oracle --thought none --epochs 1 \
    --batch-size 16 --lr "$4" --warmup-steps 20 --seed 0 --demo-seed "$3" --checkpoint-every 100 --log-every 100 \
    --protocol "$SHORT"
}
CHUNK=$STAGE1_CHUNK stage "$OUT/sft" tiny 0 2e-3
CHUNK=$((2 * STAGE1_CHUNK)) stage "$OUT/sft-more" "$OUT/sft" 1 1e-3
for model in random oracle; do  # the floor and the ceiling, on the same levels
  for split in val test; do
    [ -f "$OUT/eval/$model-$split/summary.json" ] || ragen-eval --model "$model" --env frozenlake --split "$split" \
      --episodes 512 --protocol "$SHORT" --out "$OUT/eval" --run-name "$model-$split" --no-progress
  done
done
for snapshot in "$OUT"/sft/snapshots/step_* "$OUT"/sft-more/snapshots/step_*; do
  prefix=""
  [[ $snapshot != */sft-more/* ]] || prefix=more_
  for split in val test; do
    name=$prefix$(basename "$snapshot")-$split
    [ -f "$OUT/eval/$name/summary.json" ] || ragen-eval --model "$snapshot" --backend hf --env frozenlake \
      --split "$split" --episodes 512 --protocol "$SHORT" --out "$OUT/eval" --run-name "$name" --no-progress
  done
done
