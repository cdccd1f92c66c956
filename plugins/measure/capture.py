"""The slip: Nsight Compute's report of one run of the starting launch plan.

Why a subprocess: ncu profiles a program, so it runs `python -m
plugins.measure.launch_once <family>`, which launches the starting plan exactly once,
and a kernel filter on the plan's exact entry names keeps anything else out.
The raw report and its CSV export are kept exactly as ncu wrote them, with the
ncu version and every command line beside them.
"""
from __future__ import annotations

import csv
import glob
import io
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from plugins.atomicio import write_text_atomic
from plugins.atomicio import write_json_atomic
from plugins.measure.budget import MIN_STEP_TIMEOUT_S, StepBudget
from plugins.measure.provenance import parse_ncu_version

log = logging.getLogger("sparktrace.capture")

SECTIONS = (
    "SpeedOfLight",
    "LaunchStats",
    "Occupancy",
    "MemoryWorkloadAnalysis",
    "MemoryWorkloadAnalysis_Tables",
    "ComputeWorkloadAnalysis",
    "WarpStateStats",
)
METRICS = (
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
)
# The two the slip must have. When ncu refuses a name, the capture drops that name
# (and only it) and profiles again; names it cannot pin down fall back to these two.
# A family's `[slip] extra_metrics` join the list for its own slip only, so the
# classic and hard slips keep exactly this list.
REQUIRED_METRICS = METRICS[:2]
NCU_GLOBS = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu")
PROFILE_TIMEOUT_S = 60  # a start plan profiles in seconds; a hung ncu must not eat the pass's budget
EXPORT_TIMEOUT_S = 30
EXPORT_RESERVE_S = 5.0  # kept free of the profile's timeout for the export (an estimate: ncu --import of one small report)
LAUNCH_SEED = 20260101  # the inputs of the profiled run: fixed, and recorded in the slip
QUERY_TIMEOUT_S = 60  # ncu --query-metrics lists a few thousand names


@dataclass(frozen=True)
class NcuLocation:
    path: str | None
    reason: str  # why it is missing, or where it was found


def _version_key(path: str) -> tuple:
    parts = []
    for piece in Path(path).parent.name.split("."):
        parts.append(int(piece) if piece.isdigit() else -1)
    return tuple(parts)


def find_ncu(which: Callable[[str], str | None] = shutil.which, globber: Callable[[str], list[str]] = glob.glob,
             is_exec: Callable[[str], bool] = lambda p: os.access(p, os.X_OK)) -> NcuLocation:
    """ncu on PATH, else the newest under /opt/nvidia/nsight-compute/*/, else /usr/local/cuda/bin."""
    on_path = which("ncu")
    if on_path:
        return NcuLocation(on_path, "on PATH")
    looked = []
    for pattern in NCU_GLOBS:
        found = sorted((p for p in globber(pattern) if is_exec(p)), key=_version_key, reverse=True)
        looked.append(pattern)
        if found:
            return NcuLocation(found[0], f"found at {found[0]}")
    return NcuLocation(None, f"ncu (Nsight Compute CLI) not found: not on PATH, nor at {', '.join(looked)}; install Nsight Compute or put ncu on PATH")


def kernel_filter(kernels: Sequence[str]) -> str:
    """An anchored regex of the plan's exact entry names, so CuPy's own kernels never match."""
    names = list(dict.fromkeys(kernels))
    for k in names:
        if not k.isidentifier():
            raise ValueError(f"kernel name {k!r} is not a C identifier")
    return "regex:^(" + "|".join(names) + ")$"


