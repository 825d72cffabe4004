#!/usr/bin/env bash
# Build the docs site (mkdocs-material, API reference by mkdocstrings) from docs/ into site/, warnings as
# errors. Needs the [docs] extra: pip install "ragen-envs[docs]" (or pip install -e ".[docs]").
#   scripts/build_docs.sh                 # then open site/index.html
set -euo pipefail
cd "$(dirname "$0")/.."
"${PYTHON:-python}" -m mkdocs build --strict --site-dir "${SITE_DIR:-site}"
