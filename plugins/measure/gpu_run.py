"""The measure pass as one command on a lent GPU machine: preflight, then (after pytest) finish.

Why Python and not the shell script: every decision the script makes (is
there a device, can ncu read counters, is the output folder safe to clean,
what goes into which archive so it all comes back, which exit status) is a
plain function here that CPU tests feed with fakes. scripts/measure-gpu.sh
only sequences these steps and pytest under a hard timeout.

    python -m plugins.measure.gpu_run check-out OUT
    python -m plugins.measure.gpu_run packages          # the importable packages the pass needs but lacks
    python -m plugins.measure.gpu_run preflight OUT [--no-ncu] [--allow-unknown-commit]
    python -m plugins.measure.gpu_run launch            # the one-line kernel, for ncu to profile
    python -m plugins.measure.gpu_run finish OUT --pytest-rc N [--keep-loose] [--state-dir DIR] [--slips-only] [--pass-args ARGS]
    python -m plugins.measure.gpu_run rerun OUT         # families a lost context or a hang left unmeasured

Exit statuses (the script's own; docs/gpu-run.md):
"""
from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from plugins.atomicio import write_json_atomic, write_text_atomic
from plugins.measure.archive import (Limits, archive_plan, cap_log, clean_loose, layout_problems, out_dir_problem,
                                      write_archives)

log = logging.getLogger("sparktrace.gpu_run")

OK = 0
TESTS_FAILED = 1  # pytest reported failed tests (a gate problem, a crash, a failed slip): see junit.xml
REFUSED = 2  # usage: bad arguments, an output folder inside the repository, no commit to name
NO_DEVICE = 3  # the preflight found no usable CUDA device: nothing was measured
NO_PROFILER = 4  # keys measured, but ncu cannot profile here: every slip was skipped
NO_KEY = 5  # the pass ran but wrote no measurement file (or, slips-only, captured no slip)
SLIPS_LEFT = 6  # keys done, some slips skipped for time: run the slips-only command
LAYOUT = 7  # what is left in OUT breaks the return limits: something would not come back
INTERRUPTED = 8  # the hard timeout stopped pytest (or pytest was interrupted)
PYTEST_ERROR = 9  # pytest itself failed (internal error, usage error, nothing collected)
HUNG = 10  # a family hung (recorded as hung); the pytest process exited with this status at once
STATUS_TEXT = {
    OK: "every selected family measured, every slip captured or deliberately skipped",
    TESTS_FAILED: "tests failed (gate problems, crashes or failed slips): see summary.txt and junit.xml",
    REFUSED: "refused before measuring (see the message)",
    NO_DEVICE: "no usable CUDA device: nothing measured",
    NO_PROFILER: "keys measured; the profiler is unusable here, so no slip was taken",
    NO_KEY: "no measurement file was written",
    SLIPS_LEFT: "keys measured; some slips were skipped for time: run scripts/measure-gpu.sh --slips-only",
    LAYOUT: "the output breaks the return limits, or a slip's report was left out of the archives: something would not come back",
    INTERRUPTED: "the hard timeout interrupted pytest: see summary.txt for what was done",
    PYTEST_ERROR: "pytest failed to run (internal or usage error)",
    HUNG: "a family hung (recorded as hung in summary.txt); the families after it were measured in a new process",
}
__doc__ += "".join(f"    {k}  {v}\n" for k, v in STATUS_TEXT.items())
# Precedence when several apply: the first in this list is the exit status; all are printed.
PRECEDENCE = (NO_KEY, LAYOUT, INTERRUPTED, HUNG, TESTS_FAILED, PYTEST_ERROR, NO_PROFILER, SLIPS_LEFT)

