#!/usr/bin/env bash
# The third attempt of the thinking-model plan (plan3.md beside this file): stage R (reading: one-turn oracle
# demonstrations with grounded thoughts, weighted to the 8x8 and 10x10 rooms and the held-out Bandit names) from
# G1's weights, the stop check on val (the first turn of 256 val levels of twelve presets), stage R2 (more reading,
# weighted to the 10x10 rooms; plan3.md's addition) from R and the same check, then stage P (whole episodes, the
# default protocol, T1's mix) from R2. Resumable chunks of CHUNK steps with a copy of the weights after
# each (experiments/sft_chunks.sh); rerun the same line to resume; a finished check run is skipped.
# Usage: [STAGES="r check"] experiments/thinking_model/train3.sh [OUT] [G1]   (STAGES=p once the check allows it)
#   writes OUT-r, OUT-r2 and OUT-p, and the checks' runs under runs/thinking_model/eval-oneturn (names r, r2)
set -euo pipefail
OUT=${1:-runs/thinking_model/h}
G1=${2:-runs/thinking_model/g-g1}
STAGES=${STAGES:-r check}  # P only by name: plan3.md's stop check comes first
CHUNK=${CHUNK:-500}
CHECK=${CHECK:-runs/thinking_model/eval-oneturn}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} HF_HUB_OFFLINE=1  # one thread: faster than a spinning pool on a shared CPU
source "$(dirname "$0")/../sft_chunks.sh"  # chunked DIR ARGS...
source "$(dirname "$0")/oneturn_check.sh"  # oneturn_check MODEL NAME ENVS CHECK
ENVS=simple_sokoban,simple_sokoban_hard,larger_sokoban,larger_sokoban_hard,boxoban,boxoban_hard,frozenlake,frozenlake_8x8,frozenlake_det,bandit,bandit_heldout,bandit_reversed
COMMON=(--env "$ENVS" --mode oracle --thought grounded --epochs 1 --batch-size 16 --lr 1e-3 --warmup-steps 20
  --seed 0 --checkpoint-every 500 --log-every 100 --drop-long)
for stage in $STAGES; do
  case $stage in
    r) [ -f "$G1/model.safetensors" ] || { echo "train3.sh: no G1 weights at $G1" >&2; exit 2; }
       chunked "$OUT-r" --model "$G1" "${COMMON[@]}" --demo-seed 20 --protocol max_turns=1 \
         --episodes 4000,2000,48000,24000,32000,16000,4000,6000,2000,1000,24000,24000 ;;
    check) oneturn_check "$OUT-r" r "$ENVS" "$CHECK" ;;
    r2) [ -f "$OUT-r/model.safetensors" ] || { echo "train3.sh: stage r has not finished" >&2; exit 2; }
        chunked "$OUT-r2" --model "$OUT-r" "${COMMON[@]}" --demo-seed 22 --protocol max_turns=1 \
          --episodes 2000,1000,12000,8000,40000,16000,2000,12000,1000,500,4000,4000 ;;
    check2) oneturn_check "$OUT-r2" r2 "$ENVS" "$CHECK" ;;
    p) chunked "$OUT-p" --model "$OUT-r2" "${COMMON[@]}" --demo-seed 21 \
         --episodes 16000,8000,12000,6000,2000,2000,24000,12000,6000,2000,3000,3000 ;;
    *) echo "train3.sh: unknown stage $stage (r, check, r2, check2, p)" >&2; exit 2 ;;
  esac
done
