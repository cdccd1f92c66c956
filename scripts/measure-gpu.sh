#!/usr/bin/env bash
# The whole measure pass on a fresh GPU machine, offline, as one command:
#   scripts/measure-gpu.sh [options] OUTDIR [extra pytest args, e.g. --set all, --measure-families a,b]
# options (before OUTDIR):
#   --slips-only            take only the slips an earlier pass skipped (no key is measured)
#   --no-repeat             no repeat of the timing after the slips
#   --keep-loose            keep the loose files in OUTDIR beside the archives (local use only:
#                           a lent machine returns nothing more than 2 folders down)
#   --allow-unknown-commit  measure although no commit can be named (recorded in every key)
#
# Order: preflight (seconds) -> keys for every selected family -> slips in priority
# order while they fit -> the repeat while it fits -> summary and archives.
# OUTDIR must lie outside the repository (it is cleaned down to the archives).
# What comes back in OUTDIR, everything at its top level:
#   measure.log, summary.txt                the log and the closing table (exit status and reasons at its end)
#   measure-keys.tar.gz [-2, ...]           keys, repeats, slip CSV/JSON, summaries, preflight, junit, benchmark JSON
#   measure-ncu-rep.tar.gz [-2, ...]        the raw .ncu-rep reports, kept-family slips first
# Unpack them over the repository with `tar -xzf F --keep-old-files` (docs/gpu-run.md).
#
# Times (MEASURE_TIMEOUT_S, default 420, is the hard end of the whole script;
# see docs/gpu-run.md for the per-family estimates behind it, for 15 and 30
# families). Exit statuses: python -m plugins.measure.gpu_run --help, or docs/gpu-run.md.
set -u -o pipefail

SLIPS_ONLY=0 REPEAT=1 KEEP_LOOSE=0 ALLOW_UNKNOWN=0
while [ $# -gt 0 ]; do
    case $1 in
        --slips-only) SLIPS_ONLY=1 ;;
        --no-repeat) REPEAT=0 ;;
        --keep-loose) KEEP_LOOSE=1 ;;
        --allow-unknown-commit) ALLOW_UNKNOWN=1 ;;
        --*) echo "unknown option $1 (options come before OUTDIR; pytest arguments after it)" >&2; exit 2 ;;
        *) break ;;
    esac
    shift
