# The two commands of the README, plus their set-up. Each target installs what it needs
# on a fresh machine (a virtual environment from pyproject.toml; Debian's chromium for the
# browser tests, bubblewrap for the hosted-bot sandbox tests and docker-compose to validate
# the compose file), so `make demo` and
# `make test` work from a clean clone.
PY ?= python3
# bash: the setup recipe uses `set -eo pipefail`.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup chromium bubblewrap hosting-runtimes compose-check-tool test lint demo proto bench

# The engine is compiled with mypyc at install time (setup.py): a changed engine source
# reinstalls, so the compiled build never lags behind it (a stale one is not used anyway).
ENGINE_SOURCES := setup.py bots_sdk/cards.py bots_sdk/engine_build.py $(wildcard bots_sdk/rules/*.py)

# The first install takes a minute or two: say what is happening and let pip list each
# package as it goes (pip's own lines are the progress), then how long it took.
$(STAMP): pyproject.toml $(ENGINE_SOURCES)
	@echo "==> setup: a virtual environment in $(VENV)/ with every pinned dependency of pyproject.toml"
	@test -x $(BIN)/python || { echo "==> creating $(VENV)/ with $$($(PY) --version)"; $(PY) -m venv $(VENV); }
	@echo "==> upgrading pip"
	@$(BIN)/pip install -q -U pip
	@echo "==> installing the platform (editable, the rules engine compiled with mypyc) and its development tools: the first time takes 2-3 minutes"
	@set -eo pipefail; start=$$(date +%s); \
	  $(BIN)/pip install --progress-bar off -e '.[dev]' 2>&1 \
	    | { grep --line-buffered -E '^( *Collecting|Installing collected|Successfully installed|ERROR|error)' || true; }; \
	  echo "==> setup done in $$(( $$(date +%s) - start )) s"
	@touch $(STAMP)

setup: $(STAMP)

# Browser tests drive Debian's chromium (Playwright never downloads a browser here).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Hosted bots run in Debian's bubblewrap (docs/hosting.md); the sandbox tests use the real one.
bubblewrap:
	@command -v bwrap >/dev/null 2>&1 || { \
	  echo "installing Debian's bubblewrap for the hosted-bot sandbox tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; }

# The fixed runtimes hosted bots run on (docs/hosting.md), built once into var/ (a few
# minutes the first time: the SDK with its compiled engine, and npm ci); the sandbox tests
# use them. Without a package registry it cannot build: their tests are skipped then, and
# with TIENLEN_REQUIRE_SERVERS set (CI) that is an error here.
hosting-runtimes: setup
	@$(BIN)/python -m tournaments.hosting.runtimes || \
	  if [ -n "$$TIENLEN_REQUIRE_SERVERS" ]; then exit 1; \
	  else echo "could not build the hosted-bot runtimes: their tests will be skipped"; fi

# No Docker engine here: Debian's docker-compose (v1) still validates docker/compose.yml.
# Without apt (or root) the deploy test that needs it is skipped on a laptop; with
# TIENLEN_REQUIRE_SERVERS set (CI) it would fail, so the install failing is an error there.
compose-check-tool:
	@command -v docker-compose >/dev/null 2>&1 || { \
	  echo "installing Debian's docker-compose to validate docker/compose.yml"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq docker-compose >/dev/null; } || \
	  if [ -n "$$TIENLEN_REQUIRE_SERVERS" ]; then \
	    echo "could not install docker-compose, and TIENLEN_REQUIRE_SERVERS is set"; exit 1; \
	  else echo "could not install docker-compose: its compose check will be skipped"; fi; }

# ruff everywhere; mypy --strict on the engine, the SDK and the referee (pyproject's
# [tool.mypy]); the import layers (pyproject's [tool.importlinter], platform/ on the path).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	PYTHONPATH=.:platform $(BIN)/lint-imports

# The whole test suite (README: `make test`) on the compiled engine, then the engine's tests
# again on its pure-Python source (the fallback when no C compiler is at hand).
test: setup chromium bubblewrap hosting-runtimes compose-check-tool lint
	TIENLEN_ENGINE=mypyc $(BIN)/pytest $(PYTEST_ARGS)
	TIENLEN_ENGINE=python $(BIN)/pytest tests/engine -q

# The main job (README: `make demo`): a real round robin between real bot processes.
# Without DATABASE_URL it runs on its own SQLite database in var/demo/, started afresh each
# run (the last run's is kept as db.sqlite3.previous), so runs never share ratings.
DEMO_VAR ?= $(CURDIR)/var/demo
demo: setup
	TIENLEN_VAR_DIR=$${TIENLEN_VAR_DIR:-$(DEMO_VAR)} $(BIN)/python manage.py run_demo $(if $(DATABASE_URL),,--fresh) $(DEMO_ARGS)

# Regenerate the gRPC/protobuf Python code from proto/ (checked in; a test diffs it).
proto: setup
	$(BIN)/python -m referee_service.protogen

# Every benchmark, one after another (BENCH_ARGS=--quick for short runs, --only NAME,...).
bench: setup
	$(BIN)/python benchmarks/run_all.py $(BENCH_ARGS)
