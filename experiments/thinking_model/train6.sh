#!/usr/bin/env bash
# The sixth attempt of the thinking-model plan (plan6.md beside this file), from random weights: B6 (B's recipe,
# experiments/boxoban_reading, to its step 4,000), Q6 (Q1's one-turn reading recipe, plan4.md), the stop check on val
# (the first turn of 256 val levels of twelve presets), then S6 (S's whole episodes with detours, three times the
# 10x10 episodes and sequences up to 6,144 tokens); the stages are lineage.sh's. Resumable chunks of CHUNK steps;
# rerun the same line to resume; a finished check run is skipped.
# Usage: [STAGES="b6 q6 check6"] experiments/thinking_model/train6.sh [OUT]   (STAGES=s6 once the check allows it)
#   writes OUT-b6, OUT-q6 and OUT-s6, and the check's runs under runs/thinking_model/eval-oneturn (name q6)
set -euo pipefail
source "$(dirname "$0")/lineage.sh"  # lineage N OUT STAGES [SFT-ARGS...]
lineage 6 "${1:-runs/thinking_model/six}" "${STAGES:-b6 q6 check6}"  # S6 only by name: the stop check comes first
