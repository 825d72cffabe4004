#!/usr/bin/env bash
# The reasoning study (plan.md beside this file, as its amendment sets it): StarPO-S on frozenlake_det from START
# (the thinking model's val pick), outcome-only (O) and with the consistency reward (C), seeds 0-2, 60 steps, one
# run at a time, seed-major; then START and every final checkpoint on the same 512 test levels. Resumable: a
# finished run or evaluation is skipped, an unfinished run resumes from its last checkpoint.
# Usage: nice -n 10 experiments/reasoning_reward/run.sh START OUT
set -euo pipefail
START_MODEL=${1:?usage: run.sh START OUT}
OUT=${2:?usage: run.sh START OUT}
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
STEPS=60
GAME=frozenlake_det  # plan.md's amendment (the plan first named simple_sokoban)
mkdir -p "$OUT"
final() { echo "$OUT/$1/checkpoints/step_$(printf %06d $STEPS)"; }
for seed in 0 1 2; do for arm in O C; do
  name=${GAME}__${arm}__seed$seed
  [ -d "$(final "$name")" ] && continue
  terms=()
  [ "$arm" = C ] && terms=(reasoning_reward_consistency=0.1)
  echo "$(date -u +%H:%M:%S) train $name"
  ragen-train preset=starpo-s env=$GAME model="$START_MODEL" seed="$seed" total_steps=$STEPS \
    env_groups=8 group_size=8 actor_lr=1e-4 critic_lr=1e-3 reward_scale=0.1 max_new_tokens=128 micro_batch_size=8 \
    collapse_signals_every=0 eval_every=0 save_every=10 keep_checkpoints=1 plot_every=0 resume=true \
    "${terms[@]}" --out "$OUT" run_name="$name"
done; done
# past the first 16,384 frozenlake_det (and frozenlake) test levels (plan.md, "Levels")
START=$(python -c "from ragen_envs.splits import SPLIT_OFFSETS, split_seeds; \
print(split_seeds('test', 16384, env='$GAME')[-1] - SPLIT_OFFSETS['test'] + 1)")
evaluate() {  # NAME MODEL
  [ -f "$OUT/$1/summary.json" ] && return
  echo "$(date -u +%H:%M:%S) test $1"
  ragen-eval --backend hf --model "$2" --env $GAME --split test --episodes 512 --seed-start "$START" \
    --out "$OUT" --run-name "$1" --no-progress
}
evaluate start-test "$START_MODEL"
for seed in 0 1 2; do for arm in O C; do
  name=${GAME}__${arm}__seed$seed
  evaluate "$name-test" "$(final "$name")"
done; done
echo "$(date -u +%H:%M:%S) done"
