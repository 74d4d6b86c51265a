#!/usr/bin/env bash
# Create bench/.venv-langgraph (if missing) and install LangGraph 1.x into it.
# Idempotent: re-running only re-checks the pinned requirements.
# Usage: bash bench/setup_langgraph.sh
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$BENCH_DIR/.venv-langgraph"

if [ ! -x "$VENV/bin/python" ]; then
    python3.11 -m venv "$VENV"
fi

"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet \
    'langgraph>=1,<2' \
    'langgraph-checkpoint-sqlite'

"$VENV/bin/python" -c 'import importlib.metadata as m; print("langgraph", m.version("langgraph")); print("langgraph-checkpoint-sqlite", m.version("langgraph-checkpoint-sqlite"))'
