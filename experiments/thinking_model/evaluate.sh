#!/usr/bin/env bash
# The thinking model's evaluations (plan.md beside this file): one model on each of the 13 built-in presets of the
# plan's table (`sokoban`, RAGEN's name for simple_sokoban's levels, evaluated as its own among them).
#   evaluate.sh OUT val MODEL NAME    "Selection on val": 256 levels a preset (1,024 on frozenlake and frozenlake_8x8)
#                                     from seed start 0
#   evaluate.sh OUT test MODEL NAME   "The gates ... judged once on test": 512 levels a preset (2,048 on the two lakes)
#                                     from the preset's test seed start; only the pick written in plan.md, v13, random
#   evaluate.sh starts                print each preset's test levels already played and its test seed start
# MODEL: a checkpoint folder (played with --backend hf), `default` (v13, the shipped model) or `random`. NAME names the
# runs OUT/NAME-PRESET-SPLIT; analyze.py takes NAME `v13` for default, `random` for random, `tK` for the end of
# stage TK (a candidate) and `stepN` for the chunk copy of step N (the val curve). The harness's defaults otherwise
# (temperature 0.5, max_tokens 400, the default protocol). A finished run (its summary.json) is skipped and an
# unfinished one resumes, so rerunning a line resumes it. Usage: nice -n 10 evaluate.sh OUT val|test MODEL NAME
# (ONLY="PRESET ..." before it: those presets only, on val).
set -euo pipefail
PRESETS="sokoban simple_sokoban simple_sokoban_hard larger_sokoban larger_sokoban_hard boxoban boxoban_hard
frozenlake frozenlake_8x8 frozenlake_det bandit bandit_heldout bandit_reversed"
# Test levels of each preset, counted from the split's start, that committed runs played: the test block starts
# just past them (plan.md, "Test seed starts"). sokoban and simple_sokoban are the same levels: rl_gain's
# replication-3 played 1,536-2,559. frozenlake: rl_gain's replication from the default model played 512-4,607 (past
# the v13 lake goal's 0-4,095). frozenlake_det: rollout_diversity played 2,048-2,559. The rest: the first 256
# (preset_baselines, the leaderboard, the default model's and rollout_staleness's runs). Blocks other plans reserve
# lie above ours: mixture_rl from 8,192 (sokoban, frozenlake, bandit), reasoning_reward from 16,384
# (simple_sokoban), actions_per_turn 3,072-3,583 (frozenlake_det).
declare -A PLAYED=([sokoban]=2560 [simple_sokoban]=2560 [simple_sokoban_hard]=256 [larger_sokoban]=256
  [larger_sokoban_hard]=256 [boxoban]=256 [boxoban_hard]=256 [frozenlake]=4608 [frozenlake_8x8]=256
  [frozenlake_det]=2560 [bandit]=256 [bandit_heldout]=256 [bandit_reversed]=256)
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
usage="usage: evaluate.sh OUT val|test MODEL NAME, or evaluate.sh starts"
# PRESET: the raw index just past its PLAYED test levels, computed as experiments/rl_gain/replicate.sh does
test_start() {
  python -c "from ragen_envs.splits import SPLIT_OFFSETS, split_seeds; \
print(split_seeds('test', ${PLAYED[$1]}, env='$1')[-1] - SPLIT_OFFSETS['test'] + 1)"
}
if [ "${1:-}" = starts ]; then
  for preset in $PRESETS; do echo "$preset ${PLAYED[$preset]} $(test_start "$preset")"; done
  exit 0
fi
OUT=${1:?$usage}
SPLIT=${2:?$usage}
MODEL=${3:?$usage}
NAME=${4:?$usage}
case $SPLIT in
  val) per=256 ;;
  test) per=512 ;;
  *) echo "evaluate.sh: unknown split $SPLIT (val or test)" >&2; exit 2 ;;
esac
case $MODEL in
  random) model=(--model random) ;;
  default) model=(--model default --backend hf) ;;
  *) [ -d "$MODEL" ] || { echo "evaluate.sh: no checkpoint folder $MODEL" >&2; exit 2; }
     model=(--model "$MODEL" --backend hf) ;;
esac
[[ $NAME =~ ^[A-Za-z0-9_]+$ ]] || { echo "evaluate.sh: NAME is letters, digits and _ (got $NAME)" >&2; exit 2; }
# ONLY="PRESET ...": play only these of the 13 on val (a stop check's presets); the test stage plays all 13
if [ -n "${ONLY:-}" ]; then
  [ "$SPLIT" = val ] || { echo "evaluate.sh: ONLY is for val; the test stage plays every preset" >&2; exit 2; }
  for preset in $ONLY; do
    [[ " $(echo $PRESETS) " == *" $preset "* ]] || { echo "evaluate.sh: ONLY names $preset, not one of the 13" >&2; exit 2; }
  done
  PRESETS=$ONLY
fi
mkdir -p "$OUT"
for preset in $PRESETS; do
  run=$NAME-$preset-$SPLIT
  [ -f "$OUT/$run/summary.json" ] && continue
  episodes=$per
  case $preset in frozenlake|frozenlake_8x8) episodes=$((4 * per)) ;; esac
  start=0
  [ "$SPLIT" = val ] || start=$(test_start "$preset")
  echo "$(date -u +%H:%M:%S) $run: $episodes levels from $start"
  ragen-eval "${model[@]}" --env "$preset" --split "$SPLIT" --seed-start "$start" --episodes "$episodes" \
    --out "$OUT" --run-name "$run" --no-progress
done
echo "$(date -u +%H:%M:%S) $NAME $SPLIT done"
