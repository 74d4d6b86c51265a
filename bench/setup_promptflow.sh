#!/usr/bin/env bash
# Create bench/.venv-promptflow (if missing) and install Prompt flow 1.x into it, for
# bench/serve.py's comparison with `pf flow serve`. Kept out of the project's own venv:
# promptflow pins its own versions of many packages. fastapi and uvicorn are for
# `pf flow serve --engine fastapi` (the default engine is flask's own server).
# Idempotent: re-running only re-checks the pinned requirements.
# Usage: bash bench/setup_promptflow.sh
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$BENCH_DIR/.venv-promptflow"

if [ ! -x "$VENV/bin/python" ]; then
    python3.11 -m venv "$VENV"
fi

"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet \
    'promptflow>=1.18,<2' \
    'promptflow-devkit>=1.18,<2' \
    'fastapi' \
    'uvicorn'

"$VENV/bin/python" -c 'import importlib.metadata as m; print("promptflow", m.version("promptflow")); print("promptflow-devkit", m.version("promptflow-devkit"))'