PREFLIGHT_KERNEL = "sparktrace_preflight"
PREFLIGHT_SOURCE = f'extern "C" __global__ void {PREFLIGHT_KERNEL}(int* p) {{ p[0] = 42; }}\n'
NCU_VERSION_TIMEOUT_S = 30
NCU_COUNTER_TIMEOUT_S = 60
NCU_SECTIONS_TIMEOUT_S = 30
# What the pass imports on the GPU machine (the script installs carried wheels for the missing):
# ml_dtypes carries the bfloat16 and e4m3 inputs, pynvml the clocks, cuda.bindings (with the
# nvidia-cuda-nvrtc wheel) compiles each candidate's cubin exactly as CI does (plugins.family.compile).
PACKAGES = ("cupy", "numpy", "ml_dtypes", "pytest", "pytest_benchmark", "tabulate", "pynvml", "cuda.bindings")


def missing_packages(find: Callable[[str], Any] | None = None) -> list[str]:
    """The PACKAGES that cannot be imported here (a broken parent package counts as missing)."""
    import importlib.util

    look = find or importlib.util.find_spec
    out = []
    for name in PACKAGES:
        try:
            found = look(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(name)
    return out


# --------------------------------------------------------------------------- preflight


@dataclass
class Step:
    name: str
    ok: bool
    detail: str
    seconds: float


@dataclass
class Preflight:
    status: int = OK
    steps: list[Step] = field(default_factory=list)
    ncu_unusable: str = ""
    ncu_metrics: str = "all"
    ncu_path: str | None = None

    def as_record(self) -> dict:
        return {"status": self.status, "status_text": STATUS_TEXT.get(self.status, ""),
                "steps": [vars(s) for s in self.steps],
                "ncu": {"unusable": self.ncu_unusable, "metrics": self.ncu_metrics, "path": self.ncu_path}}

    def reason(self) -> str:
        bad = [s for s in self.steps if not s.ok]
        return "; ".join(f"{s.name}: {s.detail}" for s in bad)


def _step(pf: Preflight, name: str, fn: Callable[[], str], clock: Callable[[], float]) -> bool:
    t0 = clock()
    try:
        detail, ok = fn(), True
    except Exception as exc:
        detail, ok = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, False
    pf.steps.append(Step(name, ok, detail, clock() - t0))
    return ok


def device_check(importer: Callable[[], Any] | None = None) -> str:
    """Import CuPy, find the device, compile the one-line kernel as the candidates are compiled
    (compile_source's cubin for this device) and launch it; raises with the reason."""
    from plugins.measure.device import ensure_cuda_headers, import_cupy, probe

    status = probe(0, importer or import_cupy)
    if not status.available:
        raise RuntimeError(status.reason)
    cp = (importer or import_cupy)()
    from plugins.measure.device import compute_capability
    from plugins.measure.targets import unsupported

    props = cp.cuda.runtime.getDeviceProperties(0)
    raw = props.get("name", b"?")
    if why := unsupported({"name": raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw),
                           "compute_capability": compute_capability(cp, props)}):
        raise RuntimeError(why)
    ensure_cuda_headers(_cuda_path(cp))
    cubin = launch_preflight_kernel(cp)
    name = props.get("name", b"?")
    return (f"{name.decode(errors='replace') if isinstance(name, bytes) else name}: compiled {PREFLIGHT_KERNEL} with "
            f"plugins.family.compile.compile_source for {cubin.arch}, loaded its cubin and launched it")


def _cuda_path(cp: Any) -> str | None:
    try:
        return cp.cuda.get_cuda_path()
    except Exception:
        return None


def launch_preflight_kernel(cp: Any) -> Any:
    """The one-line kernel the way every candidate runs: compile_source's cubin for this device's
    arch, loaded by CuPy (so a missing cuda-bindings or NVRTC shows here, not at the first gate)."""
    from plugins.measure.device import checked_cubin, compute_capability, device_arch

    cc = compute_capability(cp, cp.cuda.runtime.getDeviceProperties(0))
    cubin = checked_cubin(PREFLIGHT_SOURCE, device_arch(cc), f"{PREFLIGHT_KERNEL}.cu", f"the preflight kernel {PREFLIGHT_KERNEL}")
    mod = cp.RawModule(path=str(cubin.path))
    buf = cp.zeros(1, dtype=cp.int32)
    mod.get_function(PREFLIGHT_KERNEL)((1,), (1,), (buf,))
    cp.cuda.Device().synchronize()
    got = int(cp.asnumpy(buf)[0])
    if got != 42:
        raise RuntimeError(f"{PREFLIGHT_KERNEL} ran but wrote {got}, not 42")
    return cubin


