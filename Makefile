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

.PHONY: setup chromium bubblewrap hosting-runtimes compose-check-tool test test-fast lint demo demo-runtimes proto bench

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

# $(call apt_install,COMMAND,PACKAGE,WHAT NEEDS IT): install Debian's PACKAGE when COMMAND is
# missing. Where apt-get cannot (not root, not Debian) that is one line and the tests that need
# it skip, each group of them with one line in pytest's summary (tests/needs.py); with
# TIENLEN_REQUIRE_SERVERS set (CI) it is an error, apt-get's output shown.
define apt_install
	@command -v $(1) >/dev/null 2>&1 || { \
	  echo "installing Debian's $(2) for $(3)"; \
	  log=$$( { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2); } 2>&1 ) || \
	  if [ -n "$$TIENLEN_REQUIRE_SERVERS" ]; then \
	    echo "$$log"; echo "could not install $(2), and TIENLEN_REQUIRE_SERVERS is set"; exit 1; \
	  else echo "could not install Debian's $(2) (apt-get needs root on Debian): $(3) will be skipped"; fi; }
endef

# Browser tests drive Debian's chromium (Playwright never downloads a browser here), or the
# one TIENLEN_CHROMIUM names (tests/needs.py).
chromium:
	$(call apt_install,$${TIENLEN_CHROMIUM:-chromium},chromium,the browser tests)

# Hosted bots run in Debian's bubblewrap (docs/hosting.md); the sandbox tests use the real one.
bubblewrap:
	$(call apt_install,bwrap,bubblewrap,the hosted-bot sandbox tests)

# The fixed runtimes hosted bots run on (docs/hosting.md), built once into var/ (a few
# minutes the first time: the SDK with its compiled engine, and npm ci); the sandbox tests
# use them. Without a package registry it cannot build: their tests are skipped then, and
# with TIENLEN_REQUIRE_SERVERS set (CI) that is an error here.
hosting-runtimes: setup
	@$(BIN)/python -m tournaments.hosting.runtimes || \
	  if [ -n "$$TIENLEN_REQUIRE_SERVERS" ]; then exit 1; \
	  else echo "could not build the hosted-bot runtimes: their tests will be skipped"; fi

# No Docker engine here: Debian's docker-compose (v1) still validates docker/compose.yml.
compose-check-tool:
	$(call apt_install,docker-compose,docker-compose,the compose file check)

# ruff everywhere; mypy --strict on the engine, the SDK and the referee (pyproject's
# [tool.mypy]); the import layers (pyproject's [tool.importlinter], platform/ on the path).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	PYTHONPATH=.:platform $(BIN)/lint-imports

# The whole test suite (README: `make test`) on the compiled engine, then the engine's tests
# again on its pure-Python source (the fallback when no C compiler is at hand). The 30
# slowest tests are listed at the end, so a run that took longer says where the time went.
test: setup chromium bubblewrap hosting-runtimes compose-check-tool lint
	TIENLEN_ENGINE=mypyc $(BIN)/pytest --durations=30 $(PYTEST_ARGS)
	TIENLEN_ENGINE=python $(BIN)/pytest tests/engine -q

# A part in minutes for a change to the engine, the SDK or the referee (README, "Tests"):
# their tests but the slow ones and the two that install (the SDK's own virtual environment,
# the JavaScript bot's npm ci); no lint, no servers, no browser. PYTEST_ARGS adds options.
FAST_TESTS := tests/engine tests/sdk tests/referee -m "not slow and not browser" \
  --ignore=tests/sdk/test_sdk_install.py --ignore=tests/sdk/test_javascript_example.py
test-fast: setup
	TIENLEN_ENGINE=mypyc $(BIN)/pytest $(FAST_TESTS) $(PYTEST_ARGS)

# The main job (README: `make demo`): a real round robin between real bot processes, one
# of them hosted by the platform (submitted as an author would, run in the sandbox).
# Without DATABASE_URL it runs on its own SQLite database in var/demo/, started afresh each
# run (the last run's is kept as db.sqlite3.previous), so runs never share ratings. The
# hosted bot needs the runtimes: built first where the sandbox can run (bwrap, root; once,
# about a minute), else the demo says why and runs that bot as a process.
DEMO_VAR ?= $(CURDIR)/var/demo
demo-runtimes: setup
	@if command -v bwrap >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  $(BIN)/python -m tournaments.hosting.runtimes --build python3.11 || \
	  echo "could not build the hosted-bot runtime: the demo runs its bots as processes"; fi
demo: setup demo-runtimes
	TIENLEN_VAR_DIR=$${TIENLEN_VAR_DIR:-$(DEMO_VAR)} $(BIN)/python manage.py run_demo $(if $(DATABASE_URL),,--fresh) $(DEMO_ARGS)

# Regenerate the gRPC/protobuf Python code from proto/ (checked in; a test diffs it).
proto: setup
	$(BIN)/python -m referee_service.protogen

# Every benchmark, one after another (BENCH_ARGS=--quick for short runs, --only NAME,...).
bench: setup
	$(BIN)/python benchmarks/run_all.py $(BENCH_ARGS)
