# Sourced by the SFT experiment scripts. chunked DIR ARGS...: run `ragen-train sft --out DIR ARGS`
# CHUNK steps at a time (default 500) until DIR holds its model, keeping the weights after every chunk
# under DIR/snapshots/step_N (without the optimizer state), so a curve can be drawn and a stopped run resumed.
# embedded_default DIR: copy the embedded default model (ragen_eval/default_model/) to DIR, once, as
# the start of a stage trained on top of the shipped weights.
chunked() {
  local dir=$1; shift
  until [ -f "$dir/model.safetensors" ]; do
    ragen-train sft --out "$dir" "$@" --max-steps "${CHUNK:-500}"
    step=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" "$dir/resume/progress.json")
    rm -rf "$dir/snapshots/step_$step" && mkdir -p "$dir/snapshots" && cp -r "$dir/resume" "$dir/snapshots/step_$step"
    rm -f "$dir/snapshots/step_$step/optimizer.pt"
  done
}

embedded_default() {
  local dir=$1
  [ -f "$dir/model.safetensors" ] && return 0
  local src
  src=$(python -c "from ragen_eval.embedded_model import resolve_model_path; print(resolve_model_path('default'))")
  mkdir -p "$(dirname "$dir")" && rm -rf "$dir" && cp -r "$src" "$dir"
}
