# Sourced by train6.sh and train7.sh: the sixth attempt's stages (plan6.md), from random weights, chunked and
# resumable (CHUNK steps a chunk, default 500, a weight copy after each; ../sft_chunks.sh). DEVICE picks where the
# model trains (cpu, or cuda on a lent GPU); it is not part of any run's config.
# lineage N OUT STAGES [SFT-ARGS...]: runs the STAGES (space-separated) of bN (B's recipe, experiments/boxoban_reading,
# to its step B_STEP), qN (Q1's one-turn reading recipe, plan4.md, from there), checkN (the stop check on val: the
# first turn of 256 val levels of twelve presets, under CHECK with the name qN) and sN (S's whole episodes with
# detours, three times the 10x10 episodes and sequences up to 6,144 tokens, from qN's end), writing OUT-bN, OUT-qN
# and OUT-sN; SFT-ARGS go to every stage's ragen-train sft.
CHUNK=${CHUNK:-500}
CHECK=${CHECK:-runs/thinking_model/eval-oneturn}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} HF_HUB_OFFLINE=1
source "$(dirname "${BASH_SOURCE[0]}")/../sft_chunks.sh"  # chunked DIR ARGS...
source "$(dirname "${BASH_SOURCE[0]}")/oneturn_check.sh"  # oneturn_check MODEL NAME ENVS CHECK
source "$(dirname "${BASH_SOURCE[0]}")/play_stage.sh"  # ENVS, COMMON (every stage's SFT settings)
COMMON+=(--device "${DEVICE:-cpu}")
B_STEP=${B_STEP:-4000}  # B stops at this step's copy (a multiple of CHUNK), and Q starts from it
B_STAGE=(--model tiny --tiny-num-layers 4 --tiny-hidden-size 256 --env boxoban --mode oracle --thought grounded
  --protocol max_turns=1 --episodes 128000 --batch-size 16 --epochs 1 --lr 1e-3 --warmup-steps 20 --seed 0
  --demo-seed 902 --checkpoint-every 500 --log-every 100 --drop-long --device "${DEVICE:-cpu}")
Q_STAGE=(--demo-seed 910 --protocol max_turns=1
  --episodes 8000,4000,32000,16000,8000,8000,8000,16000,4000,1000,8000,8000)
S_STAGE=(--demo-seed 911 --max-seq-len 6144 --episodes 32000,8000,12000,6000,6000,6000,32000,12000,6000,2000,3000,3000
  --detour-turns 2,2,4,4,8,8,0,0,0,0,0,0)

lineage() {
  local n=$1 out=$2 stages=$3 stage start
  shift 3
  for stage in $stages; do
    case $stage in
      "b$n") UNTIL_STEP=$B_STEP chunked "$out-b$n" "${B_STAGE[@]}" "$@" ;;
      "q$n") start=$out-b$n/snapshots/step_$B_STEP
             [ -f "$start/model.safetensors" ] || { echo "stage b$n has not reached step $B_STEP" >&2; exit 2; }
             chunked "$out-q$n" --model "$start" "${COMMON[@]}" "${Q_STAGE[@]}" "$@" ;;
      "check$n") oneturn_check "$out-q$n" "q$n" "$ENVS" "$CHECK" ;;
      "s$n") [ -f "$out-q$n/model.safetensors" ] || { echo "stage q$n has not finished" >&2; exit 2; }
             chunked "$out-s$n" --model "$out-q$n" "${COMMON[@]}" "${S_STAGE[@]}" "$@" ;;
      *) echo "unknown stage $stage (b$n, q$n, check$n, s$n)" >&2; exit 2 ;;
    esac
  done
}
