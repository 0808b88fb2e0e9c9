# es-scm developer commands. `make test` is THE test command (README, CI).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.es-scm-installed

.PHONY: help venv test unit lint demo es-start es-stop es-status clean-es

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)  ## create .venv and install es-scm with its test extras

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

demo: $(STAMP)  ## run the demo on embedded defaults
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
