#!/usr/bin/env bash
# The Echo-Trap study (plan.md beside this file): StarPO and StarPO-S, seeds 0-4, on Bandit (from a format-only
# SFT) and SimpleSokoban (from the shipped default model), all twenty runs at once, each capped at CAP seconds of
# wall time (metrics are written every step, so a capped run keeps every step it finished).
# Usage: experiments/echo_trap/run.sh OUT [DEVICE]     e.g. run.sh runs/echo cuda
# OUT/bandit-format must hold the start model (made by the sft line below when missing).
set -uo pipefail
OUT=${1:?usage: run.sh OUT [DEVICE]}
DEVICE=${2:-cpu}
CAP=${CAP:-450}
STEPS=${STEPS:-300}
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
train() { python3 -m ragen_train.cli "$@"; }
mkdir -p "$OUT"
[ -f "$OUT/bandit-format/model.safetensors" ] || train sft --model tiny --env bandit --mode format --episodes 512 \
  --epochs 2 --lr 2e-3 --seed 0 --out "$OUT/bandit-format"
signals=(collapse_entropy_ratio=0.5 collapse_cond_entropy_ratio=0.5 collapse_mi_ratio=0.5 collapse_critic_grad_spike=10)
common=(device="$DEVICE" total_steps="$STEPS" env_groups=8 group_size=8 critic_lr=1e-3 micro_batch_size=64
        eval_every=25 eval_episodes=64 save_every=0 plot_every=0 output_dir="$OUT" "${signals[@]}")
for seed in ${SEEDS:-0 1 2 3 4}; do for p in starpo starpo-s; do
  timeout "$CAP" python3 -m ragen_train.cli preset=$p env=bandit model="$OUT/bandit-format" seed=$seed \
    max_new_tokens=40 actor_lr=5e-4 "${common[@]}" run_name=bandit__${p}__seed$seed > "$OUT/bandit__${p}__seed$seed.log" 2>&1 &
  timeout "$CAP" python3 -m ragen_train.cli preset=$p env=simple_sokoban model=ragen_eval/default_model seed=$seed \
    max_new_tokens=24 actor_lr=1e-4 reward_scale=0.1 "${common[@]}" run_name=simple_sokoban__${p}__seed$seed \
    > "$OUT/simple_sokoban__${p}__seed$seed.log" 2>&1 &
done; done
wait
for log in "$OUT"/*.log; do echo "$log: $(grep -c '^step ' "$log") steps; $(grep -m1 -E 'Error|error:' "$log")"; done
