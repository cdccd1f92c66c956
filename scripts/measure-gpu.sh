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
#   summary.txt                                the closing table
#   measure-keys.tar.gz                        all of the above but the .ncu-rep reports
#   measure-ncu-rep-N.tar.gz                   the .ncu-rep reports, ~15 MiB of input per archive
#
# Installs nothing from a network. If a Python package it needs is missing and
# wheels were carried in .whl/ beside the repo root, they are installed from
# there into a private folder.
#
# Budget on an H200 (estimates, not measurements: check them against the
# per-family "seconds" every key and summary records). Keys first, for all
# fifteen families: compile ~0.05 s per source (NVRTC, cached by CuPy on disk),
# gate ~0.5-1 s (6-7 candidates x 3 seeds x 1-3 small shapes), timing inputs
# 0.4-4 s on the host (make_inputs at timing size, then 0.5-1 GB to the GPU),
# timing ~1-2 s (0.2 s spin-up, warm-up, 5 blocks of ~10-20 ms per candidate
# with the L2 flush, the copy): about 2-7 s a family, 1-2 minutes in all.
# Then the slips: one ncu process per family (Python and CuPy start, inputs
# again, ~7 sections of replay per launch), guessed at 6-15 s each, 2-4
# minutes in all. MEASURE_BUDGET_S stops starting slips in time and says which
# were skipped; --no-ncu skips them all.
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
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
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
# Keys come first for every family, slips after (tests/measure/test_measure_gpu.py
# orders them so). MEASURE_BUDGET_S (default 240): no slip is started after
# that many seconds, each skipped one says so. MEASURE_TIMEOUT_S (default 330)
# interrupts pytest (SIGINT: it still writes its reports) so that the table and
# the archives below are always made.
BUDGET=${MEASURE_BUDGET_S:-240}
HARD=${MEASURE_TIMEOUT_S:-330}
T0=$(date +%s)
run_pass() {  # $1: log file; the rest: extra pytest args
    local log=$1
    shift
    timeout -s INT -k 30 "$HARD" \
    "$PY" -m pytest -m measure -p no:cacheprovider -v -W default \
        -o log_cli=true --log-cli-level=INFO -o junit_family=xunit1 \
        tests/measure/test_measure_gpu.py \
        --measure-out "$OUT" --measure-budget-s "$BUDGET" \
        "$@" 2>&1 | tee "$log"
    return "${PIPESTATUS[0]}"
}
run_pass "$OUT/measure.log" \
    --benchmark-json "$OUT/benchmark.json" \
    --benchmark-storage "file://$OUT/benchmarks" --benchmark-autosave \
    --junitxml "$OUT/junit.xml" "$@"
rc=$?

# A sticky CUDA error (say, an illegal address) kills the process's context;
# the families it left unmeasured are run once more in a fresh process.
rerun=$("$PY" - "$OUT" <<'PYEOF'
import json, sys
from pathlib import Path
names = [json.loads(p.read_text())["family"] for p in sorted((Path(sys.argv[1]) / "reports" / "measure").glob("*/*.json"))
         if json.loads(p.read_text()).get("reason", "").startswith("context: not measured")]
sys.stdout.write(",".join(names))
PYEOF
)
if [ -n "$rerun" ]; then
    left=$(( HARD - ($(date +%s) - T0) ))
    if [ "$left" -gt 60 ]; then
        echo "== the CUDA context was lost; measuring again in a new process: $rerun (${left} s left)"
        BUDGET=$(( BUDGET > (HARD - left) ? BUDGET - (HARD - left) : 0 ))
        HARD=$left
        run_pass "$OUT/measure-rerun.log" --measure-families "$rerun" \
            --benchmark-json "$OUT/benchmark-rerun.json" --junitxml "$OUT/junit-rerun.xml"
        rc2=$?
        [ "$rc" -eq 0 ] && rc=$rc2
    else
        echo "== the CUDA context was lost; NOT measured (only ${left} s left): $rerun"
    fi
fi

echo
echo "== SparkTrace measure: family, winner, ratio, kept, spread (max over candidates)"
"$PY" - "$OUT" <<'PYEOF' | tee "$OUT/summary.txt"
import json, sys
from pathlib import Path
from tabulate import tabulate
from plugins.measure.session import ERROR_PREFIXES, summary_rows
printed = False
for gpu_dir in sorted((Path(sys.argv[1]) / "reports" / "measure").glob("*")):
    summaries = [json.loads(p.read_text()) for p in sorted(gpu_dir.glob("*.json"))]
    if summaries:
        printed = True
        sys.stdout.write(f"gpu: {gpu_dir.name}\n")
        sys.stdout.write(tabulate(summary_rows(summaries), headers=["family", "winner", "ratio", "kept", "spread"], disable_numparse=True) + "\n")
        for s in summaries:
            if s.get("gate_problems") or s["reason"].startswith(ERROR_PREFIXES) or s.get("slip") != "captured":
                sys.stdout.write(f"  {s['family']}: {s['reason']} | gate: {s.get('gate_problems')} | slip: {s.get('slip')} {s.get('slip_reason', '')}\n")
if not printed:
    sys.stdout.write("no family was measured (see measure.log)\n")
PYEOF

# Archives small enough to carry back from a machine that limits the number and
# size of files: measure-keys.tar.gz (everything but the raw .ncu-rep reports)
# and measure-ncu-rep-N.tar.gz (the reports, about 15 MiB of input each).
# MEASURE_ARCHIVES_ONLY=1 then removes the loose files, keeping the archives,
# measure.log and summary.txt.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sparktrace-measure.XXXXXX")
(cd "$OUT" && find . -type f ! -name 'measure-*.tar.gz' ! -name '*.ncu-rep' | sort > "$tmp/keys.list") \
    && tar -czf "$tmp/measure-keys.tar.gz" -C "$OUT" -T "$tmp/keys.list"
(cd "$OUT" && find . -type f -name '*.ncu-rep' -printf '%s %p\n' | sort -k2) | awk -v dir="$tmp" '
    BEGIN { n = 0; size = 0 }
    { if (size > 0 && size + $1 > 15 * 1048576) { n++; size = 0 } size += $1; print $2 > (dir "/ncu-" n ".list") }'
rm -f "$OUT"/measure-keys.tar.gz "$OUT"/measure-ncu-rep-*.tar.gz "$OUT"/measure-results.tar.gz
mv "$tmp/measure-keys.tar.gz" "$OUT/" 2>/dev/null
for list in "$tmp"/ncu-*.list; do
    [ -e "$list" ] || continue
    n=$(basename "$list" .list); n=${n#ncu-}
    tar -czf "$OUT/measure-ncu-rep-$n.tar.gz" -C "$OUT" -T "$list"
done
rm -rf "$tmp"
echo "== archives:"; (cd "$OUT" && ls -l measure-*.tar.gz 2>/dev/null | awk '{print "   " $5 " bytes  " $NF}')
if [ "${MEASURE_ARCHIVES_ONLY:-0}" = 1 ]; then
    find "$OUT" -mindepth 1 -maxdepth 1 ! -name 'measure-*.tar.gz' ! -name 'measure.log' ! -name 'summary.txt' -exec rm -rf {} +
    echo "== MEASURE_ARCHIVES_ONLY=1: left only the archives, measure.log and summary.txt in $OUT"
fi
echo "== pytest exit status: $rc ($(( $(date +%s) - T0 )) s)"
exit "$rc"