def counter_command(ncu: str, metrics: Sequence[str], python: str = sys.executable) -> list[str]:
    """ncu reading the slip's metrics on the one-line kernel (what every slip will need)."""
    return [ncu, "--clock-control", "none", "--metrics", ",".join(metrics),
            "--kernel-name", f"regex:^({PREFLIGHT_KERNEL})$", "--launch-count", "1",
            python, "-m", "plugins.measure.gpu_run", "launch"]


def sections_command(ncu: str) -> list[str]:
    """The sections this ncu offers (one identifier at the start of each table row)."""
    return [ncu, "--list-sections"]


_SECTION_ROW = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)(?:\s|$)")


def listed_sections(text: str) -> frozenset[str]:
    """The section identifiers of `ncu --list-sections`' table (its header row excluded)."""
    return frozenset(m.group(1) for line in text.splitlines() if (m := _SECTION_ROW.match(line)) and m.group(1) != "Identifier")


def ncu_check(pf: Preflight, ncu_path: str | None, ncu_reason: str, run: Callable[..., Any], repo: Path,
              clock: Callable[[], float], python: str = sys.executable) -> None:
    """`ncu --version`, then the counters on the one-line kernel; sets `pf.ncu_unusable` or `pf.ncu_metrics`.

    Only a missing ncu, a failing `--version` or a known profiler-wide message
    (capture.PROFILER_WIDE) rules the slips out: a check that fails for a reason
    not recognised is reported as inconclusive and the slips are still tried,
    so a misread of ncu's output never costs every slip of the window."""
    from plugins.measure.capture import METRICS, REQUIRED_METRICS, SECTIONS, metric_rejection, profiler_wide_error
    from plugins.measure.provenance import parse_ncu_version

    pf.ncu_path = ncu_path
    if ncu_path is None:
        pf.steps.append(Step("ncu --version", False, ncu_reason, 0.0))
        pf.ncu_unusable = ncu_reason
        return

    def version() -> str:
        p = run([ncu_path, "--version"], capture_output=True, text=True, timeout=NCU_VERSION_TIMEOUT_S)
        if p.returncode != 0:
            raise RuntimeError(f"ncu --version exited {p.returncode}: {(p.stdout + p.stderr).strip()[-300:]}")
        return parse_ncu_version(p.stdout + "\n" + p.stderr)

    if not _step(pf, "ncu --version", version, clock):
        pf.ncu_unusable = pf.steps[-1].detail
        return

    # Every slip asks for SECTIONS by name: one this ncu lacks fails every profile, so it rules
    # the slips out here; a listing the preflight cannot read is inconclusive, as for counters.
    t0 = clock()
    try:
        p = run(sections_command(ncu_path), cwd=str(repo), capture_output=True, text=True, timeout=NCU_SECTIONS_TIMEOUT_S)
        text = (p.stdout or "") + "\n" + (p.stderr or "")
        listed = listed_sections(p.stdout or "") if p.returncode == 0 else frozenset()
        if wide := profiler_wide_error(text):
            raise ProfilerUnusable(wide)
        if not listed:
            raise RuntimeError(f"ncu --list-sections exited {p.returncode} and listed no section: {text.strip()[-300:]}")
        lacking = [sec for sec in SECTIONS if sec not in listed]
        if lacking:
            why = (f"this ncu ({pf.steps[-1].detail}) lacks the section(s) {lacking} that every slip asks for "
                   f"(ncu --list-sections lists {len(listed)}); install a Nsight Compute that has them, or change "
                   "plugins/measure/capture.py SECTIONS")
            pf.steps.append(Step("ncu sections", False, why, clock() - t0))
            pf.ncu_unusable = why
            return
        pf.steps.append(Step("ncu sections", True, f"all {len(SECTIONS)} sections listed", clock() - t0))
    except ProfilerUnusable as exc:
        pf.steps.append(Step("ncu sections", False, f"the profiler is unusable: {exc}", clock() - t0))
        pf.ncu_unusable = str(exc)
        return
    except Exception as exc:
        pf.steps.append(Step("ncu sections", False, f"inconclusive, slips will still be tried: {type(exc).__name__}: {exc}",
                             clock() - t0))

    def counters(metrics: Sequence[str]) -> str:
        p = run(counter_command(ncu_path, metrics, python), cwd=str(repo), capture_output=True, text=True,
                timeout=NCU_COUNTER_TIMEOUT_S)
        text = (p.stdout or "") + "\n" + (p.stderr or "")
        if wide := profiler_wide_error(text):
            raise ProfilerUnusable(wide)
        if rejected := metric_rejection(text):
            raise MetricRejected(rejected)
        if p.returncode != 0:
            raise RuntimeError(f"ncu exited {p.returncode}: {text.strip()[-300:]}")
        if metrics[0] not in text:
            raise RuntimeError(f"ncu ran but printed no {metrics[0]} (no kernel profiled?): {text.strip()[-300:]}")
        return f"read {len(metrics)} metric(s) on {PREFLIGHT_KERNEL}"

    t0 = clock()
    try:
        detail = counters(METRICS)
        pf.steps.append(Step("ncu counters", True, detail, clock() - t0))
    except MetricRejected as exc:
        pf.steps.append(Step("ncu counters (every metric)", True, f"optional metric refused ({exc}); the required list is used", clock() - t0))
        pf.ncu_metrics = "required"
        if not _step(pf, "ncu counters (required metrics)", lambda: counters(REQUIRED_METRICS), clock):
            pf.ncu_unusable = pf.steps[-1].detail
    except ProfilerUnusable as exc:
        pf.steps.append(Step("ncu counters", False, f"the profiler is unusable: {exc}", clock() - t0))
        pf.ncu_unusable = str(exc)
    except Exception as exc:  # no known profiler-wide message: the slips still try (each failure is reported)
        pf.steps.append(Step("ncu counters", False, f"inconclusive, slips will still be tried: {type(exc).__name__}: {exc}",
                             clock() - t0))


