#!/usr/bin/env bash
# RL gain over SFT (issue 11, point 4): per game, a tiny model SFT'd on oracle play of fresh train
# levels, then StarPO-S from it; both checkpoints play the same 512 test levels and
# `ragen-eval compare` gives the paired McNemar test. Every stage skips itself when its output
# exists, so rerunning the same line resumes.
# Usage: experiments/rl_gain/run.sh GAME [OUT]      GAME: frozenlake_det | frozenlake | simple_sokoban
# SFT_MODEL=DIR (or `default`, the embedded default model) starts from that checkpoint instead of
# training one: it is copied to OUT/GAME-sft and plays the "SFT" side of the comparison.
# EXPORT=DIR (default experiments/rl_gain/data) is where export.py writes the compact outputs.
# Every stage (demos, both evaluations, RL) plays PROTOCOL: by default a short prompt (no rules or
# legend, the grid alone each turn, no <think>), since a 2-layer model has to find the grid in it;
# PROTOCOL='' plays the default protocol, '{"think": false, ...}' any other.
set -euo pipefail
GAME=$1
OUT=${2:-runs/rl_gain}
# 8,000 oracle episodes left a 2-layer model on its plateau (it moved without reading the grid:
# deterministic FrozenLake 0.236 on 512 test levels); 32,000 got it past (0.563).
SFT_EPISODES=${SFT_EPISODES:-32000}
RL_STEPS=${RL_STEPS:-300}
# RAGEN's 1e-6 is for 0.5B+ models; 3e-4 made a weak (0.2) start worse (experiments/rl_gain/README.md).
ACTOR_LR=${ACTOR_LR:-1e-4}
# Further `ragen-train` overrides for the RL stage, e.g. RL_ARGS="reward_scale=0.1" (space-separated).
read -ra rl_args <<< "${RL_ARGS:-}"
# One intra-op thread: on a small shared CPU, torch's pool spinning against other processes is slower.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
SHORT=$(cat "$(dirname "$0")/short_protocol.json")  # the short prompt of experiments/rl_gain/README.md
PROTOCOL=${PROTOCOL-$SHORT}
sft_protocol=() eval_protocol=() train_protocol=()
if [ -n "$PROTOCOL" ]; then
  sft_protocol=(--protocol "$PROTOCOL") eval_protocol=(--protocol "$PROTOCOL") train_protocol=("protocol=$PROTOCOL")
fi
source "$(dirname "$0")/../sft_chunks.sh"  # copy_model DIR [MODEL]
mkdir -p "$OUT"
sft=$OUT/$GAME-sft
if [ -n "${SFT_MODEL:-}" ]; then copy_model "$sft" "$SFT_MODEL"; fi
until [ -f "$sft/model.safetensors" ]; do
  ragen-train sft --model tiny --out "$sft" --env "$GAME" --episodes "$SFT_EPISODES" --mode oracle \
    --thought none --epochs 1 --batch-size 16 --lr 2e-3 --warmup-steps 20 --seed 0 --demo-seed 0 \
    --checkpoint-every 100 --log-every 50 --max-steps 400 "${sft_protocol[@]}"
done
[ -f "$OUT/$GAME-sft-test/summary.json" ] || ragen-eval --model "$sft" --backend hf --env "$GAME" \
  --split test --episodes 512 --out "$OUT" --run-name "$GAME-sft-test" "${eval_protocol[@]}"
# StarPO-S with the preset's defaults (top 25% of groups by reward std, clip 0.2/0.28, no KL,
# 4 optimizer steps per RL step); the same command resumes from the run's last checkpoint.
rl=$OUT/$GAME-starpo-s
ragen-train preset=starpo-s env="$GAME" model="$sft" output_dir="$OUT" run_name="$GAME-starpo-s" \
  total_steps="$RL_STEPS" env_groups=8 group_size="${GROUP_SIZE:-16}" max_new_tokens=24 actor_lr="$ACTOR_LR" critic_lr=1e-3 \
  micro_batch_size=16 eval_every=50 eval_episodes=64 save_every=25 plot_every=0 resume=true "${train_protocol[@]}" "${rl_args[@]}"
final=$(ls -d "$rl"/checkpoints/step_* | sort -V | tail -1)
[ -f "$OUT/$GAME-rl-test/summary.json" ] || ragen-eval --model "$final" --backend hf --env "$GAME" \
  --split test --episodes 512 --out "$OUT" --run-name "$GAME-rl-test" "${eval_protocol[@]}"
ragen-eval compare "$OUT/$GAME-sft-test" "$OUT/$GAME-rl-test" | tee "$OUT/$GAME-compare.txt"
python experiments/rl_gain/export.py "$OUT" --out "${EXPORT:-experiments/rl_gain/data}"
