#!/usr/bin/env bash
# The sixth attempt of the thinking-model plan (plan6.md beside this file), from random weights: B6 (B's recipe,
# experiments/boxoban_reading, to its step 4,000), Q6 (Q1's one-turn reading recipe, plan4.md), the stop check on val
# (the first turn of 256 val levels of twelve presets), then S6 (S's whole episodes with detours, three times the
# 10x10 episodes and sequences up to 6,144 tokens). Resumable chunks of CHUNK steps with a copy of the weights after
# each (experiments/sft_chunks.sh); rerun the same line to resume; a finished check run is skipped. DEVICE picks
# where the model trains (cpu, or cuda on a lent GPU); it is not part of any run's config.
# Usage: [STAGES="b6 q6 check6"] experiments/thinking_model/train6.sh [OUT]   (STAGES=s6 once the check allows it)
#   writes OUT-b6, OUT-q6 and OUT-s6, and the check's runs under runs/thinking_model/eval-oneturn (name q6)
set -euo pipefail
OUT=${1:-runs/thinking_model/six}
STAGES=${STAGES:-b6 q6 check6}  # S6 only by name: plan6.md's stop check comes first
CHUNK=${CHUNK:-500}
CHECK=${CHECK:-runs/thinking_model/eval-oneturn}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} HF_HUB_OFFLINE=1
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS...
source "$(dirname "$0")/oneturn_check.sh"  # oneturn_check MODEL NAME ENVS CHECK
source "$(dirname "$0")/play_stage.sh"  # ENVS, COMMON (every stage's SFT settings)
COMMON+=(--device "${DEVICE:-cpu}")
B6_STEP=4000
for stage in $STAGES; do
  case $stage in
    b6) UNTIL_STEP=$B6_STEP chunked "$OUT-b6" --model tiny --tiny-num-layers 4 --tiny-hidden-size 256 --env boxoban \
          --mode oracle --thought grounded --protocol max_turns=1 --episodes 128000 --batch-size 16 --epochs 1 \
          --lr 1e-3 --warmup-steps 20 --seed 0 --demo-seed 902 --checkpoint-every 500 --log-every 100 --drop-long \
          --device "${DEVICE:-cpu}" ;;
    q6) start=$OUT-b6/snapshots/step_$B6_STEP
        [ -f "$start/model.safetensors" ] || { echo "train6.sh: stage b6 has not reached step $B6_STEP" >&2; exit 2; }
        chunked "$OUT-q6" --model "$start" "${COMMON[@]}" --demo-seed 910 --protocol max_turns=1 \
          --episodes 8000,4000,32000,16000,8000,8000,8000,16000,4000,1000,8000,8000 ;;
    check6) oneturn_check "$OUT-q6" q6 "$ENVS" "$CHECK" ;;
    s6) [ -f "$OUT-q6/model.safetensors" ] || { echo "train6.sh: stage q6 has not finished" >&2; exit 2; }
        chunked "$OUT-s6" --model "$OUT-q6" "${COMMON[@]}" --demo-seed 911 --max-seq-len 6144 \
          --episodes 32000,8000,12000,6000,6000,6000,32000,12000,6000,2000,3000,3000 \
          --detour-turns 2,2,4,4,8,8,0,0,0,0,0,0 ;;
    *) echo "train6.sh: unknown stage $stage (b6, q6, check6, s6)" >&2; exit 2 ;;
  esac
done
