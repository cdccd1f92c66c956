"""Nsight Compute's details-page CSV, parsed into frozen records.

Why a parser of our own: the slip must show ncu's values exactly as ncu
printed them, section by section with the rule messages, and ncu's CSV
header has changed across versions (three layouts are accepted, see
docs/artifacts.md and the reference notes). Nothing here renders text.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

# Rule rows name their section by identifier, metric rows by display name.
SECTION_DISPLAY_NAMES: dict[str, str] = {
    "SpeedOfLight": "GPU Speed Of Light Throughput",
    "LaunchStats": "Launch Statistics",
    "Occupancy": "Occupancy",
    "MemoryWorkloadAnalysis": "Memory Workload Analysis",
    "MemoryWorkloadAnalysis_Tables": "Memory Workload Analysis Tables",
    "MemoryWorkloadAnalysis_Chart": "Memory Workload Analysis Chart",
    "ComputeWorkloadAnalysis": "Compute Workload Analysis",
    "SchedulerStats": "Scheduler Statistics",
    "WarpStateStats": "Warp State Statistics",
    "SourceCounters": "Source Counters",
    "InstructionStats": "Instruction Statistics",
    "WorkloadDistribution": "GPU and Memory Workload Distribution",
    "PmSampling": "PM Sampling",
}

# The columns every layout has; the others are optional.
REQUIRED_COLUMNS = ("ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value")
RULE_COLUMNS = ("Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup")
# Committed layout fixtures carry this in Process Name / Host Name so they can
# never be rendered as a real slip (see plugins.items.slip.load_slip).
FIXTURE_MARKER = "LAYOUT-FIXTURE-NOT-A-MEASUREMENT"

_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(,\d{3})+(\.\d+)?$")
_PLAIN = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


class NcuCsvError(ValueError):
    """A CSV that is not ncu's details page: names the file, the line and the fix."""


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    text: str  # the value exactly as ncu printed it
    value: float | None  # the same value as a number, None when it is not one


@dataclass(frozen=True)
class Rule:
    name: str
    type: str  # OPT, WRN, INF, ERR as ncu prints them
    description: str
    speedup_type: str = ""  # "global", "local" or ""
    speedup: str = ""  # as printed, e.g. "50" (percent)


@dataclass(frozen=True)
class Section:
    name: str  # display name, e.g. "GPU Speed Of Light Throughput"
    metrics: tuple[Metric, ...]
    rules: tuple[Rule, ...]


@dataclass(frozen=True)
class KernelResult:
    """One profiled kernel launch (one ncu result ID)."""

    id: str
    kernel: str
    grid: str  # "(65536, 1, 1)" as printed, "" in the oldest layout
    block: str
    device: str
    cc: str
    sections: tuple[Section, ...]

    def section(self, name: str) -> Section:
        for s in self.sections:
            if s.name == name:
                return s
        raise KeyError(f"kernel {self.kernel} (ID {self.id}) has no section {name!r}")


@dataclass(frozen=True)
class NcuReport:
    source: str  # where it was read from, for error messages
    layout: str  # "old", "new" or "rules"
    kernels: tuple[KernelResult, ...]
    is_fixture: bool = False  # carries FIXTURE_MARKER: never a measurement


def parse_number(text: str) -> float | None:
    """'10,240,000' -> 10240000.0, '21.68' -> 21.68, 'PolicySpread' -> None."""
    t = text.strip()
    if _THOUSANDS.match(t):
        return float(t.replace(",", ""))
    if _PLAIN.match(t):
        return float(t)
    return None


def _layout(header: list[str]) -> str:
    if all(c in header for c in RULE_COLUMNS):
        return "rules"
    if "Grid Size" in header and "Block Size" in header:
        return "new"
    return "old"


def parse_details_csv(text: str, source: str = "<string>") -> NcuReport:
    """Parse `ncu --csv --page details [--print-details all]` output.

    Lines before the CSV header (`==PROF==` lines, program output) are
    skipped. Rows may be shorter than the header (ncu ends metric rows with an
    empty trailing field and omits the rule fields); missing cells are empty.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID","')), None)
    if start is None:
        raise NcuCsvError(
            f"{source}: no ncu CSV header (a line starting with \"ID\",) found; "
            "fix: export with `ncu --import R.ncu-rep --csv --page details --print-details all`"
        )
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = rows[0]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise NcuCsvError(f"{source}:{start + 1}: header lacks columns {missing}; fix: export the details page (--page details) as CSV")
    col = {name: i for i, name in enumerate(header)}
    layout = _layout(header)

    def cell(row: list[str], name: str) -> str:
        i = col.get(name)
        return row[i] if i is not None and i < len(row) else ""

    order: list[str] = []
    heads: dict[str, tuple[str, str, str, str, str]] = {}
    sections: dict[str, dict[str, tuple[list[Metric], list[Rule]]]] = {}
    fixture = False
    for n, row in enumerate(rows[1:], start + 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) < col["Metric Value"] + 1 and not any(cell(row, c) for c in RULE_COLUMNS):
            raise NcuCsvError(f"{source}:{n}: row has {len(row)} fields, the header {len(header)}; fix: re-export the CSV unmodified")
        rid = cell(row, "ID")
        if not rid:
            raise NcuCsvError(f"{source}:{n}: field 'ID' is empty; fix: re-export the CSV unmodified")
        if FIXTURE_MARKER in (cell(row, "Process Name"), cell(row, "Host Name")):
            fixture = True
        head = (cell(row, "Kernel Name"), cell(row, "Grid Size"), cell(row, "Block Size"), cell(row, "Device"), cell(row, "CC"))
        if rid not in heads:
            order.append(rid)
            heads[rid] = head
            sections[rid] = {}
        elif heads[rid][0] != head[0]:
            raise NcuCsvError(f"{source}:{n}: ID {rid} names kernel {head[0]!r}, earlier rows {heads[rid][0]!r}; fix: re-export the CSV unmodified")
        raw_section = cell(row, "Section Name")
        sec = SECTION_DISPLAY_NAMES.get(raw_section, raw_section)
        metrics, rules = sections[rid].setdefault(sec, ([], []))
        name = cell(row, "Metric Name")
        if name:
            value = cell(row, "Metric Value")
            metrics.append(Metric(name, cell(row, "Metric Unit"), value, parse_number(value)))
        rule = cell(row, "Rule Name")
        if rule or cell(row, "Rule Description"):
            rules.append(
                Rule(rule, cell(row, "Rule Type"), cell(row, "Rule Description"),
                     cell(row, "Estimated Speedup Type"), cell(row, "Estimated Speedup"))
            )
        if not name and not rule and not cell(row, "Rule Description"):
            raise NcuCsvError(f"{source}:{n}: row has neither a metric nor a rule; fix: re-export the CSV unmodified")
    if not order:
        raise NcuCsvError(f"{source}: the CSV has a header but no rows; fix: profile at least one kernel launch")
    kernels = tuple(
        KernelResult(
            id=rid, kernel=heads[rid][0], grid=heads[rid][1], block=heads[rid][2],
            device=heads[rid][3], cc=heads[rid][4],
            sections=tuple(Section(s, tuple(m), tuple(r)) for s, (m, r) in sections[rid].items()),
        )
        for rid in order
    )
    return NcuReport(source=source, layout=layout, kernels=kernels, is_fixture=fixture)


def read_details_csv(path: Path) -> NcuReport:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise NcuCsvError(f"{path}: not UTF-8 text ({exc}); fix: export with --csv to a text file") from None
    return parse_details_csv(text, str(path))
