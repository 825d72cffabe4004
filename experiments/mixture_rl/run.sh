#!/usr/bin/env bash
# The mixture-RL study (plan.md beside this file), in three stages:
#   run.sh OUT train        StarPO-S from the default model on sokoban + frozenlake + bandit, 200 steps (resumable)
#   run.sh OUT val          the start model and the checkpoints of steps 50-200 on 512 val levels of each game
#   run.sh OUT test STEP    the start model and the picked checkpoint on 1,024 fresh test levels of each game
# A finished run or evaluation is skipped, so rerunning a stage resumes it. Usage: nice -n 10 run.sh OUT STAGE [STEP]
set -euo pipefail
OUT=${1:?usage: run.sh OUT train|val|test STEP}
STAGE=${2:?usage: run.sh OUT train|val|test STEP}
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
RUN=mixture__starpo-s__seed0
GAMES="sokoban frozenlake bandit"
mkdir -p "$OUT"
checkpoint() { echo "$OUT/$RUN/checkpoints/step_$(printf %06d "$1")"; }
evaluate() {  # NAME MODEL GAME SPLIT SEED_START EPISODES
  [ -f "$OUT/$1/summary.json" ] && return
  echo "$(date -u +%H:%M:%S) $4 $1"
  ragen-eval --backend hf --model "$2" --env "$3" --split "$4" --seed-start "$5" --episodes "$6" \
    --out "$OUT" --run-name "$1" --no-progress
}
case $STAGE in
  train)
    ragen-train preset=starpo-s model=default seed=0 total_steps=200 \
      env='[{name: sokoban, groups: 4}, {name: frozenlake, groups: 4}, {name: bandit, groups: 4}]' group_size=8 \
      rollout_filter_ratio=0.5 actor_lr=1e-4 critic_lr=1e-3 reward_scale=0.1 max_new_tokens=24 micro_batch_size=16 \
      eval_every=0 save_every=50 keep_checkpoints=4 plot_every=0 resume=true --out "$OUT" run_name="$RUN" ;;
  val)
    for game in $GAMES; do
      evaluate "start-$game-val" default "$game" val 0 512
      for step in 50 100 150 200; do evaluate "step$step-$game-val" "$(checkpoint "$step")" "$game" val 0 512; done
    done ;;
  test)
    STEP=${3:?usage: run.sh OUT test STEP (the pick written in results.md)}
    for game in $GAMES; do
      # the raw index just past the first 8,192 test levels of the game (plan.md, "Confirming on test")
      start=$(python -c "from ragen_envs.splits import SPLIT_OFFSETS, split_seeds; \
print(split_seeds('test', 8192, env='$game')[-1] - SPLIT_OFFSETS['test'] + 1)")
      evaluate "start-$game-test" default "$game" test "$start" 1024
      evaluate "step$STEP-$game-test" "$(checkpoint "$STEP")" "$game" test "$start" 1024
    done ;;
  *) echo "run.sh: unknown stage $STAGE (train, val or test)" >&2; exit 2 ;;
esac
echo "$(date -u +%H:%M:%S) $STAGE done"
