# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install install-dev openapi bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

## Serve on http://$(HOST):$(PORT) (SQLite file ./jdr.db unless DATABASE_URL is set); migrations applied first.
run: install
	$(PY) -m app serve --host $(HOST) --port $(PORT)

## The whole suite (SQLite unless DATABASE_URL is set) on two xdist workers (tests/conftest.py: whole
## modules per worker, the browser modules and the slow server modules grouped), then the layer contracts.
## The bytecode is cached under $(PYCACHE) even where PYTHONDONTWRITEBYTECODE is set (as in the sandbox image here):
## else every pytest worker re-rewrites the asserts of ~370 plugin modules (schemathesis, hypothesis…)
## and every uvicorn the suite starts compiles app/ again (~10 s of CPU per pytest process measured here).
PYCACHE ?= $(CURDIR)/.pycache
test: install-dev
	PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(PYCACHE) $(PY) -m pytest -n 2 --dist loadgroup --no-loadscope-reorder
	$(VENV)/bin/mypy
	$(VENV)/bin/ruff check
	$(VENV)/bin/ruff format --check
	$(VENV)/bin/lint-imports .importlinter

## Regenerate openapi.json from the app.
openapi: install
	$(PY) -m app.openapi > openapi.json

clean:
	rm -rf $(VENV) $(PYCACHE) jdr.db jdr.db-*
