#!/usr/bin/env bash
# Install each profile the README promises into its own fresh virtualenv and smoke-test it:
#   bare   pip install ragen-envs          games + text protocol (then the env tests, with [dev] added)
#   eval   pip install "ragen-envs[eval]"  no torch; every --help, oracle runs over --local-server and --base-url
#   train  pip install "ragen-envs[train]" ragen-train --help and a one-step tiny run
#   trl    pip install "ragen-envs[trl]"   the TRL adapters' tests (two GRPO steps on Bandit through each hook)
# Any missing dependency fails the script (nonzero). The venvs live in a temp dir removed at exit;
# pip's cache is shared with the caller, so a rerun takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
python=${PYTHON:-python}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
work=$(mktemp -d "${TMPDIR:-/tmp}/ragen-profiles.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM  # so that the EXIT trap also cleans up after Ctrl-C or a CI timeout

# One wheel, built the way a user's `pip install .` builds it, installed into every profile.
"$python" -m pip wheel -q --no-deps . -w "$work/dist"
wheel=$(ls "$work"/dist/ragen_envs-*.whl)

new_venv() {  # new_venv NAME: a fresh venv, its python printed
  "$python" -m venv "$work/$1"
  echo "$work/$1/bin/python"
}
check() {  # check NAME: run the profile's checks from outside the checkout, so the wheel is what imports
  (cd "$work" && "$work/$1/bin/python" "$root/scripts/profile_checks.py" "$1" "$work")
}

echo "== bare: pip install ragen-envs"
py=$(new_venv bare)
"$py" -m pip install -q "$wheel"
check bare
# The env tests need only the test tools: the ones that draw (marked `render`) must skip, not fail.
"$py" -m pip install -q "$wheel[dev]"
"$py" -m pytest -q -p no:cacheprovider -m "not slow" tests/envs

echo "== eval: pip install ragen-envs[eval]"
py=$(new_venv eval)
"$py" -m pip install -q "$wheel[eval]"
check eval

echo "== train: pip install ragen-envs[train]"
py=$(new_venv train)
# The CPU torch first, as scripts/install.sh does: a bare `torch` requirement pulls a multi-GB CUDA build.
"$py" -m pip install -q "torch==2.13.0"
"$py" -m pip install -q "$wheel[train]"
check train

echo "== trl: pip install ragen-envs[trl]"
py=$(new_venv trl)
"$py" -m pip install -q "torch==2.13.0"
"$py" -m pip install -q "$wheel[trl]" pytest pytest-benchmark  # pytest-benchmark: pyproject's addopts name its flag
# Two real GRPO steps of TRL on Bandit through each hook (rollout_func, environment_factory), with only this
# extra installed.
"$py" -m pytest -q -p no:cacheprovider tests/train/test_trl_adapter.py tests/train/test_trl_tools.py

echo "all install profiles passed their smokes"
