#!/usr/bin/env bash
# Where the suite's time goes: the tests of `make test` (or a subset) with the
# work report (NVRTC compiles, nvdisasm runs, emulator builds, reference calls,
# each done or served from .cache/sparktrace/) and the seconds per stage, plus
# pytest's 25 slowest phases.
#   scripts/work-report.sh [--cold] [pytest arguments]   e.g. --set classic tests/family
# --cold empties .cache/sparktrace and .cache/pycache first. SET (default all) and JOBS (default 2) as in the Makefile.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--cold" ]]; then
  rm -rf .cache/sparktrace .cache/pycache
  shift
fi
# bytecode under .cache/pycache, malloc on huge pages and idle workers stealing tests, as
# `make test` runs (Makefile: SUITE_ENV and XDIST; your GLIBC_TUNABLES come after, so they win)
GLIBC_TUNABLES="glibc.malloc.hugetlb=1${GLIBC_TUNABLES:+:$GLIBC_TUNABLES}" \
PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX="$PWD/.cache/pycache" exec .venv/bin/pytest -n "${JOBS:-2}" --dist worksteal --set "${SET:-all}" -p no:cacheprovider --work-report --durations=25 -q "$@"
