#!/usr/bin/env bash
# The Bandit thought probe (plan.md beside this file): `list` (the package's grounded thoughts) and `chosen` (the
# same without the arm list, through probe.py), each from the default model's weights on the same Bandit
# demonstrations; by plan.md's additions, `mixed` (the judged name sets beside the wide one of
# ../thinking_model/bandit_copy_probe.py), `mixed2` (twice the wide demonstrations, RAGEN's pair kept) and `mixed3`
# (mixed's balance, RAGEN's pair kept); `words903`, `words907`, `words908` (`list`'s data from a copy of the start
# whose tokenizer holds each arm name as one token, by words.py; three demo and training seeds) beside `list907` and
# `list908` (`list` on the other two seeds); `small903/907/908` and `big903/907/908` (`list`'s data from random
# weights at 2 x 128 and 4 x 256, the three seeds); `judged913/914` and `crossed913/914` (a short Bandit stage from the
# thinking model's Q1 end, Q1, on the judged sets alone or with ../thinking_model/bandit_copy_probe.py's crossed pairs;
# `q1` is Q1 untrained; `both913/914`: the judged counts with the crossed pairs added, and both913's first turn on
# three grid presets; `more913/914`: the same with three times the crossed pairs; `spaced913/914`: the judged counts
# with every answer written after a space, by --answer-space); `coined903/907/908` (`small`'s runs with 8,000 Bandit
# demonstrations of ../thinking_model/bandit_copy_probe.py's coined name set added); `perarm903/907/908` (`small`'s
# runs with each arm's role in its own sentence, through probe.py); `q6judged913/914` and `q6perarm913/914` (a short
# Bandit stage from the thinking model's Q6 end, with the package's thought or the per-arm one); `qq915` and
# `qqfix915` (Q6's stage at a quarter of its data from B6's end, with the package's replies or with spaced answers and
# "Of the two," after the Bandit arm list); `spacedsmall903/907/908` (`small`'s runs with every answer written after
# a space, by --answer-space); then each with random on the first 256 val levels of the three Bandit presets, and
# `small*`, `coined*` and random also on the wide name set's.
# Resumable: rerun the same line; finished runs and evaluations are skipped. MODELS picks the trained ones.
# Usage: [MODELS="list chosen mixed mixed2 mixed3 words903 ..."] experiments/bandit_thought/run.sh [OUT]
set -euo pipefail
OUT=${1:-runs/bandit_thought}
HERE=$(dirname "$0")
MODELS=${MODELS:-list chosen mixed mixed2 mixed3 list907 list908 words903 words907 words908 small903 small907 small908
  big903 big907 big908 q1 judged913 crossed913 judged914 crossed914 both913 both914 more913 more914 spaced913
  spaced914 coined903 coined907 coined908 perarm903 perarm907 perarm908 q6judged913 q6judged914 q6perarm913
  q6perarm914 qq915 qqfix915 spacedsmall903 spacedsmall907 spacedsmall908}
Q1=${Q1:-runs/thinking_model/q-q1}  # the thinking model's stage Q1 (../thinking_model/plan4.md), start of stage S
Q6=${Q6:-runs/thinking_model/six-q6}  # its stage Q6 (../thinking_model/plan6.md), start of stage S6
B6=${B6:-runs/thinking_model/six-b6/snapshots/step_4000}  # its stage B6's end, start of Q6
# Q6's settings and twelve presets (../thinking_model/train6.sh, stage q6) at a quarter of its demonstrations
QUARTER=(--env simple_sokoban,simple_sokoban_hard,larger_sokoban,larger_sokoban_hard,boxoban,boxoban_hard,frozenlake,\
frozenlake_8x8,frozenlake_det,bandit,bandit_heldout,bandit_reversed --mode oracle --thought grounded --epochs 1
  --batch-size 16 --lr 1e-3 --warmup-steps 20 --seed 0 --checkpoint-every 500 --log-every 100 --drop-long
  --protocol max_turns=1 --demo-seed 915 --episodes 2000,1000,8000,4000,2000,2000,2000,4000,1000,250,2000,2000)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} HF_HUB_OFFLINE=1
source "$HERE/../sft_chunks.sh"  # copy_model DIR [MODEL]
PRESETS="bandit bandit_heldout bandit_reversed"
COMMON=(--mode oracle --thought grounded --batch-size 16 --epochs 1 --lr 1e-3 --warmup-steps 20 --drop-long
  --log-every 200)
