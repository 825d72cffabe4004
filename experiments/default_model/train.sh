#!/usr/bin/env bash
# Trains the multi-game default model with `ragen-train sft` in ten stages, each in resumable chunks
# of CHUNK steps that keep a copy of the weights after each chunk (the points of the
# success-vs-data curve). Rerun the same line to resume. The model is OUT; stage k writes OUT-stagek.
# Usage: [LAYERS=n] experiments/default_model/train.sh [OUT]   (LAYERS: the tiny model's depth, default 2)
set -euo pipefail
OUT=${1:-runs/default_model/sft}
CHUNK=${CHUNK:-500}
LAYERS=${LAYERS:-2}
# One intra-op thread: on a small shared CPU, torch's thread pool spinning against other
# processes made a step 4x slower than a single thread (measured 8.4 s vs 2.2 s).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS...
# Stage 1: learn to read a Sokoban grid. With the default protocol (rules, legend and history
# around the grid) a 2-layer model stayed on the plateau where it moves without reading the grid
# through 35,000 Sokoban demonstrations (loss 0.40, test success 0.125 at step 2,750 of a 64k/32k/2k
# run; experiments/default_model/README.md); with the grid alone each turn, 32,000 got it past (the RL-gain study's
# SFT stage, the same command).
SHORT=$(cat "$(dirname "$0")/../rl_gain/short_protocol.json")
chunked "$OUT-stage1" --model tiny --tiny-num-layers "$LAYERS" --env simple_sokoban --episodes 32000 --mode oracle --thought none --epochs 1 \
  --batch-size 16 --lr 2e-3 --warmup-steps 20 --seed 0 --demo-seed 0 --checkpoint-every 100 --log-every 50 \
  --protocol "$SHORT"
# Stage 2: all three games with the default protocol, fresh levels (another demo seed), from stage 1.
chunked "$OUT-stage2" --model "$OUT-stage1" --env simple_sokoban,frozenlake,bandit --episodes 16000,12000,2000 \
  --mode oracle --thought none --epochs 1 --batch-size 16 --lr 1e-3 --warmup-steps 20 --seed 0 --demo-seed 1 \
  --checkpoint-every 250 --log-every 100
# Stages 3 to 8 come in pairs from the previous stage's weights, at lr 1e-3 on fresh levels (own demo
# seeds): one game alone with the short prompt, then all three games with the default protocol.
short_stage() {  # short_stage N GAME DEMO_SEED
  chunked "$OUT-stage$1" --model "$OUT-stage$(($1 - 1))" --env "$2" --episodes 32000 --mode oracle --thought none \
    --epochs 1 --batch-size 16 --lr 1e-3 --warmup-steps 20 --seed 0 --demo-seed "$3" --checkpoint-every 100 \
    --log-every 100 --protocol "$SHORT"
}
default_stage() {  # default_stage DIR N EPISODES DEMO_SEED   (EPISODES: Sokoban,FrozenLake,Bandit)
  chunked "$1" --model "$OUT-stage$(($2 - 1))" --env simple_sokoban,frozenlake,bandit --episodes "$3" \
    --mode oracle --thought none --epochs 1 --batch-size 16 --lr 1e-3 --warmup-steps 20 --seed 0 --demo-seed "$4" \
    --checkpoint-every 250 --log-every 100
}
# Stages 3-4: the lake. After stage 2 the model's first lake moves were barely better than chance
# (optimal 0.436, chance 0.381); this pair took FrozenLake from 0.234 to 0.328 on the test split, but
# not on val (0.266 -> 0.246; experiments/default_model/README.md).
short_stage 3 frozenlake 3
default_stage "$OUT-stage4" 4 8000,12000,1000 4
# Stages 5-6 and 7-8: Sokoban again, now from a model that has seen the default protocol. Sokoban
# 0.305 -> 0.539 -> 0.723 on the test split (0.297 -> 0.520 -> 0.766 on val).
short_stage 5 simple_sokoban 5
default_stage "$OUT-stage6" 6 12000,8000,1000 6
short_stage 7 simple_sokoban 9
default_stage "$OUT-stage8" 8 12000,8000,1000 10
# Stage 9: the lake, with the default protocol this time. A lake-only model of this size needed
# 192,000-256,000 lake demonstrations to reach 0.37 (experiments/default_model/README.md), and the lake learned with the
# short prompt did not carry over to the default protocol while 8,000 lake-only steps made the model
# forget Sokoban (v11). So the default protocol all along, with Sokoban and Bandit mixed in:
# FrozenLake 0.258 -> 0.342 on 1,024 val levels, Sokoban kept (0.766 -> 0.770 on 256).
default_stage "$OUT-stage9" 9 32000,128000,2000 15
# Stage 10: stage 9 again on fresh levels (a lake-only model of this size was still climbing between
# 128,000 and 256,000 lake levels): FrozenLake 0.342 -> 0.377 on 1,024 val levels, Sokoban 0.770 -> 0.824.
default_stage "$OUT" 10 32000,128000,2000 16
