"""Counts of the expensive work a session does, and its test time per stage.

Why: the suite's time goes to a few kinds of work (NVRTC compiles, nvdisasm
runs, emulator builds, reference calls); counting them per session shows what
is done twice, which wall-clock timings on a shared machine cannot.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping

# One process's counts; a worker hands its counts to the controller at the end.
COUNTS: Counter[str] = Counter()

# The kinds counted, in the order the report lists them: (counter, what it is).
KINDS: tuple[tuple[str, str], ...] = (
    ("nvrtc_compile", "NVRTC compiles to a cubin"),
    ("nvrtc_pch_create", "NVRTC precompiled headers made"),
    ("nvrtc_pch_evict", "NVRTC precompiled headers removed to stay under the cap"),
    ("nvdisasm", "nvdisasm runs"),
    ("recorded_profile", "profiles served from a committed report (same code sections and tools)"),
    ("emu_build", "emulator kernel builds (g++)"),
    ("emu_runtime_build", "emulator runtime builds (g++)"),
    ("emu_pch_build", "emulator prelude precompiled headers (g++)"),
    ("reference", "reference calls (gate buffers)"),
)


def count(kind: str, n: int = 1) -> None:
    COUNTS[kind] += n


def merge(into: Counter[str], counts: Mapping[str, int]) -> None:
    for k, v in counts.items():
        into[k] += int(v)


def stage_of_nodeid(nodeid: str) -> str:
    """`tests/gate/test_x.py::t[a]` -> `gate`; a test file directly under tests/ -> `tests`."""
    parts = nodeid.split("::")[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0].removesuffix(".py")


@dataclass(frozen=True)
class StageRow:
    stage: str
    tests: int
    time_s: float  # setup + call + teardown, summed over every worker


def stage_rows(durations: Iterable[tuple[str, float]]) -> list[StageRow]:
    """(nodeid, seconds) of every test phase -> one row per stage, slowest first."""
    tests: dict[str, set[str]] = {}
    secs: Counter[str] = Counter()
    for nodeid, seconds in durations:
        st = stage_of_nodeid(nodeid)
        tests.setdefault(st, set()).add(nodeid)
        secs[st] += seconds
    return sorted((StageRow(s, len(tests[s]), secs[s]) for s in tests), key=lambda r: (-r.time_s, r.stage))


def report_lines(counts: Mapping[str, int], rows: Iterable[StageRow]) -> list[str]:
    """The work counts (done / served from the disk cache) and the stage table, as Markdown."""
    rows = list(rows)
    out = ["| work | done | cache hits |", "|---|---:|---:|"]
    known = {k for k, _ in KINDS}
    for k, what in KINDS:
        out.append(f"| {what} | {counts.get(k, 0)} | {counts.get('hit:' + k, 0)} |")
    for k in sorted(set(counts) - known):
        if not k.startswith("hit:") or k[4:] not in known:
            out.append(f"| {k} | {counts[k]} | |")
    out += ["", "| stage | tests | seconds |", "|---|---:|---:|"]
    out += [f"| {r.stage} | {r.tests} | {r.time_s:.1f} |" for r in rows]
    out.append(f"| total | {sum(r.tests for r in rows)} | {sum(r.time_s for r in rows):.1f} |")
    return out
