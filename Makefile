# Two commands matter: `make demo` and `make test`. Both create .venv when it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_TICKET ?= I was charged twice for my subscription this month.

.PHONY: install demo test lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[local,studio,dev,ray,mcp,otel,serve,postgres]'
	$(BIN)/flowstudio models install smollm2
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/flowstudio run flows/ticket-triage.yaml -i ticket="$(DEMO_TICKET)"

lint: install
	$(BIN)/ruff check studio nodes tests bench
	$(BIN)/ruff format --check studio nodes tests bench
	$(BIN)/lint-imports
	$(BIN)/interrogate studio

typecheck: install
	$(BIN)/mypy

test: install lint typecheck
	$(BIN)/pytest

# The quick figures of docs/benchmarks.md; the others have their own scripts in bench/.
bench: install
	bash bench/setup_langgraph.sh
	$(BIN)/python bench/engine_overhead.py
	$(BIN)/python bench/cold_start.py
	$(BIN)/python bench/embedded_model.py
	$(BIN)/python bench/durable.py

clean:
	rm -rf $(VENV) .flowstudio .pytest_cache .mypy_cache .ruff_cache
