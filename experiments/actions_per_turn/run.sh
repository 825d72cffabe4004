#!/usr/bin/env bash
# The actions-per-turn study (plan.md beside this file): StarPO-S (filter off) on frozenlake_det from the default
# model, 64 episodes a step as 8x8, at most k = 1, 2, 3, 5, 7, 10 actions per turn (10 turns at k = 1, 5 otherwise;
# 10 actions an episode), seeds 0-2, 30 steps, one run at a time, seed-major; then, once all eighteen runs have
# finished, the start model under each k and every final checkpoint under its own k on the same 512 test levels.
# Resumable: a finished run or evaluation is skipped, an unfinished run resumes from its last checkpoint.
# Usage: nice -n 10 experiments/actions_per_turn/run.sh OUT
set -euo pipefail
OUT=${1:?usage: run.sh OUT}
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
STEPS=30
START=31258  # raw test index just past the first 3,072 frozenlake_det test levels (plan.md, "Levels")
BUDGETS="1 2 3 5 7 10"
mkdir -p "$OUT"
turns() { echo $(( $1 == 1 ? 10 : 5 )); }  # max(5, ceil(10 / k)), text_budget's rule
final() { echo "$OUT/$1/checkpoints/step_$(printf %06d $STEPS)"; }
for seed in 0 1 2; do for k in $BUDGETS; do
  name=frozenlake_det__k${k}__seed$seed
  [ -d "$(final "$name")" ] && continue
  echo "$(date -u +%H:%M:%S) train $name"
  ragen-train preset=starpo-s env=frozenlake_det model=default seed="$seed" total_steps=$STEPS \
    env_groups=8 group_size=8 rollout_filter_ratio=1 actor_lr=1e-4 critic_lr=1e-3 reward_scale=0.1 \
    protocol.max_actions_per_turn="$k" protocol.max_turns="$(turns "$k")" \
    max_new_tokens=40 micro_batch_size=16 collapse_signals_every=0 eval_every=0 save_every=10 keep_checkpoints=1 \
    plot_every=0 resume=true --out "$OUT" run_name="$name"
done; done
evaluate() {  # NAME MODEL K
  [ -f "$OUT/$1/summary.json" ] && return
  echo "$(date -u +%H:%M:%S) test $1"
  ragen-eval --backend hf --model "$2" --env frozenlake_det --split test --episodes 512 --seed-start $START \
    --protocol max_actions_per_turn="$3" --protocol max_turns="$(turns "$3")" \
    --out "$OUT" --run-name "$1" --no-progress
}
for k in $BUDGETS; do evaluate "start-k$k-test" default "$k"; done
for seed in 0 1 2; do for k in $BUDGETS; do
  name=frozenlake_det__k${k}__seed$seed
  evaluate "$name-test" "$(final "$name")" "$k"
done; done
echo "$(date -u +%H:%M:%S) done"
