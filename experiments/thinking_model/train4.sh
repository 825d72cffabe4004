#!/usr/bin/env bash
# The fourth attempt of the thinking-model plan (plan4.md beside this file): stage Q1 (reading: one-turn oracle
# demonstrations with grounded thoughts, a count per preset) from B's step-4,000 weights (4 x 256,
# experiments/boxoban_reading), the stop check on val (the first turn of 256 val levels of twelve presets), then
# stage Q2 (whole episodes, the default protocol) from Q1. Resumable chunks of CHUNK steps with a copy of the weights
# after each (experiments/sft_chunks.sh); rerun the same line to resume; a finished check run is skipped.
# Usage: [STAGES="q1 check"] experiments/thinking_model/train4.sh [OUT] [START]   (STAGES=q2 once the check allows it)
#   writes OUT-q1 and OUT-q2, and the check's runs under runs/thinking_model/eval-oneturn (name q1)
set -euo pipefail
OUT=${1:-runs/thinking_model/q}
START=${2:-runs/boxoban_reading/B/snapshots/step_4000}
STAGES=${STAGES:-q1 check}  # Q2 only by name: plan4.md's stop check comes first
CHUNK=${CHUNK:-500}
CHECK=${CHECK:-runs/thinking_model/eval-oneturn}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} HF_HUB_OFFLINE=1  # one thread: faster than a spinning pool on a shared CPU
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS...
source "$(dirname "$0")/oneturn_check.sh"  # oneturn_check MODEL NAME ENVS CHECK
source "$(dirname "$0")/play_stage.sh"  # ENVS, COMMON, PLAY (Q2's demo seed and counts)
for stage in $STAGES; do
  case $stage in
    q1) [ -f "$START/model.safetensors" ] || { echo "train4.sh: no start weights at $START" >&2; exit 2; }
        chunked "$OUT-q1" --model "$START" "${COMMON[@]}" --demo-seed 910 --protocol max_turns=1 \
          --episodes 8000,4000,32000,16000,8000,8000,8000,16000,4000,1000,8000,8000 ;;
    check) oneturn_check "$OUT-q1" q1 "$ENVS" "$CHECK" ;;
    q2) [ -f "$OUT-q1/model.safetensors" ] || { echo "train4.sh: stage q1 has not finished" >&2; exit 2; }
        chunked "$OUT-q2" --model "$OUT-q1" "${COMMON[@]}" "${PLAY[@]}" ;;
    *) echo "train4.sh: unknown stage $stage (q1, check, q2)" >&2; exit 2 ;;
  esac
done
