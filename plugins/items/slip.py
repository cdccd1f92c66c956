"""The slip: ncu's details page of the starting launch plan as compact text,
and its ablations: no-conflicts (the classic and hard sets: the bank-conflict
rows) and no-cue (the diagnose set: the rows a family's `[slip]` table declares).

Why line records: the ablated slip must differ from the full slip only by
deleted lines, so both are cut from one layout (column widths come from the
full data) and the ablation drops whole lines, never re-renders.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from plugins.family.manifest import SlipCues
from plugins.measure.ncu import KernelResult, Metric, NcuReport, Rule, read_details_csv

# Words the no-conflicts slip must never contain (checked after every ablation).
CONFLICT_WORDS = re.compile(r"bank[\s_-]*conflict|conflict", re.IGNORECASE)


@dataclass(frozen=True)
class Ablation:
    """Exactly what an ablated condition deletes; nothing else changes."""

    metric_patterns: tuple[str, ...]  # re.search, case-insensitive, on a row's metric name (and unit, see below)
    rule_names: tuple[str, ...]  # ncu rule identifiers, deleted whatever their text says
    rule_text_patterns: tuple[str, ...]  # re.search, case-insensitive, on a rule's description
    match_unit: bool = True  # no-conflicts reads "name\nunit"; a family's cue patterns read the row name alone

    def drops_metric(self, m: Metric) -> bool:
        text = f"{m.name}\n{m.unit}" if self.match_unit else m.name
        return any(re.search(p, text, re.IGNORECASE) for p in self.metric_patterns)

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


def cue_ablation(cues: SlipCues) -> Ablation:
    """The no-cue ablation of a diagnose family: its declared cue rows and rule messages, nothing else.

    The patterns are re.search on the row's name (case-insensitive), so `^Duration$`
    names exactly the Duration rows; rules go by identifier (`cue_rules`) or text
    (`cue_rule_text`), whole messages.
    """
    return Ablation(tuple(cues.cue_metrics), tuple(cues.cue_rules), tuple(cues.cue_rule_text), match_unit=False)


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


def cue_lines(report: NcuReport, cues: SlipCues) -> tuple[SlipLine, ...]:
    """The lines of the full slip that carry a diagnose family's cue: what no-cue deletes."""
    ablation = cue_ablation(cues)
    return tuple(line for line in slip_lines(report) if line.ablated(ablation))


def _check_cues(report: NcuReport, lines: tuple[SlipLine, ...], cues: SlipCues) -> None:
    """Every cue_metrics pattern names at least one row the slip shows: a pattern that
    matches nothing is a cue the capture lost (a refused metric, a missing section) or a typo."""
    rows = [line.metric for line in lines if line.metric is not None]
    for p in cues.cue_metrics:
        if not any(re.search(p, m.name, re.IGNORECASE) for m in rows):
            raise SlipError(
                f"{report.source}: the family's [slip] cue_metrics pattern {p!r} matches no row of the slip, so the "
                "cue it declares is not there (a metric ncu refused, a section not captured, or a pattern that names "
                "no ncu row); fix: see the dropped metrics in the slip's .json beside the CSV and retake the slip, "
                "or correct the pattern in family.toml's [slip]"
            )


def _check_no_cue(report: NcuReport, lines: tuple[SlipLine, ...], kept: tuple[SlipLine, ...], ablation: Ablation) -> None:
    """No declared cue row survives in a kept rule message: ncu's rules quote the rows they read
    ("measured achieved occupancy (20.3%)"), so a kept message naming a deleted row would hand
    the model the cue the condition removes."""
    gone = sorted({line.metric.name for line in lines if line.metric is not None and line.ablated(ablation)})
    for n, line in enumerate(kept, 1):
        if line.rule is None:
            continue
        for name in gone:
            if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", line.text, re.IGNORECASE):
                raise SlipError(
                    f"{report.source}: the no-cue slip keeps a rule message that names the deleted cue row {name!r} "
                    f"on line {n}: {line.text.strip()!r}; fix: add its rule id ({line.rule.name or 'no id'}) to "
                    "[slip] cue_rules, or a pattern of its text to cue_rule_text, in every member's family.toml"
                )


def render_slip(report: NcuReport, ablated: bool = False, cues: SlipCues | None = None) -> str:
    """The slip text; with `ablated`, the same lines minus those the condition deletes: the
    bank-conflict rows (ABLATION) without `cues`, a diagnose family's declared cue rows with them.
    With `cues`, every declared cue_metrics pattern must name a row (full or ablated)."""
    lines = slip_lines(report)
    if cues is not None:
        _check_cues(report, lines, cues)
    if ablated and cues is not None:
        ablation = cue_ablation(cues)
        kept = tuple(line for line in lines if not line.ablated(ablation))
        _check_no_cue(report, lines, kept, ablation)
        lines = kept
    elif ablated:
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