done
if [ $# -lt 1 ]; then
    echo "usage: $0 [--slips-only] [--no-repeat] [--keep-loose] [--allow-unknown-commit] OUTDIR [extra pytest args]" >&2
    exit 2
fi
[ "${MEASURE_ARCHIVES_ONLY:-1}" = 0 ] && KEEP_LOOSE=1
T0=$(date +%s)
HARD=${MEASURE_TIMEOUT_S:-420}
FINISH_S=${MEASURE_FINISH_S:-20}   # estimate: summary, tar of <= 64 MiB, cleaning
EXIT_S=10                          # estimate: pytest's own exit (junit, benchmark JSON) after the last slot
OUT=$1
shift
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
PY=${PYTHON:-python3}
STATE_DIR=${MEASURE_STATE_DIR:-${TMPDIR:-/tmp}/sparktrace-measure-state}

"$PY" -m plugins.measure.gpu_run check-out "$OUT" || exit 2
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
LOG=$OUT/measure.log
say() { echo "$*" | tee -a "$LOG"; }

say "== SparkTrace measure pass: $(date -u +%Y-%m-%dT%H:%M:%SZ), repo $REPO, out $OUT, hard stop ${HARD} s$( [ $SLIPS_ONLY = 1 ] && echo ', slips only')"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader 2>&1 | tee -a "$LOG"
# CuPy per driver: cupy-cuda13x needs a CUDA 13 driver (580 or newer); a CUDA 12 driver needs cupy-cuda12x.
DRIVER=$(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
if [ -n "$DRIVER" ] && [ "${DRIVER%%.*}" -lt 580 ] 2>/dev/null; then
    say "== driver $DRIVER is a CUDA 12 driver (< 580): cupy-cuda13x (requirements-gpu.txt) cannot run here; install cupy-cuda12x==14.2.0 instead (docs/gpu-run.md)"
fi

missing=$("$PY" -m plugins.measure.gpu_run packages)  # plugins.measure.gpu_run.PACKAGES
if [ -n "$missing" ]; then
    say "== missing Python packages: $missing"
    for d in "$REPO/.whl" "$REPO/../.whl"; do
        if ls "$d"/*.whl >/dev/null 2>&1; then
            SITE=${TMPDIR:-/tmp}/sparktrace-site
            "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$d"/*.whl \
                && export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" && say "== installed carried wheels from $d into $SITE"
            break
        fi
    done
fi

# Preflight: the commit, OUT, CuPy + the device + a one-line kernel, ncu --version and its counters.
NO_NCU=0
for a in "$@"; do [ "$a" = --no-ncu ] && NO_NCU=1; done
PRE_ARGS=()
[ $NO_NCU = 1 ] && PRE_ARGS+=(--no-ncu)
[ $ALLOW_UNKNOWN = 1 ] && PRE_ARGS+=(--allow-unknown-commit)
"$PY" -m plugins.measure.gpu_run preflight "$OUT" "${PRE_ARGS[@]}" 2>&1 | tee -a "$LOG"
pre=${PIPESTATUS[0]}
case $pre in
    0|4) ;;
    *) say "== preflight failed (exit $pre): nothing was measured ($(( $(date +%s) - T0 )) s)"; exit "$pre" ;;
esac
PASS_ARGS=()
if [ $pre = 4 ]; then
    reason=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["ncu"]["unusable"])' "$OUT/preflight.json")
    PASS_ARGS+=(--measure-ncu-unusable "$reason")
    say "== the profiler is unusable here: keys only, every slip is skipped ($reason)"
    [ $SLIPS_ONLY = 1 ] && { "$PY" -m plugins.measure.gpu_run finish "$OUT" --pytest-rc 0 --slips-only; exit 4; }
elif [ -f "$OUT/preflight.json" ] && grep -q '"metrics": "required"' "$OUT/preflight.json"; then
    PASS_ARGS+=(--measure-ncu-metrics required)
fi
[ $ALLOW_UNKNOWN = 1 ] && PASS_ARGS+=(--measure-allow-unknown-commit)
if [ $SLIPS_ONLY = 1 ]; then
    PASS_ARGS+=(--measure-slips-only)
    if [ -d "$STATE_DIR/reports/measure" ]; then
        PASS_ARGS+=(--measure-previous "$STATE_DIR")
        say "== slips-only: skipping the slips the earlier pass captured (its summaries: $STATE_DIR)"
    else
        say "== slips-only: no earlier pass on this machine ($STATE_DIR); taking every selected slip the repository lacks"
    fi
else
    [ $REPEAT = 1 ] && PASS_ARGS+=(--measure-repeat)
fi

# pytest ends by HARD - FINISH_S (SIGINT: it still writes its reports); slips and the repeat
# must end EXIT_S before that. -W default: a stray library warning is reported, not a failure.
run_pass() {  # $1: log file; the rest: extra pytest args
    local log=$1 now left budget
    shift
    now=$(date +%s)
    left=$(( HARD - FINISH_S - (now - T0) ))
    budget=$(( left - EXIT_S ))
    [ "$budget" -lt 0 ] && budget=0
    [ -n "${MEASURE_BUDGET_S:-}" ] && [ "${MEASURE_BUDGET_S%.*}" -lt "$budget" ] && budget=${MEASURE_BUDGET_S%.*}
    if [ "$left" -le 0 ]; then say "== no time left for pytest"; return 2; fi
    say "== pytest: ${left} s until its hard stop, slips and repeat within ${budget} s"
    timeout -s INT -k 20 "$left" \
    "$PY" -m pytest -m measure -p no:cacheprovider -v -W default \
        -o log_cli=true --log-cli-level=INFO -o junit_family=xunit1 \
        tests/measure/test_measure_gpu.py \
        --measure-out "$OUT" --measure-budget-s "$budget" "${PASS_ARGS[@]}" \
        "$@" 2>&1 | tee -a "$log"
    return "${PIPESTATUS[0]}"
}
if [ $SLIPS_ONLY = 1 ]; then
    run_pass "$LOG" --junitxml "$OUT/junit-slips.xml" "$@"
else
    run_pass "$LOG" --benchmark-json "$OUT/benchmark.json" \
        --benchmark-storage "file://$OUT/benchmarks" --benchmark-autosave --junitxml "$OUT/junit.xml" "$@"
fi
rc=$?

# A sticky CUDA error (say, an illegal address) kills the process's context, and a hung
# family ends its process with status 10 (plugins.measure.gpu_run HUNG): the families left
# unmeasured are run again in a fresh process, with the user's own arguments (--set all,
# --no-ncu, --measure-blocks, ...), up to MEASURE_RERUNS times.
RERUNS=${MEASURE_RERUNS:-3}
n=0
while [ $SLIPS_ONLY = 0 ] && [ "$n" -lt "$RERUNS" ]; do
    rerun=$("$PY" -m plugins.measure.gpu_run rerun "$OUT")
    [ -n "$rerun" ] || break
    n=$(( n + 1 ))
    say "== the CUDA context was lost or a family hung; measuring again in a new process ($n of $RERUNS): $rerun"
    run_pass "$OUT/measure-rerun-$n.log" "$@" --measure-families "$rerun" --measure-rerun --junitxml "$OUT/junit-rerun-$n.xml"
    rc2=$?
    [ "$rc" -eq 0 ] && rc=$rc2  # a hang stays 10: finish reads it from the summaries too
done

FIN_ARGS=(--pytest-rc "$rc" --state-dir "$STATE_DIR" --pass-args "$("$PY" -c 'import shlex, sys; print(shlex.join(sys.argv[1:]))' "$@")")
[ $KEEP_LOOSE = 1 ] && FIN_ARGS+=(--keep-loose)
[ $SLIPS_ONLY = 1 ] && FIN_ARGS+=(--slips-only)
[ $SLIPS_ONLY = 0 ] && rm -rf "$STATE_DIR"
"$PY" -m plugins.measure.gpu_run finish "$OUT" "${FIN_ARGS[@]}"
status=$?
echo "== done in $(( $(date +%s) - T0 )) s, exit status $status"
exit "$status"
