#!/usr/bin/env bash
# The fifth attempt of the thinking-model plan (plan5.md beside this file): stage S, whole episodes (the default
# protocol) with grounded thoughts whose lake sentences name no holes, from the end of plan4.md's Q1 on Q2's data
# (demo seed 911, Q2's counts). Resumable chunks of CHUNK steps with a copy of the weights after each
# (experiments/sft_chunks.sh); rerun the same line to resume.
# Usage: OMP_NUM_THREADS=2 CHUNK=100 experiments/thinking_model/train5.sh [OUT] [START]   (writes OUT-s)
set -euo pipefail
OUT=${1:-runs/thinking_model/s}
START=${2:-runs/thinking_model/q-q1}
CHUNK=${CHUNK:-100}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} HF_HUB_OFFLINE=1  # two threads: plan4.md's timing addition
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS...
source "$(dirname "$0")/play_stage.sh"  # COMMON, PLAY: Q2's settings, demo seed and counts
[ -f "$START/model.safetensors" ] || { echo "train5.sh: no start weights at $START" >&2; exit 2; }
chunked "$OUT-s" --model "$START" "${COMMON[@]}" "${PLAY[@]}"