class ProfilerUnusable(RuntimeError):
    pass


class MetricRejected(RuntimeError):
    pass


def preflight(out: Path, repo: Path, *, want_ncu: bool = True, allow_unknown_commit: bool = False,
              env: Mapping[str, str] | None = None, importer: Callable[[], Any] | None = None,
              run: Callable[..., Any] = subprocess.run, find: Callable[[], Any] | None = None,
              clock: Callable[[], float] = time.monotonic) -> Preflight:
    """A few seconds that decide whether the pass can run: the commit, the output folder,
    CuPy and the device, the one-line kernel, ncu and its counters. Stops at the first
    step that rules the pass out; an unusable profiler only rules out the slips."""
    from plugins.measure.provenance import ProvenanceRefused, git_state

    pf = Preflight()

    def commit() -> str:
        st = git_state(repo, env=env, allow_unknown_commit=allow_unknown_commit)
        return f"git_commit {st['git_commit']}" + (f" ({'; '.join(st['overrides'])})" if st.get("overrides") else "")

    def folder() -> str:
        if why := out_dir_problem(out, repo):
            raise RuntimeError(why)
        return str(Path(out).resolve())

    t0 = clock()
    try:
        pf.steps.append(Step("commit", True, commit(), clock() - t0))
    except ProvenanceRefused as exc:
        pf.steps.append(Step("commit", False, str(exc), clock() - t0))
        pf.status = REFUSED
        return pf
    if not _step(pf, "output folder", folder, clock):
        pf.status = REFUSED
        return pf
    if not _step(pf, "CUDA device", lambda: device_check(importer), clock):
        pf.status = NO_DEVICE
        return pf
    if want_ncu:
        from plugins.measure.capture import find_ncu

        loc = (find or find_ncu)()
        ncu_check(pf, loc.path, loc.reason, run, repo, clock)
        if pf.ncu_unusable:
            pf.status = NO_PROFILER
    return pf




# --------------------------------------------------------------------------- the summary and the exit status


