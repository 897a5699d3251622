# Funnybone — `make run` starts the platform, `make test` runs the whole suite.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=
# On a laptop judges may call loopback (a local llama.cpp or Ollama); a shared server leaves
# FUNNYBONE_OUTBOUND_ALLOW_NETWORKS unset (see docs/judging.md). Set it empty to try the strict rule.
LOCAL_OUTBOUND := FUNNYBONE_OUTBOUND_ALLOW_NETWORKS="$${FUNNYBONE_OUTBOUND_ALLOW_NETWORKS-127.0.0.0/8,::1/128}"

# Find a Python >= 3.12 (Django 6 needs it): PYTHON=..., then the usual names, then pyenv.
PYTHON ?= $(shell for p in python3.13 python3.12 python3 $$HOME/.pyenv/versions/3.13*/bin/python3 $$HOME/.pyenv/versions/3.12*/bin/python3 /usr/local/bin/python3.1[2-9] /usr/bin/python3.1[2-9]; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1 && { command -v $$p; break; }; done)

.PHONY: help run test lint format messages venv deps dev-deps llm-deps browser proxy r axe migrate demo worker local-judge clean

help:
	@echo "make run   - set up and start the platform (web + Celery worker) on http://$(HOST):$(PORT)"
	@echo "make local-judge - serve the bundled small model (llama.cpp, SmolLM2-135M) for the demo studies' judge"
	@echo "make test  - set up and run the whole test suite"
	@echo "make lint  - ruff lint and format check"

$(PY):
	@if [ -z "$(PYTHON)" ]; then \
		echo "error: Funnybone needs Python 3.12 or newer (Django 6). None was found on PATH or in ~/.pyenv."; \
		echo "       Install one, or name it: make PYTHON=/path/to/python3.12 ..."; exit 1; fi
	@echo "Using $(PYTHON) ($$($(PYTHON) --version))"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

venv: $(PY)

$(VENV)/.deps: requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

$(VENV)/.dev-deps: requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $(VENV)/.deps $@

# llama.cpp's OpenAI-compatible server and the SmolLM2-135M model for the judge tests.
# The first build compiles llama.cpp (several minutes); pip's wheel cache makes later ones fast.
$(VENV)/.llm-deps: requirements-llm.txt | $(PY)
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" CMAKE_BUILD_PARALLEL_LEVEL=2 \
		$(PY) -m pip install --quiet -r requirements-llm.txt
	@touch $@

deps: $(VENV)/.deps
dev-deps: $(VENV)/.dev-deps
llm-deps: $(VENV)/.llm-deps

# The browser tests drive Debian's Chromium (Playwright cannot download its own here);
# a CJK font lets screenshots of Chinese and Japanese items show real glyphs.
browser:
	@missing=""; \
	[ -x /usr/bin/chromium ] || [ -n "$$FUNNYBONE_CHROMIUM" ] || missing="chromium"; \
	fc-list 2>/dev/null | grep -qiE 'wqy|noto sans cjk' || missing="$$missing fonts-wqy-zenhei"; \
	if [ -n "$$missing" ]; then \
		echo "Installing Debian packages for the browser tests:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# axe-core for the accessibility checks is vendored in tests/browser/axe/ (MPL-2.0); this fetches the
# pinned version again from the npm registry and checks it, for an audit or an upgrade.
AXE_VERSION ?= 4.14.1
AXE_SHA256 ?= e6b0ce02b84d892e2e33e403485e7f3d6c29e2be6df65daf44d89ba564139745
axe:
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	(cd "$$tmp" && npm pack --silent axe-core@$(AXE_VERSION) >/dev/null) && \
	echo "$(AXE_SHA256)  $$tmp/axe-core-$(AXE_VERSION).tgz" | sha256sum --check --quiet && \
	tar -xzf "$$tmp/axe-core-$(AXE_VERSION).tgz" -C "$$tmp" && \
	cp "$$tmp/package/axe.min.js" "$$tmp/package/LICENSE" "$$tmp/package/LICENSE-3RD-PARTY.txt" tests/browser/axe/ && \
	echo "tests/browser/axe/: axe-core $(AXE_VERSION)"

# The production-layout test (tests/live/test_production_layout.py) puts Debian's nginx in front
# of gunicorn, as docs/production.md does; it runs as a plain process on a loopback port.
proxy:
	@if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then \
		echo "Installing nginx-light for the production-layout test"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nginx-light >/dev/null; \
	fi

# The raw CSV export is checked from R as an R user reads it (tests/ratings/test_export_analysis.py).
r:
	@if ! command -v Rscript >/dev/null 2>&1; then \
		echo "Installing Debian's R (r-base-core) for the export tests"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends r-base-core >/dev/null; \
	fi

migrate: deps
	$(PY) manage.py migrate --noinput

demo: migrate
	$(LOCAL_OUTBOUND) $(PY) manage.py load_demo

run: demo
	@echo "Starting the Celery worker and the web server on http://$(HOST):$(PORT) (Ctrl-C stops both)"
	@export $(LOCAL_OUTBOUND); \
		( trap 'kill $$CHILD 2>/dev/null; wait; exit' INT TERM; \
		  while :; do \
			$(BIN)/celery -A funnybone worker --loglevel=INFO --concurrency=2 & CHILD=$$!; wait $$CHILD; \
			echo "The Celery worker exited ($$?); starting it again in 2 s"; sleep 2; \
		  done ) & WORKER=$$!; \
		DEBUG=$${DEBUG:-1} $(PY) manage.py runserver $(HOST):$(PORT) & WEB=$$!; \
		trap 'kill $$WORKER $$WEB 2>/dev/null; wait' EXIT INT TERM; \
		wait $$WEB

worker: deps
	$(BIN)/celery -A funnybone worker --loglevel=INFO

# Beside `make run`, in a second terminal: the bundled SmolLM2-135M on llama.cpp's server at
# 127.0.0.1:$(LLM_PORT), and the demo studies' judge "SmolLM2-135M (local)" pointed at it (docs/judging.md).
LLM_PORT ?= 8080
local-judge: demo llm-deps
	$(LOCAL_OUTBOUND) $(PY) manage.py local_judge --port $(LLM_PORT)

test: dev-deps llm-deps browser proxy r
	@start=$$(date +%s); status=0; $(BIN)/pytest $(PYTEST_ARGS) || status=$$?; \
		echo "Suite wall time: $$(( $$(date +%s) - start )) s (pytest only; exit $$status)"; exit $$status

lint: dev-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The annotator pages' translations (locale/). The compiled .mo files are committed, so `make run`
# and `make test` need no gettext; after changing a translatable text, run this (it needs GNU gettext,
# Debian package gettext) and translate the new entries of the .po files; a test fails until then.
messages: deps
	@command -v msgfmt >/dev/null || { echo "make messages needs GNU gettext (apt-get install gettext)"; exit 1; }
	$(PY) manage.py makemessages -l zh_Hans -l ja --add-location=file --no-obsolete -i "tests/*" -i "bench/*" -i "docs/*"
	$(PY) manage.py compilemessages -l zh_Hans -l ja

format: dev-deps
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) var .pytest_cache
