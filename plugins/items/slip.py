"""The slip: ncu's details page of the starting launch plan as compact text,
and its no-conflicts ablation.

Why line records: the ablated slip must differ from the full slip only by
deleted lines, so both are cut from one layout (column widths come from the
full data) and the ablation drops whole lines, never re-renders.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from plugins.measure.ncu import KernelResult, Metric, NcuReport, Rule, read_details_csv

# Words the no-conflicts slip must never contain (checked after every ablation).
CONFLICT_WORDS = re.compile(r"bank[\s_-]*conflict|conflict", re.IGNORECASE)


@dataclass(frozen=True)
class Ablation:
    """Exactly what the no-conflicts condition deletes; nothing else changes."""

    metric_patterns: tuple[str, ...]  # re.search, case-insensitive, on a row's metric name or unit
    rule_names: tuple[str, ...]  # ncu rule identifiers, deleted whatever their text says
    rule_text_patterns: tuple[str, ...]  # re.search, case-insensitive, on a rule's description

    def drops_metric(self, m: Metric) -> bool:
        return any(re.search(p, f"{m.name}\n{m.unit}", re.IGNORECASE) for p in self.metric_patterns)

    def drops_rule(self, r: Rule) -> bool:
        return r.name in self.rule_names or any(re.search(p, r.description, re.IGNORECASE) for p in self.rule_text_patterns)


# The no-conflicts ablation, in one place.
#
# Deleted metric rows: every row whose name (or unit) mentions a conflict. For
# the ncu versions we read this covers the raw counters
#   l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum, ..._op_st.sum,
#   ..._op_atom.sum, the total l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
#   (these land in "Command line profiler metrics" when requested with --metrics),
# the human-readable rows of the Memory Workload Analysis tables ("Shared Load
# Bank Conflicts", "Shared Store Bank Conflicts", "Bank Conflicts", ...), and
# "L1 Conflicts Shared N-Way" / derived__memory_l1_conflicts_shared_nway.
# Deleted rule messages: SharedMemoryConflicts and UncoalescedSharedAccess by
# name, and any other rule whose text mentions (bank) conflicts, e.g. a stall
# rule that says "reduce bank conflicts, if reported" -- the whole message.
#
# Deliberately KEPT (the seed deleted only the conflict rows, and the issue
# says nothing else changes): the indirect hints
#   l1tex__data_bank_reads/writes.avg.pct_of_peak_sustained_elapsed,
#   the MIO-throttle and short-scoreboard stall rows and their rules when their
#   text does not mention conflicts, shared-memory wavefronts and throughput.
# A model that infers conflicts from these is reading the profile, which is
# what the benchmark asks of it.
ABLATION = Ablation(
    metric_patterns=(
        r"l1tex__data_bank_conflicts_pipe_lsu_mem_shared",
        r"bank[\s_-]*conflict",
        r"conflicts?[\s_-]*shared",
        r"conflict",
    ),
    rule_names=("SharedMemoryConflicts", "UncoalescedSharedAccess"),
    rule_text_patterns=(r"bank[\s_-]*conflict", r"conflict"),
)


class SlipError(ValueError):
    """A slip that cannot be used: names the file and the fix."""


@dataclass(frozen=True)
class SlipLine:
    """One line of the slip and the record it shows (None for layout lines)."""

    text: str
    metric: Metric | None = None
    rule: Rule | None = None

    def ablated(self, ablation: Ablation = ABLATION) -> bool:
        if self.metric is not None:
            return ablation.drops_metric(self.metric)
        if self.rule is not None:
            return ablation.drops_rule(self.rule)
        return False


def _speedup(r: Rule) -> str:
    if not r.speedup:
        return ""
    kind = f"{r.speedup_type.strip().capitalize()} " if r.speedup_type.strip() else ""
    return f" (Est. {kind}Speedup: {r.speedup}%)"


def kernel_base(name: str) -> str:
    """`k0(float const*, float*, int)` -> `k0`: ncu may print the demangled signature."""
    return name.split("(")[0].strip()


def _kernel_lines(k: KernelResult, index: int, total: int, repeats: int = 1) -> list[SlipLine]:
    head = f"Kernel launch {index} of {total}: {k.kernel}"
    if repeats > 1:
        head += f" (the first of its {repeats} launches in the plan; the others are not shown)"
    dims = []
    if k.grid:
        dims.append(f"Grid Size {k.grid}")
    if k.block:
        dims.append(f"Block Size {k.block}")
    if k.device:
        dims.append(f"Device {k.device}")
    if k.cc:
        dims.append(f"CC {k.cc}")
    out = [SlipLine(head)]
    if dims:
        out.append(SlipLine("  " + ", ".join(dims)))
    for sec in k.sections:
        out.append(SlipLine(""))
        out.append(SlipLine(f"  Section: {sec.name}"))
        if sec.metrics:
            wn = max(len("Metric Name"), *(len(m.name) for m in sec.metrics))
            wu = max(len("Metric Unit"), *(len(m.unit) for m in sec.metrics))
            wv = max(len("Metric Value"), *(len(m.text) for m in sec.metrics))
            rule = f"  {'-' * wn} {'-' * wu} {'-' * wv}"
            out.append(SlipLine(f"  {'Metric Name':<{wn}} {'Metric Unit':>{wu}} {'Metric Value':>{wv}}".rstrip()))
            out.append(SlipLine(rule))
            for m in sec.metrics:
                out.append(SlipLine(f"  {m.name:<{wn}} {m.unit:>{wu}} {m.text:>{wv}}".rstrip(), metric=m))
        for r in sec.rules:
            tag = f"{r.type} " if r.type else ""
            name = f"[{r.name}] " if r.name else ""
            text = " ".join(r.description.split())
            out.append(SlipLine(f"  {tag}{name}{text}{_speedup(r)}".rstrip(), rule=r))
    return out


def slip_lines(report: NcuReport) -> tuple[SlipLine, ...]:
    """The full slip as line records: the first launch of each distinct kernel,
    in launch order, sections in ncu's order.

    Why only the first: a plan that launches one kernel eight times (launch_chain)
    would otherwise repeat near-identical sections eight times; the .ncu-rep and
    the CSV keep every launch.
    """
    out: list[SlipLine] = []
    n = len(report.kernels)
    names = [kernel_base(k.kernel) for k in report.kernels]
    for i, k in enumerate(report.kernels, 1):
        if names.index(names[i - 1]) != i - 1:
            continue
        if out:
            out.append(SlipLine(""))
        out.extend(_kernel_lines(k, i, n, names.count(names[i - 1])))
    return tuple(out)


def render_slip(report: NcuReport, ablated: bool = False) -> str:
    """The slip text; with `ablated`, the same lines minus those ABLATION deletes."""
    lines = slip_lines(report)
    if ablated:
        lines = tuple(line for line in lines if not line.ablated())
        for n, line in enumerate(lines, 1):
            if CONFLICT_WORDS.search(line.text):
                raise SlipError(
                    f"{report.source}: the no-conflicts slip still mentions conflicts on line {n}: {line.text.strip()!r}; "
                    "fix: extend ABLATION in plugins/items/slip.py to cover this row or rule"
                )
    return "\n".join(line.text for line in lines) + "\n"


def slip_path(slips_root: Path, gpu: str, family: str) -> Path:
    return Path(slips_root) / gpu / f"{family}.csv"


def load_slip(slips_root: Path, gpu: str, family: str) -> NcuReport | None:
    """The family's captured slip on `gpu`, or None when none was captured.

    A layout fixture (it carries plugins.measure.ncu.FIXTURE_MARKER) is refused: its
    numbers are placeholders and must never reach a prompt.
    """
    path = slip_path(slips_root, gpu, family)
    if not path.is_file():
        return None
    report = read_details_csv(path)
    if report.is_fixture:
        raise SlipError(
            f"{path}: this is a layout fixture with placeholder numbers, not an ncu export; "
            "fix: delete it and capture the slip with the measure pass on a GPU"
        )
    return report