def read_summaries(out: Path) -> dict[str, dict[str, dict]]:
    """reports/measure/<gpu>/<family>.json by gpu and family."""
    found: dict[str, dict[str, dict]] = {}
    for p in sorted((Path(out) / "reports" / "measure").glob("*/*.json")):
        try:
            data = json.loads(p.read_text())
            found.setdefault(p.parent.name, {})[data["family"]] = data
        except (OSError, ValueError, KeyError):
            continue
    return found


def read_repeats(out: Path, gpu: str) -> dict[str, dict]:
    found = {}
    for p in sorted((Path(out) / "reports" / "measure" / gpu / "repeat").glob("*.json")):
        try:
            data = json.loads(p.read_text())
            found[data["family"]] = data
        except (OSError, ValueError, KeyError):
            continue
    return found


def repeat_lines(repeats: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Which winners differ between the first pass and the repeat."""
    if not repeats:
        return ["repeat: none taken"]
    done = {f: r for f, r in repeats.items() if r.get("status") == "measured"}
    differ = sorted(f for f, r in done.items() if r.get("differs"))
    kept_changed = sorted(f for f, r in done.items() if r.get("first_kept") is not None and r.get("kept") != r.get("first_kept"))
    lines = [f"repeat: {len(done)} of {len(repeats)} families timed again (the key's inputs, new block order; "
             f"{sum(1 for r in repeats.values() if r.get('status') == 'skipped')} skipped)"]
    if differ:
        lines.append("  WINNER DIFFERS: " + "; ".join(f"{f}: first {done[f]['first_winner']}, repeat {done[f]['winner']}" for f in differ))
    elif done:
        lines.append("  every repeated family has the same winner as the first pass")
    if kept_changed:
        lines.append("  kept/dropped changed: " + ", ".join(kept_changed))
    for f, r in sorted(repeats.items()):
        if r.get("status") != "measured":
            lines.append(f"  {f}: {r.get('status')}: {r.get('reason', '')}")
    return lines


def pass_clock_lines(out: Path, outlier_fraction: float | None = None) -> list[str]:
    """Blocks of the whole pass taken while throttled, or with an SM clock more than a few
    percent from the median block of the pass (each key flags them against its own median too)."""
    from plugins.measure.timing import CLOCK_OUTLIER_FRACTION

    frac = CLOCK_OUTLIER_FRACTION if outlier_fraction is None else outlier_fraction
    blocks = []
    for p in sorted((Path(out) / "families").glob("*/measurements/*.json")):
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        for b in rec.get("protocol", {}).get("block_clocks", []):
            blocks.append((rec.get("family", p.parent.parent.name), p.name, b))
    clocks = [b["sm_clock_mhz"] for _, _, b in blocks if b.get("sm_clock_mhz") is not None]
    if not clocks:
        return ["clocks: no block clock was read (NVML unavailable or nothing timed)"]
    median = statistics.median(clocks)
    lines = [f"clocks: {len(clocks)} blocks, median SM clock {median:.0f} MHz, flag beyond {100 * frac:.0f}% or any throttle reason"]
    for fam, name, b in blocks:
        why = []
        for when in ("start", "end"):
            st = b.get(when) or {}
            if st.get("throttle_reasons"):
                why.append(f"throttled at {when}: {', '.join(st['throttle_reasons'])}")
        mhz = b.get("sm_clock_mhz")
        if mhz is not None and abs(mhz / median - 1) > frac:
            why.append(f"{mhz:.0f} MHz, {100 * (mhz / median - 1):+.1f}% from the pass median")
        if why:
            lines.append(f"  {fam} ({name}) block {b.get('block')}: {'; '.join(why)}")
    if len(lines) == 1:
        lines.append("  no block flagged")
    return lines


def summary_text(out: Path) -> str:
    from tabulate import tabulate

    from plugins.measure.session import ERROR_PREFIXES, SUMMARY_HEADERS, summary_rows

    lines = []
    by_gpu = read_summaries(out)
    if not by_gpu:
        lines.append("no family was measured (see measure.log)")
    for gpu, summaries in by_gpu.items():
        rows = list(summaries.values())
        lines.append(f"gpu: {gpu}")
        lines += tabulate(summary_rows(rows), headers=SUMMARY_HEADERS, disable_numparse=True).splitlines()
        for s in rows:
            if s.get("gate_problems") or str(s.get("reason", "")).startswith(ERROR_PREFIXES) or s.get("slip") != "captured":
                lines.append(f"  {s['family']}: {s.get('reason', '')} | gate: {s.get('gate_problems')} | slip: "
                             f"{s.get('slip')} {s.get('slip_reason', '')}")
            if s.get("fragile"):
                lines.append(f"  {s['family']}: fragile: {s.get('fragile_reason', '')}")
        lines += repeat_lines(read_repeats(out, gpu))
    lines += pass_clock_lines(out)
    return "\n".join(lines) + "\n"


def exit_status(pytest_rc: int, summaries: Iterable[Mapping[str, Any]], preflight_status: int = OK,
                slips_only: bool = False, layout: Sequence[str] = ()) -> tuple[int, list[str]]:
    """The script's exit status and every reason that applies (PRECEDENCE picks the status)."""
    rows = list(summaries)
    found: dict[int, str] = {}
    if slips_only:
        wanted = [s for s in rows if not str(s.get("slip_reason", "")).startswith("already")]
        if wanted and not any(s.get("slip") == "captured" for s in wanted):
            found[NO_KEY] = "slips-only: no slip was captured"
    elif not any(s.get("key") for s in rows):
        found[NO_KEY] = "no measurement file was written"
    if layout:
        found[LAYOUT] = "; ".join(layout)
    hung = sorted(s["family"] for s in rows if str(s.get("reason", "")).startswith("hung:"))
    if hung or pytest_rc == HUNG:
        found[HUNG] = f"hung: {', '.join(hung) or 'a family (no summary was written)'}"
    if pytest_rc in (2, 124, 130, 137):
        found[INTERRUPTED] = f"pytest was interrupted (exit {pytest_rc}): the hard timeout, or a signal"
    elif pytest_rc == HUNG:
        pass
    elif pytest_rc == 1:
        found[TESTS_FAILED] = "pytest reported failed tests"
    elif pytest_rc not in (0, 5) or (pytest_rc == 5 and not rows):
        found[PYTEST_ERROR] = f"pytest exited {pytest_rc}"
    if preflight_status == NO_PROFILER:
        found[NO_PROFILER] = "the preflight found the profiler unusable; no slip was taken"
    left = sorted(s["family"] for s in rows if str(s.get("slip_reason", "")).startswith("time budget"))
    if left:
        found[SLIPS_LEFT] = f"slips skipped for time: {', '.join(left)}"
    unpacked = sorted(s["family"] for s in rows if s.get("slip") == LEFT_OUT)
    if unpacked:
        found[LAYOUT] = "; ".join([*([found[LAYOUT]] if LAYOUT in found else []),
                                   f"slip reports left out of the archives (they will not come back): {', '.join(unpacked)}"])
    for code in PRECEDENCE:
        if code in found:
            return code, [f"{c} {found[c]}" for c in PRECEDENCE if c in found]
    return OK, []


def rerun_families(out: Path) -> list[str]:
    """The selected families a lost context or a hang left unmeasured: those whose summary says
    "context: not measured", those whose gate killed the context on a wrong variant (`rerun_gate`:
    the new process carries that rejection), and those with no summary at all (the process exited
    before them). A family recorded as hung, or whose start or a rewrite killed the context, is not
    among them (it would do it again)."""
    out = Path(out)
    summaries = {f: s for g in read_summaries(out).values() for f, s in g.items()}
    try:
        selected = json.loads((out / "reports" / "measure" / "selected.json").read_text())["families"]
    except (OSError, ValueError, KeyError):
        selected = list(summaries)
    hung = any(str(s.get("reason", "")).startswith("hung:") for s in summaries.values())
    left = []
    for name in selected:
        s = summaries.get(name)
        if s is None:
            if hung:
                left.append(name)
        elif str(s.get("reason", "")).startswith("context: not measured") or s.get("rerun_gate"):
            left.append(name)
    return left


def slip_priority_order(out: Path) -> list[str]:
    from plugins.measure.session import slip_priority

    rows = [s for g in read_summaries(out).values() for s in g.values()]
    return [s["family"] for s in sorted(rows, key=lambda s: (slip_priority(s), s["family"]))]


def next_line(rows: Iterable[Mapping[str, Any]], pass_args: Sequence[str] = ()) -> str:
    """The one `NEXT:` line with the exact command that takes the slips skipped for time, or ""."""
    import shlex

    left = sorted(s["family"] for s in rows if str(s.get("slip_reason", "")).startswith("time budget"))
    if not left:
        return ""
    return (f"NEXT: SPARKTRACE_GIT_COMMIT=<the same commit> MEASURE_TIMEOUT_S=<device seconds left - 60> "
            f"scripts/measure-gpu.sh --slips-only \"$OUT\" {shlex.join(pass_args)}".rstrip()
            + f"    # takes the slips skipped for time: {', '.join(left)}")


LEFT_OUT = "left out"  # a summary's slip status once its .ncu-rep cannot come back: not captured


def mark_left_out(out: Path, left_out: Sequence[tuple[str, str]]) -> list[str]:
    """Every captured slip whose .ncu-rep the archives leave out is no longer captured: its summary
    and its key say "left out" and why, before the archives are written. Returns the families."""
    reports = {path: why for path, why in left_out if path.endswith(".ncu-rep")}
    marked = []
    for p in sorted((Path(out) / "reports" / "measure").glob("*/*.json")):
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        files = data.get("slip_files") or [f"slips/{p.parent.name}/{data.get('family', p.stem)}.ncu-rep"]
        hit = [f for f in files if f in reports] if data.get("slip") == "captured" else []
        if not hit:
            continue
        reason = (f"its report {hit[0]} was left out of the archives ({reports[hit[0]]}), so it will not come back; "
                  "take it again with scripts/measure-gpu.sh --slips-only and fewer families")
        write_json_atomic(p, {**data, "slip": LEFT_OUT, "slip_reason": reason})
        marked.append(str(data.get("family", p.stem)))
        key = Path(data["key"]) if data.get("key") else None
        if key is not None and not key.is_absolute():
            key = Path(out) / key
        try:
            if key is not None and key.is_file():
                rec = json.loads(key.read_text())
                rec["slip"] = {**rec.get("slip", {}), "status": LEFT_OUT, "reason": reason}
                write_json_atomic(key, rec)
        except (OSError, ValueError) as exc:
            log.warning("could not mark %s's slip as left out in %s: %s", data.get("family"), key, exc)
    return marked


def finish(out: Path, repo: Path, pytest_rc: int, *, keep_loose: bool = False, state_dir: Path | None = None,
           slips_only: bool = False, limits: Limits = Limits(), emit: Callable[[str], None] = log.warning,
           pass_args: Sequence[str] = ()) -> int:
    """Summary, archives, cleaning, the layout check and the exit status (printed with its reasons)."""
    out = Path(out)
    pre = json.loads((out / "preflight.json").read_text()) if (out / "preflight.json").is_file() else {}
    write_text_atomic(out / "summary.txt", summary_text(out))  # a draft: the archive plan counts its size
    cap_log(out / "measure.log", limits)
    plan = archive_plan(out, limits, slip_priority_order(out))
    mark_left_out(out, plan.left_out)  # before the summaries and keys are packed
    text = summary_text(out)
    write_text_atomic(out / "summary.txt", text)
    emit(text.rstrip("\n"))
    rows = [s for g in read_summaries(out).values() for s in g.values()]
    if state_dir is not None:
        save_state(out, state_dir, merge=slips_only)
    plan = write_archives(out, limits, plan=plan)
    for path, why in plan.left_out:
        emit(f"NOT ARCHIVED (will not come back): {path}: {why}")
    if not keep_loose:
        clean_loose(out, repo)
    problems = layout_problems(out, limits) if not keep_loose else []
    code, reasons = exit_status(pytest_rc, rows, int(pre.get("status", OK)), slips_only, problems)
    tail = [f"archives: {', '.join(n for n, _ in plan.archives) or 'none'}"]
    if plan.left_out:
        tail.append(f"left out of the archives: {', '.join(p for p, _ in plan.left_out)}")
    tail.append(f"exit status {code}: {STATUS_TEXT[code]}")
    tail += [f"  {r}" for r in reasons]
    if nxt := next_line(rows, pass_args):  # whatever the exit status: test failures take precedence over 6
        tail.append(nxt)
    with (out / "summary.txt").open("a") as f:
        f.write("\n".join(tail) + "\n")
    emit("\n".join(tail))
    return code


def save_state(out: Path, state_dir: Path, merge: bool = False) -> None:
    """Copy the per-family summaries where a slips-only command in the same lease finds them.
    `merge` (a slips-only pass): keep the first pass's summaries and mark the slips now captured."""
    src = Path(out) / "reports" / "measure"
    if not src.is_dir():
        return
    dst = Path(state_dir) / "reports" / "measure"
    if not merge or not dst.is_dir():
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst)
        return
    for p in sorted(src.glob("*/*.json")):
        new = json.loads(p.read_text())
        target = dst / p.parent.name / p.name
        if new.get("slip") != "captured":
            continue
        old = json.loads(target.read_text()) if target.is_file() else new
        write_json_atomic(target, {**old, "slip": "captured", "slip_reason": "", "slip_files": new.get("slip_files", [])})


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m plugins.measure.gpu_run", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check-out")
    c.add_argument("out")
    p = sub.add_parser("preflight")
    p.add_argument("out")
    p.add_argument("--no-ncu", action="store_true")
    p.add_argument("--allow-unknown-commit", action="store_true")
    sub.add_parser("launch")
    sub.add_parser("packages")
    f = sub.add_parser("finish")
    f.add_argument("out")
    f.add_argument("--pytest-rc", type=int, required=True)
    f.add_argument("--keep-loose", action="store_true")
    f.add_argument("--state-dir", default=None)
    f.add_argument("--slips-only", action="store_true")
    f.add_argument("--pass-args", default="", help="the user's pytest arguments, shell-quoted, for the NEXT: line")
    r = sub.add_parser("rerun")
    r.add_argument("out")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    repo = Path(__file__).resolve().parents[2]
    if args.cmd == "check-out":
        why = out_dir_problem(Path(args.out), repo)
        if why:
            log.error("refused: %s", why)
        return REFUSED if why else OK
    if args.cmd == "launch":
        from plugins.measure.device import ensure_cuda_headers, import_cupy

        cp = import_cupy()
        ensure_cuda_headers(_cuda_path(cp))
        launch_preflight_kernel(cp)
        return OK
    if args.cmd == "preflight":
        out = Path(args.out)
        pf = preflight(out, repo, want_ncu=not args.no_ncu, allow_unknown_commit=args.allow_unknown_commit)
        for s in pf.steps:
            log.warning("preflight %-28s %s  %.1f s  %s", s.name, "ok  " if s.ok else "FAIL", s.seconds, s.detail)
        if pf.status != REFUSED:  # never write into a folder that was refused
            write_json_atomic(out / "preflight.json", pf.as_record())
        if pf.status != OK:
            log.warning("preflight: exit %d: %s: %s", pf.status, STATUS_TEXT[pf.status], pf.reason())
        return pf.status
    if args.cmd == "packages":
        sys.stdout.write(" ".join(missing_packages()) + "\n")
        return OK
    if args.cmd == "rerun":
        sys.stdout.write(",".join(rerun_families(Path(args.out))))
        return OK
    if args.cmd == "finish":
        import shlex

        return finish(Path(args.out), repo, args.pytest_rc, keep_loose=args.keep_loose,
                      state_dir=Path(args.state_dir) if args.state_dir else None, slips_only=args.slips_only,
                      pass_args=shlex.split(args.pass_args))
    return REFUSED


if __name__ == "__main__":
    sys.exit(main())
