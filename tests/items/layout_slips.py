"""LAYOUT-ONLY slips for data groups (a test helper, not a test file and not a measurement).

A data group's slips are captured on a GPU; until then the renderer, the no-cue
ablation and the prompts are tested on CSV text built here: the rows of
tests/fixtures/ncu/layout-rules-3-kernels.placeholder.csv (kernel 0, every section,
placeholder numbers), one copy per kernel of the family's starting plan, plus a row
for each `[slip] extra_metrics` name, a row for each `cue_metrics` pattern no row
matches yet (named by the pattern read as a literal), and a rule row for each
`cue_rules` id and `cue_rule_text` pattern. Every row carries
plugins.measure.ncu.FIXTURE_MARKER, so load_slip refuses this text as a real slip.
`member` changes only the values of the cue rows, the way members' data would.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from plugins.family.manifest import Family, SlipCues
from plugins.measure.ncu import FIXTURE_MARKER, NcuReport, parse_details_csv

BASE = Path(__file__).parents[1] / "fixtures" / "ncu" / "layout-rules-3-kernels.placeholder.csv"
CUE_SECTION = "Cue rows (layout fixture)"
RAW_SECTION = "Command line profiler metrics"


def literal(pattern: str) -> str:
    """A row name the pattern matches, read as a literal: `^Avg\\. Active Threads Per Warp$`
    gives `Avg. Active Threads Per Warp`; ValueError when the pattern is not a plain literal."""
    text = re.sub(r"\\(.)", r"\1", pattern.removeprefix("^").removesuffix("$"))
    if not re.search(pattern, text, re.IGNORECASE):
        raise ValueError(f"cue pattern {pattern!r} is not a literal this helper can name a row for; "
                         f"fix: add a row it matches to {BASE.name} (placeholder numbers, FIXTURE_MARKER)")
    return text


def _base_rows() -> tuple[list[str], list[list[str]]]:
    rows = [r for r in csv.reader(io.StringIO(BASE.read_text())) if r]
    start = next(i for i, r in enumerate(rows) if r[0] == "ID")
    header = rows[start]
    return header, [r + [""] * (len(header) - len(r)) for r in rows[start + 1:] if r[0] == "0"]


def cue_csv(cues: SlipCues, kernels: tuple[str, ...] = ("k0",), member: int = 0) -> str:
    """The layout-only details-page CSV of a starting plan launching `kernels`, carrying every declared cue row."""
    header, base = _base_rows()
    col = {c: i for i, c in enumerate(header)}

    def row(kid: str, kernel: str, section: str, name: str = "", unit: str = "", value: str = "",
            rule: str = "", kind: str = "", text: str = "") -> list[str]:
        r = list(base[0])
        r[col["ID"]], r[col["Kernel Name"]], r[col["Section Name"]] = kid, kernel, section
        r[col["Metric Name"]], r[col["Metric Unit"]], r[col["Metric Value"]] = name, unit, value
        r[col["Rule Name"]], r[col["Rule Type"]], r[col["Rule Description"]] = rule, kind, text
        r[col["Estimated Speedup Type"]] = r[col["Estimated Speedup"]] = ""
        return r

    value = f"{member + 1}{member + 1},{member + 1}{member + 1}{member + 1}"  # 11,111 / 22,222 / 33,333: placeholders
    names = [r[col["Metric Name"]] for r in base if r[col["Metric Name"]]]
    extra = [(RAW_SECTION, m) for m in cues.extra_metrics if m not in names]
    named = names + [m for _, m in extra]
    for p in cues.cue_metrics:
        if not any(re.search(p, n, re.IGNORECASE) for n in named):
            extra.append((RAW_SECTION if "__" in p else CUE_SECTION, literal(p)))
            named.append(extra[-1][1])
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    out.write(f"==PROF== layout fixture ({FIXTURE_MARKER})\n")
    w.writerow(header)
    for kid, kernel in enumerate(kernels):  # one result ID per launch, as ncu profiles the plan
        cue = [any(re.search(p, r[col["Metric Name"]], re.IGNORECASE) for p in cues.cue_metrics) for r in base]
        for r, is_cue in zip(base, cue):
            r = list(r)
            r[col["ID"]], r[col["Kernel Name"]] = str(kid), kernel
            if is_cue and r[col["Metric Name"]]:
                r[col["Metric Value"]] = value
            w.writerow(r)
        for section, name in extra:
            w.writerow(row(str(kid), kernel, section, name, "", value))
        for rid in cues.cue_rules:
            w.writerow(row(str(kid), kernel, "WarpStateStats", rule=rid, kind="OPT",
                           text=f"Placeholder text of a cue rule (layout fixture), member {member + 1}."))
        for i, p in enumerate(cues.cue_rule_text):
            w.writerow(row(str(kid), kernel, "WarpStateStats", rule=f"LayoutFixtureCueText{i}", kind="OPT",
                           text=f"Placeholder: {literal(p)} (layout fixture), member {member + 1}."))
    return out.getvalue()


def cue_report(fam: Family, member: int = 0) -> NcuReport:
    """The layout-only slip of a data group member's starting plan (its kernels, its cues)."""
    assert fam.slip is not None, f"{fam.name} has no [slip] table"
    kernels = tuple(launch.kernel for launch in fam.start.launches)
    return parse_details_csv(cue_csv(fam.slip, kernels, member), f"layout fixture for {fam.name} (member {member + 1})")
