#!/usr/bin/env bash
# Opt-in: the GPU gate (tests/gate/test_gate_gpu.py) under compute-sanitizer's memcheck,
# the complete out-of-bounds check: every global and shared access the GPU binary makes.
# The CPU emulator's guard pages see only the accesses its host binary makes, with the
# limits listed in families/README.md.
#   scripts/gate-memcheck.sh [pytest args, e.g. --set all, -k launch_chain]
# Starts and rewrites only: a deliberately wrong variant may go out of bounds on purpose.
# Exit: 0 clean; 86 memcheck reported an error (its report names the kernel, block and
# thread; pytest -v above it names the candidate); 5 skipped, with the reason (no GPU,
# no compute-sanitizer); anything else is pytest's status.
# Not yet run on a GPU: the first run should record its time in docs/gpu-run.md.
set -u -o pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
PY=${PYTHON:-python3}
SAN=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gate-memcheck skipped: no CUDA device (nvidia-smi -L fails)" >&2
    exit 5
fi
if [ ! -x "$SAN" ]; then
    echo "gate-memcheck skipped: compute-sanitizer not found on PATH or in \${CUDA_HOME:-/usr/local/cuda}/bin" >&2
    exit 5
fi
SPARKTRACE_GATE_MEMCHECK=1 exec "$SAN" --tool memcheck --error-exitcode 86 --print-limit 20 \
    "$PY" -m pytest -v -p no:cacheprovider -p no:xdist -m gpu tests/gate/test_gate_gpu.py "$@"