def profile_command(ncu: str, family: str, out_base: Path, kernels: Sequence[str], launch_count: int,
                    families_root: Path, seed: int = LAUNCH_SEED, python: str = sys.executable,
                    metrics: Sequence[str] = METRICS, inputs: Path | None = None, inputs_sha256: str = "",
                    cubin_sha256: str = "") -> list[str]:
    """The exact ncu command that profiles one run of `family`'s starting plan; with `inputs`,
    the profiled process loads the key's timing inputs from that file (and checks their sha256)."""
    cmd = [ncu, "--clock-control", "none"]
    for s in SECTIONS:
        cmd += ["--section", s]
    cmd += ["--metrics", ",".join(metrics)]
    cmd += ["--kernel-name", kernel_filter(kernels), "--launch-count", str(launch_count)]
    cmd += ["-o", str(out_base), "-f"]
    cmd += [python, "-m", "plugins.measure.launch_once", family, "--families-root", str(families_root), "--seed", str(seed)]
    if inputs is not None:
        cmd += ["--inputs", str(inputs), "--inputs-sha256", inputs_sha256]
    if cubin_sha256:
        cmd += ["--cubin-sha256", cubin_sha256]
    return cmd


def query_command(ncu: str) -> list[str]:
    """The metrics this ncu offers on the devices it sees (base names, one per line)."""
    return [ncu, "--query-metrics"]


_BASE_NAME = re.compile(r"^\s*([a-z0-9]+__[a-z0-9_]+)\b")


def queried_base_names(text: str) -> frozenset[str]:
    """The base metric names (`smsp__inst_executed`) at the start of `ncu --query-metrics` lines."""
    return frozenset(m.group(1) for line in text.splitlines() if (m := _BASE_NAME.match(line)))


def refused_metric(text: str, requested: Sequence[str]) -> str:
    """The requested metric a rejection line of ncu's output names, or "" when no line names one."""
    for line in text.splitlines():
        if METRIC_REJECTED.search(line):
            named = [m for m in requested if re.search(rf"(?<![\w.]){re.escape(m)}(?![\w.])", line)]
            if named:
                return max(named, key=len)
    return ""


def raw_cue_patterns(cue_metrics: Sequence[str]) -> list[str]:
    """The cue patterns that name raw ncu counters (`^sm__cycles_active` and the like), not section rows."""
    return [p for p in cue_metrics if "__" in p]


