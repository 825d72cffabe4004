#!/usr/bin/env bash
# Install each profile the README promises into its own fresh virtualenv and smoke-test it:
#   bare   pip install ragen-envs          games + text protocol (then the env tests, with [dev] added)
#   eval   pip install "ragen-envs[eval]"  no torch; every --help, oracle runs over --local-server and --base-url
#   docs   pip install "ragen-envs[docs]"  the docs site builds with warnings as errors (scripts/build_docs.sh)
#   train  pip install "ragen-envs[train]" ragen-train --help and a one-step tiny run
#   trl    pip install "ragen-envs[trl]"   the TRL adapters' tests (two GRPO steps on Bandit through each hook)
#   verifiers  pip install "ragen-envs[verifiers,eval]"  vf-eval against ragen-eval serve (verifiers pins openai<3)
#   openenv pip install "ragen-envs[openenv]" openenv validate on the installed package; the OpenEnv server's tests
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

echo "== docs: pip install ragen-envs[docs]"
py=$(new_venv docs)
"$py" -m pip install -q "$wheel[docs]"
# mkdocs build --strict from the checkout's docs/ and mkdocs.yml; the site goes to the temp dir
NO_MKDOCS_2_WARNING=1 SITE_DIR="$work/site" PYTHON="$py" scripts/build_docs.sh
test -s "$work/site/api/ragen_eval/index.html"

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
# Two real GRPO steps of TRL on Bandit through each hook (rollout_func, environment_factory), and the two hooks'
# snippets of docs/integrations.md, with only this extra installed.
"$py" -m pytest -q -p no:cacheprovider tests/train/test_trl_adapter.py tests/train/test_trl_tools.py \
    tests/test_integrations_page.py

echo "== verifiers: pip install ragen-envs[verifiers,eval]"
py=$(new_venv verifiers)
# [eval] for ragen-eval serve and the ragen-eval run the test compares with; verifiers holds openai at 2.x here.
"$py" -m pip install -q "$wheel[verifiers,eval]" pytest pytest-benchmark
# vf-eval against the served oracle and random agents; uv (from the extra) must be on PATH for its harness.
PATH="$work/verifiers/bin:$PATH" "$py" -m pytest -q -p no:cacheprovider tests/test_verifiers_env.py

echo "== openenv: pip install ragen-envs[openenv]"
py=$(new_venv openenv)
"$py" -m pip install -q "$wheel[openenv]" pytest pytest-benchmark  # pytest-benchmark: pyproject's addopts name its flag
check openenv
# OpenEnv's own client and `openenv validate` against real servers on loopback, with only this extra installed.
"$py" -m pytest -q -p no:cacheprovider tests/envs/test_openenv_server.py

echo "all install profiles passed their smokes"
