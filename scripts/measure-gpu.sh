#!/usr/bin/env bash
# The whole measure pass on a fresh GPU machine, offline:
#   scripts/measure-gpu.sh OUTDIR [extra pytest args, e.g. --measure-families a,b]
#
# Writes, under OUTDIR:
#   families/<name>/measurements/<gpu>.json   the answer key per family (copy into the repo to commit)
#   slips/<gpu>/<family>.{ncu-rep,csv,json}    Nsight Compute's report of the starting plan
#   reports/measure/<gpu>/<family>.json        one summary line per family (the closing table)
#   benchmark.json, benchmarks/                pytest-benchmark's JSON and autosave (block samples replayed)
#   measure.log, junit.xml                     the full log and pytest's per-test results
#   measure-results.tar.gz, measure-keys.tar.gz all of the above; the second without the .ncu-rep files
#
# Installs nothing from a network. If a Python package it needs is missing and
# wheels were carried in .whl/ beside the repo root, they are installed from
# there into a private folder.
#
# Budget on an H200 (estimates to check against the log's per-family seconds,
# which every key records): gate ~1-3 s (6 candidates x 3 seeds x 1-3 small
# shapes, host references included), timing ~2-5 s (warm-up, 5 blocks of
# ~10 ms per candidate, L2 flushes, the copy), ncu ~8-15 s (process start,
# CuPy import, compile, ~40 replay passes of the start). About 15-20 s per
# family, 4-5 minutes for fifteen. Slow families are cut by the per-family ncu
# timeout (plugins/capture.py); --no-ncu skips the slips.
set -u -o pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 OUTDIR [extra pytest args]" >&2
    exit 2
fi
OUT=$1
shift
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}

echo "== SparkTrace measure pass: $(date -u +%Y-%m-%dT%H:%M:%SZ), repo $REPO, out $OUT"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader || echo "nvidia-smi: not found"

missing=$("$PY" - <<'PYEOF'
import importlib.util
need = ["cupy", "numpy", "pytest", "pytest_benchmark", "xdist", "tabulate", "httpx", "pynvml"]
print(" ".join(n for n in need if importlib.util.find_spec(n) is None))
PYEOF
)
if [ -n "$missing" ]; then
    echo "== missing Python packages: $missing"
    WHL=""
    for d in "$REPO/.whl" "$REPO/../.whl"; do
        if ls "$d"/*.whl >/dev/null 2>&1; then WHL=$d; break; fi
    done
    if [ -n "$WHL" ]; then
        SITE=${TMPDIR:-/tmp}/sparktrace-site
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHL"/*.whl \
            && export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" \
            && echo "== installed carried wheels into $SITE"
    else
        echo "== no .whl/ folder carried (looked in $REPO/.whl and $REPO/../.whl); going on (a missing pynvml only disables throttle detection)"
    fi
fi

NCU=$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | sort -V | tail -1 || true)
echo "== ncu: ${NCU:-not found (slips will be skipped with the reason)}"

# -W default: a stray library warning is reported, not turned into a failed
# family, on a run that gets one shot; the pass's own checks still fail.
# Only the GPU module: the CPU tests of the protocol run in CI, and their
# deliberate failures would only add noise to this log.
# MEASURE_TIMEOUT_S (default 480) interrupts pytest (SIGINT: it still writes its
# reports) so that the table and the archives below are always made.
timeout -s INT -k 30 "${MEASURE_TIMEOUT_S:-480}" \
"$PY" -m pytest -m measure -p no:cacheprovider -v -W default \
    -o log_cli=true --log-cli-level=INFO -o junit_family=xunit1 \
    tests/test_measure_gpu.py \
    --measure-out "$OUT" \
    --benchmark-json "$OUT/benchmark.json" \
    --benchmark-storage "file://$OUT/benchmarks" --benchmark-autosave \
    --junitxml "$OUT/junit.xml" \
    "$@" 2>&1 | tee "$OUT/measure.log"
rc=${PIPESTATUS[0]}

echo
echo "== SparkTrace measure: family, winner, ratio, kept, spread (max over candidates)"
"$PY" - "$OUT" <<'PYEOF'
import json, sys
from pathlib import Path
from tabulate import tabulate
from plugins.measure import summary_rows
printed = False
for gpu_dir in sorted((Path(sys.argv[1]) / "reports" / "measure").glob("*")):
    summaries = [json.loads(p.read_text()) for p in sorted(gpu_dir.glob("*.json"))]
    if summaries:
        printed = True
        sys.stdout.write(f"gpu: {gpu_dir.name}\n")
        sys.stdout.write(tabulate(summary_rows(summaries), headers=["family", "winner", "ratio", "kept", "spread"], disable_numparse=True) + "\n")
        for s in summaries:
            if s.get("gate_problems") or s["reason"].split(":")[0] in ("gate", "timing", "ranking", "slip", "key") or s.get("slip") == "failed":
                sys.stdout.write(f"  {s['family']}: {s['reason']} | gate: {s.get('gate_problems')} | slip: {s.get('slip')} {s.get('slip_reason', '')}\n")
if not printed:
    sys.stdout.write("no family was measured (see measure.log)\n")
PYEOF

# Two archives: everything, and everything but the raw .ncu-rep reports (small
# enough to carry back from a machine that limits file sizes).
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sparktrace-measure.XXXXXX")
tar -czf "$tmp/all.tar.gz" -C "$OUT" --exclude='./measure-*.tar.gz' . \
    && tar -czf "$tmp/keys.tar.gz" -C "$OUT" --exclude='./measure-*.tar.gz' --exclude='*.ncu-rep' . \
    && mv "$tmp/all.tar.gz" "$OUT/measure-results.tar.gz" && mv "$tmp/keys.tar.gz" "$OUT/measure-keys.tar.gz" \
    && echo "== archives: $(du -h "$OUT/measure-results.tar.gz" | cut -f1) $OUT/measure-results.tar.gz (all), $(du -h "$OUT/measure-keys.tar.gz" | cut -f1) $OUT/measure-keys.tar.gz (no .ncu-rep)"
rmdir "$tmp" 2>/dev/null || true
echo "== pytest exit status: $rc"
exit "$rc"