def missing_cue_rows(csv_text: str, cue_metrics: Sequence[str]) -> list[str]:
    """The cue patterns no metric row of the export matches (re.search, case-insensitive, on the name)."""
    lines = [ln for ln in csv_text.splitlines() if not ln.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows or "Metric Name" not in rows[0]:
        return list(cue_metrics)
    i = rows[0].index("Metric Name")
    names = {r[i] for r in rows[1:] if len(r) > i and r[i]}
    return [p for p in cue_metrics if not any(re.search(p, n, re.IGNORECASE) for n in names)]


def export_command(ncu: str, report: Path) -> list[str]:
    return [ncu, "--import", str(report), "--csv", "--page", "details", "--print-details", "all"]


def csv_summary(text: str) -> dict:
    """What the export holds: rows, kernels, sections, whether the bank-conflict metrics are there.

    A sanity check only (plugins.measure.ncu parses slips); `==PROF==` lines before
    the header are skipped.
    """
    lines = [ln for ln in text.splitlines() if not ln.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows:
        raise ValueError("the CSV export is empty")
    header = rows[0]
    for col in ("Kernel Name", "Section Name", "Metric Name", "Metric Value"):
        if col not in header:
            raise ValueError(f"the CSV export has no {col!r} column; header: {header}")
    ix = {c: header.index(c) for c in header}
    # ncu omits the trailing rule fields on metric rows: pad, never drop, short rows.
    body = [r + [""] * (len(header) - len(r)) for r in rows[1:] if len(r) >= header.index("Metric Value") + 1]
    metrics = {r[ix["Metric Name"]] for r in body}
    ids: dict[str, str] = {}
    if "ID" in ix:
        for r in body:
            ids.setdefault(r[ix["ID"]], r[ix["Kernel Name"]].split("(")[0].strip())
    return {
        "rows": len(body),
        "columns": header,
        "kernels": sorted({r[ix["Kernel Name"]].split("(")[0].strip() for r in body}),
        "launches": list(ids.values()),  # one per profiled launch (ncu result ID), in ncu's order
        "sections": sorted({r[ix["Section Name"]] for r in body}),
        "bank_conflict_metrics": sorted(m for m in metrics if m in METRICS),
        "rule_rows": sum(1 for r in body if "Rule Name" in ix and r[ix["Rule Name"]]),
        "rules": [
            {"kernel": r[ix["Kernel Name"]], "section": r[ix["Section Name"]], "rule": r[ix["Rule Name"]],
             "type": r[ix["Rule Type"]] if "Rule Type" in ix else "", "description": r[ix["Rule Description"]] if "Rule Description" in ix else ""}
            for r in body if "Rule Name" in ix and r[ix["Rule Name"]]
        ] if "Rule Name" in ix else "unavailable: this ncu's CSV export has no rule columns; the rule messages are in the .ncu-rep",
    }


@dataclass
class SlipResult:
    status: str  # "captured" | "skipped" | "failed"
    reason: str
    files: list[str] = field(default_factory=list)
    record: dict = field(default_factory=dict)


def _tail(text: str | bytes | None, n: int = 4000) -> str:
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return text[-n:]


# ncu output that means no slip can be taken in this session, whatever the family
# (the counters are not readable, or the profiler itself does not load).
PROFILER_WIDE = (
    "ERR_NVGPUCTRPERM",
    "Failed to initialize the profiler",
    "LibraryNotLoaded",
    "Profiling is not supported on this device",
    "could not load the profiler",
    "Failed to load the injection library",
)
# ncu output that means a name in the metric list was refused.
METRIC_REJECTED = re.compile(r"failed to find metric|invalid metric|unknown metric|metric[^\n]*not (?:found|supported|available)", re.I)


def profiler_wide_error(text: str) -> str:
    """The first line naming a profiler-wide failure, or ""."""
    for line in text.splitlines():
        if any(p.lower() in line.lower() for p in PROFILER_WIDE):
            return line.strip()
    return ""


def metric_rejection(text: str) -> str:
    """The first line saying a metric was refused, or ""."""
    for line in text.splitlines():
        if METRIC_REJECTED.search(line):
            return line.strip()
    return ""


@dataclass
class ProfilerState:
    """What one session has learnt about ncu, so no family relearns it.

    `unusable`: after the first profiler-wide error (or the preflight's), every
    later slip is skipped with this reason and ncu is not started again.
    `metrics`: the list every slip asks for (the required two when the preflight
    saw the optional ones refused); `refused`: each name ncu refused, with its
    line, so no later slip asks for it again; `offered`: the base names of
    `ncu --query-metrics`, read once, when a refusal named no metric.
    """

    unusable: str = ""
    metrics: tuple[str, ...] = METRICS
    metric_rejected: str = ""
    version: str = ""
    starts: int = 0  # ncu processes started (profile, export, --version, --query-metrics)
    refused: dict[str, str] = field(default_factory=dict)
    offered: frozenset[str] | None = None
    offered_note: str = ""


def _path(base: Path, ext: str) -> Path:
    """`base` + `ext`, never replacing a dot inside the name (`fam.20260101T000000Z`)."""
    return base.parent / (base.name + ext)


def capture_slip(
    family: str,
    kernels: Sequence[str],
    gpu: str,
    out_root: Path,
    repo: Path,
    families_root: Path,
    ncu: NcuLocation | None = None,
    run: Callable[..., Any] = subprocess.run,
    profile_timeout_s: float = PROFILE_TIMEOUT_S,
    export_timeout_s: float = EXPORT_TIMEOUT_S,
    python: str = sys.executable,
    state: ProfilerState | None = None,
    budget: StepBudget | None = None,
    name: str | None = None,
    extra_metrics: Sequence[str] = (),
    cue_metrics: Sequence[str] = (),
    data: Mapping[str, Any] | None = None,
    seed: int = LAUNCH_SEED,
    inputs: Path | None = None,
    inputs_sha256: str = "",
    cubin_sha256: str = "",
) -> SlipResult:
    """Profile, export, and write `slips/<gpu>/<name>.{ncu-rep,csv,json}` under `out_root`
    (`name` defaults to the family; a rerun passes a stamped name to write beside).

    Never raises for a missing or failing ncu: the result says what happened,
    and the JSON beside the slip records it too. `state` carries what earlier
    slips learnt; `budget` bounds every timeout by the pass's deadline. A data
    group member passes its `[slip]` extra_metrics (asked for in this slip only)
    and cue_metrics: a cue row the export lacks fails this slip, not the pass.
    `inputs` (with `seed` and `inputs_sha256`) is the key's timing-inputs file: the
    profiled process loads it instead of drawing the inputs again. `cubin_sha256` is the
    start's cubin as the key ran it: the profiled process stops if its own differs.
    """
    ncu = ncu or find_ncu()
    state = state if state is not None else ProfilerState()
    slip_dir = Path(out_root) / "slips" / gpu
    base = slip_dir / (name or family)
    if ncu.path is None:
        return SlipResult("skipped", ncu.reason, [], {})
    if state.unusable:
        return SlipResult("skipped", f"the profiler is unusable in this session: {state.unusable}", [], {})
    export_reserve = min(export_timeout_s, EXPORT_RESERVE_S)
    first_timeout = budget.timeout(profile_timeout_s, reserve_s=export_reserve) if budget else profile_timeout_s
    if first_timeout is None:
        return SlipResult("skipped", f"time budget: {max(budget.left() or 0.0, 0.0):.0f} s left before the deadline, "  # type: ignore[union-attr]
                                     f"too little for a profile and its export", [], {})
    wanted = tuple(dict.fromkeys((*state.metrics, *extra_metrics)))
    metrics = tuple(m for m in wanted if m not in state.refused)
    dropped = [{"metric": m, "reason": f"refused earlier in this session: {state.refused[m]}"} for m in wanted if m in state.refused]
    rec: dict = {
        "family": family, "gpu": gpu, "kernels": list(kernels), "seed": seed,
        "inputs": ({"source": "the key's timing inputs, loaded from the file the pass wrote (sha256 checked by the profiled process)",
                    "file": Path(inputs).name, "sha256": inputs_sha256} if inputs is not None else
                   {"source": "drawn by the profiled process from the seed", "file": None, "sha256": None}),
        "cubin_sha256": cubin_sha256 or None,
        "cubin_check": ("the profiled process loads compile_source's cubin and stops unless its sha256 is this one"
                        if cubin_sha256 else "not checked: no cubin sha256 was known to the pass"),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "clock_control": "none", "sections": list(SECTIONS), "metrics": list(metrics),
    }
    if extra_metrics or cue_metrics or data is not None:
        rec.update({"extra_metrics": list(extra_metrics), "cue_metrics": list(cue_metrics),
                    "data": dict(data) if data is not None else {}})
    rec["metrics_requested"], rec["metrics_dropped"] = list(wanted), dropped
    if state.metric_rejected:
        rec["metrics_note"] = f"the required list only: an earlier profile in this session was refused ({state.metric_rejected})"
    rec["ncu_path"] = ncu.path
    if not state.version:
        state.starts += 1
        state.version = ncu_version(ncu, run)
    rec["ncu_version"] = state.version
    slip_dir.mkdir(parents=True, exist_ok=True)
    same = {"seed": seed, "inputs": inputs, "inputs_sha256": inputs_sha256, "cubin_sha256": cubin_sha256}
    cmd = profile_command(ncu.path, family, base, kernels, len(kernels), families_root, python=python, metrics=metrics, **same)
    rec["profile_command"] = cmd
    rec["profile_timeout_s"] = first_timeout
    result = SlipResult("failed", "", [], rec)
    t0 = time.monotonic()
    report = _path(base, ".ncu-rep")
    try:
        report.unlink(missing_ok=True)  # a stale report from an earlier run never passes for this one
        state.starts += 1
        p = run(cmd, cwd=str(repo), capture_output=True, text=True, timeout=first_timeout)
        rec["profile_exit"] = p.returncode
        text = (p.stdout or "") + "\n" + (p.stderr or "")
        rec["profile_log_tail"] = _tail(text)
        wide = profiler_wide_error(text) if p.returncode != 0 or not report.is_file() else ""
        rejected = metric_rejection(text) if p.returncode != 0 or not report.is_file() else ""
        if wide:
            state.unusable = wide
            rec["profile_seconds"] = time.monotonic() - t0
            result.reason = f"the profiler is unusable ({wide}); every later slip of this session is skipped"
            rec["status"], rec["reason"] = result.status, result.reason
            write_json_atomic(_path(base, ".json"), rec)
            result.files.append(str(_path(base, ".json")))
            return result
        profiles = 1
        while rejected and profiles <= len(wanted):
            drop, why = _to_drop(ncu, run, text, metrics, rejected, state, repo)
            if not drop:
                break
            lacking = [m for m in drop if m in REQUIRED_METRICS]
            if lacking:  # never learnt as refused: every later slip tries, and fails, on its own
                result.reason = f"ncu refused the required metric(s) {lacking} ({why}); no slip can show them"
                break
            for m in drop:
                state.refused.setdefault(m, why)
                dropped.append({"metric": m, "reason": why})
            metrics = tuple(m for m in metrics if m not in drop)
            rec["metrics"] = list(metrics)
            retry = profile_command(ncu.path, family, base, kernels, len(kernels), families_root, python=python,
                                    metrics=metrics, **same)
            left = profile_timeout_s - (time.monotonic() - t0)
            if budget is not None:
                bounded = budget.timeout(left, reserve_s=export_reserve)
                left = bounded if bounded is not None else 0.0
            rec.setdefault("first_profile", {"command": cmd, "exit": p.returncode, "log_tail": rec["profile_log_tail"],
                                             "rejected": rejected})
            if left < MIN_STEP_TIMEOUT_S:
                break
            log.warning("%s: ncu refused %s (%s); profiling again without it, and every later slip skips it",
                        family, ", ".join(drop), rejected)
            rec["profile_command"], rec["profile_timeout_s"] = retry, left
            state.starts += 1
            profiles += 1
            p = run(retry, cwd=str(repo), capture_output=True, text=True, timeout=left)
            rec["profile_exit"] = p.returncode
            text = (p.stdout or "") + "\n" + (p.stderr or "")
            rec["profile_log_tail"] = _tail(text)
            rejected = metric_rejection(text) if p.returncode != 0 or not report.is_file() else ""
        rec["profiles"] = profiles
        rec["profile_seconds"] = time.monotonic() - t0
        if result.reason:
            pass  # a required metric was refused: said above
        elif p.returncode != 0 or not report.is_file():
            result.reason = f"ncu exited {p.returncode} and {'wrote' if report.is_file() else 'did not write'} {report}; see profile_log_tail in {_path(base, '.json')}"
            if report.is_file():
                result.files.append(str(report))
        else:
            result.files.append(str(report))
            exp = export_command(ncu.path, report)
            rec["export_command"] = exp
            export_timeout = budget.timeout(export_timeout_s) if budget else export_timeout_s
            rec["export_timeout_s"] = export_timeout
            if export_timeout is None:  # a slip that ran longer than planned: retake it with --slips-only
                result.status = "skipped"
                result.reason = (f"time budget: the report was written but too little time is left for its export; "
                                 f"export it later with: {' '.join(exp)}")
            else:
                state.starts += 1
                e = run(exp, cwd=str(repo), capture_output=True, text=True, timeout=export_timeout)
                rec["export_exit"] = e.returncode
                if e.returncode != 0 or not e.stdout.strip():
                    rec["export_log_tail"] = _tail(e.stderr)
                    result.reason = f"ncu --import exited {e.returncode}; see export_log_tail in {_path(base, '.json')}"
                else:
                    csv_path = _path(base, ".csv")
                    write_text_atomic(csv_path, e.stdout)
                    result.files.append(str(csv_path))
                    try:
                        rec["csv"] = csv_summary(e.stdout)
                        profiled = rec["csv"]["launches"]
                        missing = missing_cue_rows(e.stdout, cue_metrics)
                        if profiled != list(kernels):  # what plugins.items.build compares a slip against
                            result.reason = (f"the export profiled launches {profiled}, the starting plan launches {list(kernels)}; "
                                             "see profile_log_tail in the JSON beside the slip")
                        elif missing:
                            rec["cue_rows_missing"] = missing
                            gone = [d["metric"] for d in dropped if any(re.search(p, d["metric"], re.I) for p in missing)]
                            raw = [p for p in raw_cue_patterns(missing)]
                            result.reason = (
                                f"the slip lacks the family's declared cue rows {missing}"
                                + (f" (raw counters {raw}; ncu refused {gone}, see metrics_dropped)" if gone else
                                   f" (raw counters {raw} were not in the export)" if raw else "")
                                + "; the family's slip fails, the pass goes on: fix the metric names in [slip] "
                                  "extra_metrics / cue_metrics (ncu --query-metrics) and retake it with --slips-only")
                        else:
                            result.status, result.reason = "captured", ""
                    except ValueError as exc:
                        result.reason = f"the CSV export is not in ncu's details layout: {exc}"
    except subprocess.TimeoutExpired as exc:
        rec["profile_log_tail"] = _tail(exc.stdout) + _tail(exc.stderr)
        result.reason = f"timed out after {exc.timeout:.0f} s: {' '.join(map(str, exc.cmd))[:200]}"
    except OSError as exc:
        result.reason = f"could not run ncu: {exc}"
    rec["seconds"] = time.monotonic() - t0
    rec["status"], rec["reason"] = result.status, result.reason
    write_json_atomic(_path(base, ".json"), rec)
    result.files.append(str(_path(base, ".json")))
    return result


def _to_drop(ncu: NcuLocation, run: Callable[..., Any], text: str, metrics: Sequence[str], rejected: str,
             state: ProfilerState, repo: Path) -> tuple[list[str], str]:
    """The names to leave out after a refusal, and why: the one ncu named; else those whose
    base `ncu --query-metrics` does not offer (queried once per session); else every name
    but the required two (the refusal could not be pinned on one)."""
    named = refused_metric(text, metrics)
    if named:
        return [named], rejected
    if state.offered is None:
        try:
            state.starts += 1
            q = run(query_command(ncu.path or "ncu"), cwd=str(repo), capture_output=True, text=True, timeout=QUERY_TIMEOUT_S)
            state.offered = queried_base_names(q.stdout or "") if q.returncode == 0 else frozenset()
            state.offered_note = "" if state.offered else f"ncu --query-metrics exited {q.returncode} or listed no metric"
        except (OSError, subprocess.TimeoutExpired) as exc:
            state.offered, state.offered_note = frozenset(), f"ncu --query-metrics failed: {exc}"
    if state.offered:
        unknown = [m for m in metrics if m.split(".")[0] not in state.offered and m not in REQUIRED_METRICS]
        if unknown:
            return unknown, f"not offered by ncu --query-metrics on this GPU (after: {rejected})"
    optional = [m for m in metrics if m not in REQUIRED_METRICS]
    return optional, (f"ncu refused the list without naming a metric ({rejected}); "
                      f"{state.offered_note or 'ncu --query-metrics did not single one out'}: only the required metrics are kept")


def ncu_version(ncu: NcuLocation, run: Callable[..., Any] = subprocess.run) -> str:
    """`ncu --version`'s version, or "unavailable: <why>"."""
    if ncu.path is None:
        return f"unavailable: {ncu.reason}"
    try:
        p = run([ncu.path, "--version"], capture_output=True, text=True, timeout=60)
        return parse_ncu_version(p.stdout + "\n" + p.stderr)
    except Exception as exc:
        return f"unavailable: {type(exc).__name__}: {exc}"
