# Two commands matter: `make book` (build the static site) and `make test` (everything CI runs).
# The virtualenv is created on first use; packages are reinstalled only when requirements.txt or
# pyproject.toml change (stamp file .venv/.installed).

PYTHON  ?= python3.11
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
VENDOR  := _build/.assets.stamp
# MiniGPT in the browser: its weights exported from the shipped checkpoint (never committed) and
# the page's scripts, published as <site>/minigpt-web/ (html_extra_path).
WEB     := _build/assets/minigpt-web/minigpt_weights.js
# Reproducible notebook runs: same hash seed everywhere; MINIGPT_DEVICE (cpu|cuda) passes through.
export PYTHONHASHSEED := 0

NOTEBOOKS = $(wildcard chapters/*.ipynb exercises/*.ipynb decoder_ring/*.ipynb)
# A cell's hang guard: the slowest cell takes about 30 s on 2 cores (CONTRIBUTING.md), so 600 s is a hang.
NBVAL_ARGS ?= --nbval-cell-timeout=600
NB ?=
# pytest-xdist workers for the unit, notebook and site tests: one per core (JOBS=1 runs them in one process).
# Each worker runs torch on one thread (tests/conftest.py), so two workers do not fight over two cores.
JOBS ?= auto
XDIST := -n $(JOBS)

.PHONY: help install book test test-thorough unit unit-portable nbval nbval-native site lint notebooks translations bench mutate mutate-sample mutate-rerun claims-report clean

help:
	@echo "make book        build the static site, English into _build/html, Spanish into _build/html/es (warnings are errors)"
	@echo "make test        lint, unit tests, nbval over every notebook (portable kernels), book build, browser check"
	@echo "make test-thorough  the unit tests with ten times the Hypothesis examples (HYPOTHESIS_PROFILE=thorough)"
	@echo "make nbval-native  nbval with this machine's own float kernels (make test runs the portable ones)"
	@echo "make notebooks   re-execute every notebook in place (NB=path/to.ipynb for one)"
	@echo "make translations  bring the Spanish catalogs and notebooks in step with the English pages"
	@echo "make bench       speed and memory benchmarks (scripts/bench/bench.py, scripts/bench/bench_browser.py, scripts/bench/grade_class_demo.py)"
	@echo "make mutate      mutation testing of the mechanism modules (MODULE=minigpt/runtime/eviction.py for one); mutation/report.md"
	@echo "make mutate-sample  a seeded sample of 400 mutants of the modules not run in full (N=, SEED=)"
	@echo "make mutate-rerun   the survivors again, with the tests written since (GROUPS=runtime ..., MODULES=path ...)"
	@echo "make claims-report  ledger entries older than their age, and statements about real systems not yet checked"
	@echo "make lint        ruff"
	@echo "make clean       remove _build (site, vendored assets, screenshots)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# llama.cpp for tests/test_llamacpp.py: a prebuilt wheel of llama-cpp-python (Linux x86-64 with AVX2, glibc
# >= 2.36: CI's python:3.11-bookworm), since building it from its sdist takes longer than CI's whole budget
# (README, "llama.cpp"). Without one here, the llama.cpp tests fail unless MINIGPT_SKIP_LLAMACPP=1.
LLAMACPP_WHEEL := $(wildcard wheels/llama_cpp_python-*.whl)

$(STAMP): requirements.txt pyproject.toml $(LLAMACPP_WHEEL) | $(BIN)/python
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -r requirements.txt
	$(BIN)/python -m pip install --no-deps -e .
	$(if $(LLAMACPP_WHEEL),$(BIN)/python -m pip install --no-deps $(LLAMACPP_WHEEL))
	touch $@

install: $(STAMP)

# Mutation testing (CONTRIBUTING, "Tests that can fail"): mutmut over the mechanism modules, or one module
# (MODULE=...), each in a scratch copy under _build/mutate/; results in mutation/results/, the report in
# mutation/report.md. Not part of `make test`.
mutate: $(STAMP)
	$(BIN)/python -m pip install -q -r requirements-mutate.txt
	$(BIN)/python scripts/maintenance/mutate.py $(if $(MODULE),$(MODULE),--all)
	$(BIN)/python scripts/maintenance/mutate.py --report

# A seeded uniform sample of the mutants of the modules not run in full (N=400, SEED=36 by default), with its 95 %
# interval in mutation/report.md (CONTRIBUTING, "Tests that can fail").
mutate-sample: $(STAMP)
	$(BIN)/python -m pip install -q -r requirements-mutate.txt
	$(BIN)/python scripts/maintenance/mutate_sample.py --n $(or $(N),400) --seed $(or $(SEED),36) $(if $(RESUME),--resume)
	$(BIN)/python scripts/maintenance/mutate.py --report

# The saved sample's survivors run again with the tests written since (each only where its function is unchanged,
# so it is the same mutant), without a new draw (CONTRIBUTING, "Tests that can fail"); MODULES=... for only
# the survivors of those modules' full runs.
mutate-rerun: $(STAMP)
	$(BIN)/python -m pip install -q -r requirements-mutate.txt
	$(BIN)/python scripts/maintenance/mutate_rerun.py $(GROUPS) $(foreach m,$(MODULES),--module $(m))
	$(BIN)/python scripts/maintenance/mutate.py --report

$(VENDOR): package.json package-lock.json scripts/book/vendor_assets.sh
	scripts/book/vendor_assets.sh

$(WEB): $(STAMP) minigpt/data/minigpt.safetensors minigpt/data/minigpt.json minigpt/book/web_export.py minigpt/book/cost_scripts.py $(wildcard minigpt/web/* minigpt/web/costs/* minigpt/web/engine/*)
	$(BIN)/python -m minigpt.book.web_export $(dir $@)

# Both editions, each a strict (-n -W) Jupyter Book build of the same sources (scripts/book/build_book.py).
book: $(STAMP) $(VENDOR) $(WEB)
	$(BIN)/python scripts/book/build_book.py

lint: $(STAMP)
	$(BIN)/ruff check .

# loadgroup: the tests marked xdist_group(name) run on one worker (the process-group tests, which share the
# loopback rendezvous ports; the users of a module-scoped fixture, tests/conftest.py). The slowest tests are
# listed at the end of each run (--durations): where the time goes (CONTRIBUTING.md, "The suite's budget").
unit: $(STAMP)
	$(BIN)/python -m pytest tests -m "not site" $(XDIST) --dist loadgroup --durations=15

# The same unit tests drawing ten times the Hypothesis examples (tests/profiles.py): before a release, or
# after changing a mechanism. Not part of `make test` (CONTRIBUTING.md, "The suite's budget").
test-thorough: $(STAMP)
	HYPOTHESIS_PROFILE=thorough $(MAKE) --no-print-directory unit

# Strict nbval over every notebook, once, under other float kernels than the machine's best: no AVX2/AVX-512
# kernels (ATEN_CPU_CAPABILITY=default), MKL's reproducible path (MKL_CBWR=COMPATIBLE), one thread. Outputs
# are committed from the machine's own kernels (`make notebooks`), so a committed output that changes here
# depends on the CPU and would fail on a reader's machine (CONTRIBUTING.md, "Outputs that depend on the
# CPU"). Notebooks run in parallel, each whole on one worker (--dist loadscope: its cells share a kernel).
# pytest exits with 5 when it collects nothing (no notebooks yet): that is not a failure.
PORTABLE := ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 MINIGPT_DEVICE=cpu
NBVAL_RUN = @if [ -z "$(NOTEBOOKS)" ]; then echo "nbval: no notebooks yet"; exit 0; fi; \
	$(1) $(BIN)/python -m pytest -p no:cacheprovider --nbval --nbval-current-env $(XDIST) --dist loadscope \
	    --nbval-sanitize-with tests/nbval_sanitize.cfg $(NBVAL_ARGS) $(NOTEBOOKS); \
	rc=$$?; if [ $$rc -eq 5 ]; then echo "nbval: no tests collected"; exit 0; fi; exit $$rc

nbval: $(STAMP)
	$(call NBVAL_RUN,$(PORTABLE))

# The same with this machine's own kernels and threads (not part of `make test`: the portable run above
# already compares the committed, machine-made outputs with another machine's arithmetic).
nbval-native: $(STAMP)
	$(call NBVAL_RUN,)

# The unit tests under the same kernels (not part of `make test`: run it when a float tolerance changes).
unit-portable: $(STAMP)
	$(PORTABLE) $(MAKE) --no-print-directory unit

site: $(STAMP)
	$(BIN)/python -m pytest tests -m site $(XDIST) --dist loadgroup --durations=10

test: lint unit nbval book site

notebooks: $(STAMP)
	$(BIN)/python scripts/book/execute_notebooks.py $(NB)
	$(BIN)/python scripts/book/translations.py notebooks
	$(BIN)/python scripts/book/colab_notebooks.py

# New and changed English messages into the catalogs (changed ones fuzzy), then the Colab notebooks of both editions
# (CONTRIBUTING.md, "Translations").
translations: $(STAMP)
	$(BIN)/python scripts/book/translations.py update
	$(BIN)/python scripts/book/translations.py notebooks
	$(BIN)/python scripts/book/colab_notebooks.py
	$(BIN)/python scripts/book/translations.py status

claims-report: $(STAMP)
	$(BIN)/python scripts/maintenance/claims_report.py $(if $(DAYS),--days $(DAYS))

bench: $(STAMP)
	$(BIN)/python scripts/bench/bench.py
	$(BIN)/python scripts/bench/bench_browser.py
	$(BIN)/python scripts/bench/grade_class_demo.py --jobs 2

clean:
	rm -rf _build
