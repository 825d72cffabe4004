#!/usr/bin/env bash
# The rollout-diversity study (plan.md beside this file): StarPO-S (filter off) on frozenlake_det from the default
# model, 64 episodes a step as 4x16, 8x8, 16x4, 32x2 (env_groups x group_size), seeds 0-2, 30 steps, one run at a
# time, seed-major; then, once all twelve runs have finished, the start model and every final checkpoint on the
# same 512 test levels. Resumable: a finished run or evaluation is skipped, an unfinished run resumes from its last
# checkpoint. Usage: nice -n 10 experiments/rollout_diversity/run.sh OUT
set -euo pipefail
OUT=${1:?usage: run.sh OUT}
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
STEPS=30
START=20538  # raw test index just past the first 2,048 frozenlake_det test levels (plan.md, "Levels")
CONFIGS="4x16 8x8 16x4 32x2"
mkdir -p "$OUT"
final() { echo "$OUT/$1/checkpoints/step_$(printf %06d $STEPS)"; }
for seed in 0 1 2; do for c in $CONFIGS; do
  name=frozenlake_det__${c}__seed$seed
  [ -d "$(final "$name")" ] && continue
  echo "$(date -u +%H:%M:%S) train $name"
  ragen-train preset=starpo-s env=frozenlake_det model=default seed="$seed" total_steps=$STEPS \
    env_groups="${c%x*}" group_size="${c#*x}" rollout_filter_ratio=1 actor_lr=1e-4 critic_lr=1e-3 reward_scale=0.1 \
    max_new_tokens=24 micro_batch_size=16 collapse_signals_every=0 eval_every=0 save_every=10 keep_checkpoints=1 \
    plot_every=0 resume=true output_dir="$OUT" run_name="$name"
done; done
evaluate() {  # NAME MODEL
  [ -f "$OUT/$1/summary.json" ] && return
  echo "$(date -u +%H:%M:%S) test $1"
  ragen-eval --backend hf --model "$2" --env frozenlake_det --split test --episodes 512 --seed-start $START \
    --out "$OUT" --run-name "$1" --no-progress
}
evaluate start-test default
for seed in 0 1 2; do for c in $CONFIGS; do
  name=frozenlake_det__${c}__seed$seed
  evaluate "$name-test" "$(final "$name")"
done; done
echo "$(date -u +%H:%M:%S) done"
