# smartvector-bench. Quick start on a fresh machine: `make reproduce` then `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install reproduce test test-fast clean-outputs

# torch is installed first, pinned to the CPU wheel this machine's pip finds, so that
# sentence-transformers never pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

## The main table: generate the default dataset, embed with MiniLM, evaluate every system, print the table.
reproduce: install
	$(VENV)/bin/smartvector-bench experiment=main

## The whole test suite (unit, end-to-end with the hashing embedder and with the real MiniLM model), on every
## core (pytest-xdist; TEST_WORKERS=0 runs it in this process), ending with its 15 slowest tests. Test files stay
## whole on one worker, so a module's fixtures are built once. Times: docs/operations.md, "Test time".
TEST_WORKERS ?= auto
PYTEST := $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile
test: install
	$(PYTEST) --durations=15

## The unit tests: no real model (importing it fails, naming the test), no slow end-to-end runs, no browser
## (markers in tests/conftest.py). Under 3 minutes on 2 cores.
test-fast: install
	$(PYTEST) -m "not model and not slow and not browser"

clean-outputs:
	rm -rf outputs multirun

.PHONY: results regress figures

## Rerun the default experiments and sweeps and store them, with provenance, under results/ (slow); then
## rewrite results/expected.json (values and the sha256 manifest of every committed result file).
results: install
	$(PY) -m smartvector_bench.tools.publish
	$(PY) -m smartvector_bench.tools.gate --write-expected

## Rerun what is affordable and compare with results/expected.json; non-zero exit on any miss.
regress: install
	$(PY) -m smartvector_bench.tools.gate

## Regenerate every paper figure from results/ alone.
figures: install
	MPLBACKEND=Agg $(PY) paper_figures/make_all.py

.PHONY: claims
## Rewrite the generated tables of README.md and docs/results.md from results/.
claims: install
	$(PY) paper_figures/claims.py --write-readme

.PHONY: reproduce-all reproduce-all-nobench
## From a clean clone to every published result, in order (the experiments, every sweep, make bench, the figures,
## make claims, the manifest), each step's wall time and peak RSS into results/timings.json (hours on 2 cores).
## STEPS=main,seeds or SKIP=bench pick steps or groups; JOBS=2 (the default) runs the experiments and sweeps two
## at a time (JOBS=1: one after the other); the plan: `$(PY) -m smartvector_bench.tools.reproduce --dry-run`.
## Times: docs/operations.md, "Time to reproduce".
STEPS ?=
SKIP  ?=
JOBS  ?= 2
REPRODUCE := $(PY) -m smartvector_bench.tools.reproduce --jobs $(JOBS) $(if $(STEPS),--steps $(STEPS)) $(if $(SKIP),--skip $(SKIP))
reproduce-all: install
	$(REPRODUCE)

## The same without make bench's steps (the headline "bench excluded" time).
reproduce-all-nobench: install
	$(REPRODUCE) --skip bench

.PHONY: bench bench-quick
## Performance at 10K to 1M vectors into results/perf/ (about 100 min on 2 cores: the filtered-ANN case alone
## takes 40-60, building FAISS HNSW at 1M three times), then its figures.
bench: install
	$(PY) -m smartvector_bench.tools.perf.cli bench_profile=full out_dir=results/perf
	MPLBACKEND=Agg $(PY) paper_figures/fig_perf.py
	MPLBACKEND=Agg $(PY) paper_figures/fig_filtered_ann.py
	$(PY) -m smartvector_bench.tools.gate --write-expected

## Every perf case at toy sizes in about two minutes, into a temp folder (a smoke test; not for reporting).
bench-quick: install
	$(PY) -m smartvector_bench.tools.perf.cli bench_profile=quick out_dir=$${TMPDIR:-/tmp}/svb-perf-quick

.PHONY: report
## One self-contained HTML page of results/ (runs, sweeps, claims, figures): results/report.html (not committed).
report: install
	$(VENV)/bin/smartvector-report results

.PHONY: browser report-screenshot
## Chromium from Debian for the browser test (tests/test_report_browser.py); a no-op when it is there. Playwright
## drives this binary: it never downloads a browser of its own.
CHROMIUM := /usr/bin/chromium
browser:
	@test -x $(CHROMIUM) || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -q --no-install-recommends chromium; }
	@$(CHROMIUM) --version 2>/dev/null

## Rerun the browser test and rewrite the README's screenshot, docs/report.png, from it.
report-screenshot: install browser
	SVB_README_SCREENSHOT=1 $(PY) -m pytest -q -m browser tests/test_report_browser.py
