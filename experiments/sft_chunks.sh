# Sourced by the SFT experiment scripts. chunked DIR ARGS...: run `ragen-train sft --out DIR ARGS`
# CHUNK steps at a time (default 500) until DIR holds its model (or, with UNTIL_STEP=N, its step-N copy), keeping
# the weights after every chunk under DIR/snapshots/step_N (without the optimizer state), so a curve can be drawn
# and a stopped run resumed.
# copy_model DIR [MODEL]: copy MODEL (a checkpoint directory, or `default`, the embedded default model
# in ragen_eval/default_model/; `default` when left out) to DIR, once, as the start of a stage trained
# on top of existing weights.
chunked() {
  local dir=$1; shift
  until [ -f "$dir/model.safetensors" ] || [ -f "$dir/snapshots/step_${UNTIL_STEP:-none}/model.safetensors" ]; do
    ragen-train sft --out "$dir" "$@" --max-steps "${CHUNK:-500}"
    step=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" "$dir/resume/progress.json")
    rm -rf "$dir/snapshots/step_$step" && mkdir -p "$dir/snapshots" && cp -r "$dir/resume" "$dir/snapshots/step_$step"
    rm -f "$dir/snapshots/step_$step/optimizer.pt"
  done
}

copy_model() {
  local dir=$1 model=${2:-default}
  [ -f "$dir/model.safetensors" ] && return 0
  local src
  src=$(python -c "import sys; from ragen_eval.embedded_model import resolve_model_path; print(resolve_model_path(sys.argv[1]))" "$model")
  mkdir -p "$(dirname "$dir")" && rm -rf "$dir" && cp -r "$src" "$dir"
}
