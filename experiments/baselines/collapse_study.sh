#!/usr/bin/env bash
# The collapse study of experiments/baselines/README.md: StarPO vs StarPO-S, run seeds 0-4, on Bandit (60 steps from
# a format-only SFT) and deterministic FrozenLake (25 steps from the default model); both presets take
# 4 optimizer steps per RL step (ppo_mini_batches=4), so the clip acts in both. A run whose directory
# has its final checkpoint is resumed or skipped by ragen-train itself; then the compact copies under
# experiments/baselines/collapse and the table are rewritten.
# Usage: experiments/baselines/collapse_study.sh [OUT]
set -euo pipefail
C=${1:-runs/collapse}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$C"
[ -f "$C/bandit-format-sft/model.safetensors" ] || ragen-train sft --model tiny --env bandit --mode format \
  --episodes 512 --epochs 2 --seed 0 --out "$C/bandit-format-sft"
for seed in 0 1 2 3 4; do for p in starpo starpo-s; do
  ragen-train preset=$p env=bandit model="$C/bandit-format-sft" seed=$seed total_steps=60 env_groups=8 group_size=8 \
    max_new_tokens=40 actor_lr=5e-4 critic_lr=1e-3 micro_batch_size=8 eval_every=20 eval_episodes=64 \
    save_every=60 plot_every=0 output_dir="$C" run_name=bandit__${p}__seed$seed
done; done
for seed in 0 1 2 3 4; do for p in starpo starpo-s; do
  ragen-train preset=$p env=frozenlake_det model=ragen_eval/default_model seed=$seed total_steps=25 env_groups=8 \
    group_size=8 max_new_tokens=32 actor_lr=1e-4 critic_lr=1e-3 micro_batch_size=16 eval_every=25 eval_episodes=64 \
    save_every=25 plot_every=0 output_dir="$C" run_name=frozenlake_det__${p}__seed$seed
done; done
python experiments/baselines/collapse_summary.py "$C"/bandit__* "$C"/frozenlake_det__* --export experiments/baselines/collapse
python experiments/baselines/collapse_summary.py experiments/baselines/collapse/bandit__* --plot experiments/baselines/bandit_seeds.png
