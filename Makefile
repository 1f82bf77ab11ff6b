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
## modules per worker, the browser modules and the slow server modules grouped), and the checks (mypy,
## ruff, the layer contracts) at the same time, niced: they fill the time the workers wait on servers
## and browsers (a cold mypy alone took ~14 s here); their output follows the suite's; either failing fails.
## The bytecode is cached under $(PYCACHE) even where PYTHONDONTWRITEBYTECODE is set (as in the sandbox image here):
## else every pytest worker re-rewrites the asserts of ~370 plugin modules (schemathesis, hypothesis…)
## and every uvicorn the suite starts compiles app/ again (~10 s of CPU per pytest process measured here).
PYCACHE ?= $(CURDIR)/.pycache
JOBS ?= 2  # xdist workers (the machine has 2 cores; `make test JOBS=3` overlaps more of the waits on servers and browsers)
## mypy's incremental cache lives in the suite's cache (tests/artefacts.py: $$JDR_TEST_CACHE, else
## $${XDG_CACHE_HOME:-~/.cache}/jdr-rules-api), one directory per hash of pyproject.toml (mypy's options) and
## of the mypy, pydantic and Python versions: a clean clone checks warm (a cold mypy took ~14 s of CPU here,
## a warm one 0.4 s); mypy itself checks each module's source hash against its cache entry.
## JDR_TEST_CACHE=off: a cold check in a fresh directory.
CACHE = $(or $(JDR_TEST_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/jdr-rules-api)
MYPY_KEY = $(shell { cat pyproject.toml; $(PY) -V; ls -d $(VENV)/lib/python*/site-packages/mypy-*.dist-info \
	$(VENV)/lib/python*/site-packages/pydantic-*.dist-info; } 2>&1 | sha256sum | cut -c1-32)
MYPY_CACHE = $(if $(filter off 0 no false,$(JDR_TEST_CACHE)),$$(mktemp -d),$(CACHE)/mypy/$(MYPY_KEY))
CHECKS = $(VENV)/bin/mypy --cache-dir "$(MYPY_CACHE)" && $(VENV)/bin/ruff check && $(VENV)/bin/ruff format --check && \
	$(VENV)/bin/lint-imports .importlinter
test: install-dev
	@mkdir -p $(PYCACHE); log=$(PYCACHE)/checks.log; \
	( nice -n 5 sh -c '$(CHECKS)' ) >$$log 2>&1 & checks=$$!; \
	status=0; PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(PYCACHE) $(PY) -m pytest -n $(JOBS) --dist loadgroup --no-loadscope-reorder || status=$$?; \
	checked=0; wait $$checks || checked=$$?; \
	echo "== checks: mypy, ruff check, ruff format --check, lint-imports"; cat $$log; \
	if [ $$checked -ne 0 ]; then echo "== the checks failed"; fi; \
	[ $$status -eq 0 ] && [ $$checked -eq 0 ]

## Regenerate openapi.json from the app.
openapi: install
	$(PY) -m app.openapi > openapi.json

clean:
	rm -rf $(VENV) $(PYCACHE) jdr.db jdr.db-*