JUDGED=(--env bandit,bandit_heldout,bandit_reversed --episodes 1000,8000,8000 "${COMMON[@]}")
declare -A SEED=([903]=0 [907]=1 [908]=2 [913]=0 [914]=1)  # demo seed -> training seed, for the replicates
ARGS=("${JUDGED[@]}" --demo-seed 903 --seed "${SEED[903]}")
replicate() {  # MODEL DEMO-SEED START [ARGS...]: `list`'s data from START on DEMO-SEED and its training seed
  local model=$1 seed=$2 start=$3
  shift 3
  ragen-train sft --model "$start" --out "$OUT/$model" "${JUDGED[@]}" --demo-seed "$seed" --seed "${SEED[$seed]}" "$@"
}
beside_wide() {  # MODEL WIDE-ENV ENVS EPISODES DEMO-SEED: the judged name sets with WIDE-ENV playing the wide set
  python "$HERE/../thinking_model/bandit_copy_probe.py" train sft --model "$OUT/start" --out "$OUT/$1" --env "$3" \
    --env-config "$2:name_set=wide" --episodes "$4" --demo-seed "$5" --seed 0 "${COMMON[@]}"
}
# A short Bandit stage from START (Q1: plan.md's crossed-pairs and spaced-answer additions; Q6: its per-arm stage
# addition), on the judged counts unless --crossed gives the counts with crossed pairs:
# START MODEL DEMO-SEED [--crossed EPISODES | --spaced | --per-arm]
POLISH=(--mode oracle --thought grounded --batch-size 16 --epochs 1 --lr 1e-4 --warmup-steps 20 --drop-long
  --log-every 100)
short_stage() {
  local start=$1 model=$2 seed=$3 envs=bandit,bandit_heldout,bandit_reversed episodes=500,2000,2000
  local train=(ragen-train sft)
  shift
  local extra=()
  case ${3:-} in
    --crossed) train=(python "$HERE/../thinking_model/bandit_copy_probe.py" train sft) envs+=,ragen/Bandit-v0
               episodes=$4 extra=(--env-config ragen/Bandit-v0:name_set=crossed) ;;
    --spaced) extra=(--answer-space) ;;
    --per-arm) train=(python "$HERE/probe.py" per-arm) ;;
  esac
  "${train[@]}" --model "$start" --out "$OUT/$model" --env "$envs" "${extra[@]}" --episodes "$episodes" \
    --demo-seed "$seed" --seed "${SEED[$seed]}" "${POLISH[@]}"
}
copy_model "$OUT/start" default
for model in $MODELS; do
  [ -f "$OUT/$model/model.safetensors" ] && continue
  case $model in
    list) replicate list 903 "$OUT/start" ;;
    chosen) python "$HERE/probe.py" without-list --model "$OUT/start" --out "$OUT/chosen" "${ARGS[@]}" ;;
    mixed) beside_wide mixed bandit bandit,bandit_heldout,bandit_reversed 8000,8000,8000 904 ;;
    mixed2) beside_wide mixed2 ragen/Bandit-v0 bandit,ragen/Bandit-v0,bandit_heldout,bandit_reversed \
              1000,16000,8000,8000 905 ;;
    mixed3) beside_wide mixed3 ragen/Bandit-v0 bandit,ragen/Bandit-v0,bandit_heldout,bandit_reversed \
              1000,8000,8000,8000 906 ;;
    list907|list908) replicate "$model" "${model#list}" "$OUT/start" ;;
    words903|words907|words908) [ -d "$OUT/start-words" ] || python "$HERE/words.py" "$OUT/start" "$OUT/start-words"
                                replicate "$model" "${model#words}" "$OUT/start-words" ;;
    small903|small907|small908) replicate "$model" "${model#small}" tiny ;;
    big903|big907|big908) replicate "$model" "${model#big}" tiny --tiny-num-layers 4 --tiny-hidden-size 256 ;;
    q1) ;;
    judged913|judged914) short_stage "$Q1" "$model" "${model#judged}" ;;
    crossed913|crossed914) short_stage "$Q1" "$model" "${model#crossed}" --crossed 500,1000,1000,2000 ;;
    both913|both914) short_stage "$Q1" "$model" "${model#both}" --crossed 500,2000,2000,2000 ;;
    more913|more914) short_stage "$Q1" "$model" "${model#more}" --crossed 500,2000,2000,6000 ;;
    spaced913|spaced914) short_stage "$Q1" "$model" "${model#spaced}" --spaced ;;
    q6judged913|q6judged914) short_stage "$Q6" "$model" "${model#q6judged}" ;;
    q6perarm913|q6perarm914) short_stage "$Q6" "$model" "${model#q6perarm}" --per-arm ;;
    qq915) ragen-train sft --model "$B6" --out "$OUT/$model" "${QUARTER[@]}" ;;
    qqfix915) python "$HERE/probe.py" of-the-two --model "$B6" --out "$OUT/$model" "${QUARTER[@]}" --answer-space ;;
    spacedsmall903|spacedsmall907|spacedsmall908) replicate "$model" "${model#spacedsmall}" tiny --answer-space ;;
    perarm903|perarm907|perarm908) seed=${model#perarm}
      python "$HERE/probe.py" per-arm --model tiny --out "$OUT/$model" "${JUDGED[@]}" --demo-seed "$seed" \
        --seed "${SEED[$seed]}" ;;
    coined903|coined907|coined908) seed=${model#coined}
      python "$HERE/../thinking_model/bandit_copy_probe.py" train sft --model tiny --out "$OUT/$model" \
        --env bandit,bandit_heldout,bandit_reversed,ragen/Bandit-v0 --env-config ragen/Bandit-v0:name_set=coined \
        --episodes 1000,8000,8000,8000 --demo-seed "$seed" --seed "${SEED[$seed]}" "${COMMON[@]}" ;;
    *) echo "run.sh: unknown model $model (list, chosen, mixed, mixed2, mixed3, list907, list908, words903," \
            "words907, words908, small903, small907, small908, big903, big907, big908, q1, judged913, judged914," \
            "crossed913, crossed914, both913, both914, more913, more914, spaced913, spaced914, coined903," \
            "coined907, coined908, perarm903, perarm907, perarm908, q6judged913, q6judged914, q6perarm913," \
            "q6perarm914, qq915, qqfix915, spacedsmall903, spacedsmall907, spacedsmall908)" >&2; exit 2 ;;
  esac
