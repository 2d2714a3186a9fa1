#!/usr/bin/env bash
# Builds the documentation site (MkDocs Material, mkdocs.yml) and serves it locally.
#   ./scripts/docs.sh          regenerate the reference pages, build strictly, serve at 127.0.0.1:8001
#   ./scripts/docs.sh build    regenerate and build into site/ only
# Uses .venv (made by scripts/demo.sh or scripts/test.sh) with the dev extra, which has mkdocs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .venv ] || python3 -m venv .venv
. .venv/bin/activate
python -c 'import material' 2>/dev/null || python -m pip install -q -e ".[dev]"
export NO_MKDOCS_2_WARNING=1
python scripts/docs_reference.py       # CLI, REST, settings, trace and error pages from the code
mkdocs build --strict
if [ "${1:-serve}" = "serve" ]; then
    mkdocs serve --dev-addr 127.0.0.1:8001
fi
