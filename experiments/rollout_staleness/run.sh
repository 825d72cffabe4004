#!/usr/bin/env bash
# The staleness study (plan.md beside this file): StarPO-S on Bandit with rollout_staleness k = 0, 2, 8, seeds 0-2,
# then every final checkpoint on the first 256 test levels. Resumable: a finished run or evaluation is skipped.
# Usage: experiments/rollout_staleness/run.sh OUT
set -euo pipefail
OUT=${1:?usage: run.sh OUT}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$OUT"
[ -f "$OUT/bandit-format/model.safetensors" ] || ragen-train sft --model tiny --env bandit --mode format \
  --episodes 512 --epochs 2 --lr 2e-3 --seed 0 --out "$OUT/bandit-format"
for seed in 0 1 2; do for k in 0 2 8; do
  name=bandit__k${k}__seed$seed
  [ -d "$OUT/$name/checkpoints/step_000040" ] || ragen-train preset=starpo-s env=bandit model="$OUT/bandit-format" \
    seed=$seed rollout_staleness=$k total_steps=40 env_groups=8 group_size=8 max_new_tokens=40 actor_lr=5e-4 \
    critic_lr=1e-3 micro_batch_size=8 collapse_signals_every=0 eval_every=0 save_every=40 plot_every=0 \
    output_dir="$OUT" run_name=$name
  [ -f "$OUT/$name-test/summary.json" ] || ragen-eval --backend hf --model "$OUT/$name/checkpoints/step_000040" \
    --env bandit --split test --episodes 256 --out "$OUT" --run-name "$name-test" --no-progress
done; done
