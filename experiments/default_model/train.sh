#!/usr/bin/env bash
# Trains the multi-game default model with `ragen-train sft`, in resumable chunks of CHUNK steps,
# keeping a copy of the weights after each chunk (the points of the success-vs-data curve).
# Usage: experiments/default_model/train.sh [OUT]    (rerun the same line to resume; the model is OUT-final)
set -euo pipefail
OUT=${1:-runs/default_model/sft}
CHUNK=${CHUNK:-130}
# One intra-op thread: on a small shared CPU, torch's thread pool spinning against other
# processes made a step 4x slower than a single thread (measured 8.4 s vs 2.2 s).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
args=(--model tiny --out "$OUT" --env simple_sokoban,frozenlake,bandit --episodes 12000,4000,512
      --mode oracle --thought none --epochs 1 --batch-size 32 --lr 2e-3 --warmup-steps 20
      --tiny-hidden-size 128 --tiny-num-layers 2 --seed 0 --demo-seed 0 --checkpoint-every 60 --log-every 20)
until [ -f "$OUT/model.safetensors" ]; do
  ragen-train sft "${args[@]}" --max-steps "$CHUNK"
  step=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" "$OUT/resume/progress.json")
  rm -rf "$OUT/snapshots/step_$step" && mkdir -p "$OUT/snapshots" && cp -r "$OUT/resume" "$OUT/snapshots/step_$step"
  rm -f "$OUT/snapshots/step_$step/optimizer.pt"
done
# Stage 2: Bandit had only 16 of the 516 batches and still answered with moves; a short pass
# weighted to Bandit (fresh levels of every game, another demo seed) from the stage-1 weights.
FINAL=${FINAL:-$OUT-final}
ragen-train sft --model "$OUT" --out "$FINAL" --env bandit,simple_sokoban,frozenlake --episodes 1024,512,256 \
  --mode oracle --thought none --epochs 1 --batch-size 32 --lr 1e-3 --warmup-steps 5 --seed 0 --demo-seed 1 \
  --checkpoint-every 60 --log-every 20
