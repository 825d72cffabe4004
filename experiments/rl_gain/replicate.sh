#!/usr/bin/env bash
# A second, independent look at an RL-gain result: the SFT and final StarPO-S checkpoints of
# run.sh play the *next* 512 test levels (the split's seeds after the 512 of the first comparison;
# --seed-start indexes the split's raw seed range, of which only the seeds whose level hashes to
# the split are played) and `ragen-eval compare` pairs them again. ROUND=k (default 1) plays the
# k-th such block, the 512 test levels after the first 512*k. Results go to OUT/replication/
# (OUT/replication-k/ for k > 1), laid out as run.sh's, so export.py reads them the same way.
# EPISODES=n (default 512) plays n levels from that block's start instead of 512.
# Usage: [ROUND=k] [EPISODES=n] experiments/rl_gain/replicate.sh GAME [OUT]   (after run.sh GAME OUT, same PROTOCOL)
set -euo pipefail
GAME=$1
OUT=${2:-runs/rl_gain}
SHORT=$(cat "$(dirname "$0")/short_protocol.json")  # the short prompt of experiments/rl_gain/README.md
PROTOCOL=${PROTOCOL-$SHORT}
protocol=()
[ -z "$PROTOCOL" ] || protocol=(--protocol "$PROTOCOL")
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
ROUND=${ROUND:-1}
EPISODES=${EPISODES:-512}
rep=$OUT/replication
[ "$ROUND" = 1 ] || rep=$OUT/replication-$ROUND
mkdir -p "$rep"
ln -sfn "../$GAME-starpo-s" "$rep/$GAME-starpo-s"
# the raw index just past the last seed of the first 512*ROUND test levels
start=$(python -c "from ragen_envs.splits import SPLIT_OFFSETS, split_seeds; \
print(split_seeds('test', 512 * $ROUND, env='$GAME')[-1] - SPLIT_OFFSETS['test'] + 1)")
final=$(ls -d "$OUT/$GAME-starpo-s"/checkpoints/step_* | sort -V | tail -1)
for side in sft rl; do
  model=$OUT/$GAME-sft
  [ "$side" = sft ] || model=$final
  [ -f "$rep/$GAME-$side-test/summary.json" ] || ragen-eval --model "$model" --backend hf --env "$GAME" \
    --split test --seed-start "$start" --episodes "$EPISODES" --out "$rep" --run-name "$GAME-$side-test" "${protocol[@]}"
done
ragen-eval compare "$rep/$GAME-sft-test" "$rep/$GAME-rl-test" | tee "$rep/$GAME-compare.txt"
