#!/usr/bin/env bash
# The seventh attempt of the thinking-model plan (plan7.md beside this file): the sixth attempt's stages (lineage.sh)
# with every answer written after a space (ragen-train sft --answer-space): B7, Q7, the stop check on val (name q7),
# then S7, which runs only by name, after the check and after plan7.md's addition that fixes its data. Resumable
# chunks of CHUNK steps; rerun the same line to resume; a finished check run is skipped.
# Usage: [STAGES="b7 q7 check7"] experiments/thinking_model/train7.sh [OUT]
#   writes OUT-b7, OUT-q7 and OUT-s7, and the check's runs under runs/thinking_model/eval-oneturn (name q7)
set -euo pipefail
source "$(dirname "$0")/lineage.sh"  # lineage N OUT STAGES [SFT-ARGS...]
lineage 7 "${1:-runs/thinking_model/seven}" "${STAGES:-b7 q7 check7}" --answer-space
