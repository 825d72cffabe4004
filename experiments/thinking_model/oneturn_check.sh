# Sourced by train3.sh, train4.sh and lineage.sh. oneturn_check MODEL NAME ENVS CHECK: the plans' stop check, the
# first turn only (`--protocol max_turns=1`) of 256 val levels from seed start 0 of each preset in ENVS
# (comma-separated), played by MODEL under CHECK as NAME-PRESET-val; a finished run (its summary.json) is skipped.
oneturn_check() {
  local model=$1 name=$2 envs=$3 check=$4 preset
  for preset in ${envs//,/ }; do
    [ -f "$check/$name-$preset-val/summary.json" ] && continue
    echo "$(date -u +%H:%M:%S) $name-$preset-val"
    ragen-eval --model "$model" --backend hf --env "$preset" --split val --seed-start 0 --episodes 256 \
      --protocol max_turns=1 --out "$check" --run-name "$name-$preset-val" --no-progress
  done
}