done
for model in random $MODELS; do
  # crossed levels: train pairs only, none a judged val/test pair (checked before any look)
  [[ $model == crossed* || $model == both* || $model == more* ]] &&
    python "$HERE/../thinking_model/bandit_copy_probe.py" check "$OUT/$model" 3
  case $model in
    random) backend=(); path=random ;;
    q1) backend=(--backend hf); path=$Q1 ;;
    *) backend=(--backend hf); path="$OUT/$model" ;;
  esac
  for preset in $PRESETS; do
    [ -f "$OUT/eval/$model-$preset-val/summary.json" ] && continue
    ragen-eval --model "$path" "${backend[@]}" --env "$preset" --split val --seed-start 0 --episodes 256 \
      --out "$OUT/eval" --run-name "$model-$preset-val" --no-progress
  done
  # names no model trained on, about 40 val pairs (the coined-names addition)
  [[ $model == random || $model == small* || $model == coined* ]] || continue
  [ -f "$OUT/eval/$model-bandit_wide-val/summary.json" ] && continue
  python "$HERE/../thinking_model/bandit_copy_probe.py" eval --model "$path" "${backend[@]}" --env bandit \
    --env-config bandit:name_set=wide --split val --seed-start 0 --episodes 256 --out "$OUT/eval" \
    --run-name "$model-bandit_wide-val" --no-progress
done
# What a Bandit-only stage costs the grids (the addition with the judged counts): both913's first turn on three grid
# presets, as Q1's check played them
if [[ " $MODELS " == *" both913 "* ]]; then
  for preset in simple_sokoban larger_sokoban frozenlake; do
    [ -f "$OUT/eval-oneturn/both913-$preset-val/summary.json" ] && continue
    ragen-eval --model "$OUT/both913" --backend hf --env "$preset" --split val --seed-start 0 --episodes 256 \
      --protocol max_turns=1 --out "$OUT/eval-oneturn" --run-name "both913-$preset-val" --no-progress
  done
fi
