"""The slip and its no-conflicts ablation, on layout fixtures (placeholder numbers)."""
from __future__ import annotations

import difflib
import re
import shutil
from pathlib import Path

import pytest

from plugins.measure.ncu import KernelResult, Metric, NcuReport, Rule, Section, read_details_csv
from plugins.items.slip import ABLATION, CONFLICT_WORDS, SlipError, load_slip, render_slip

FIX = Path(__file__).parents[1] / "fixtures" / "ncu"
FIXTURES = sorted(FIX.glob("*.placeholder.csv"))
# The words the issue forbids in a no-conflicts slip, spelled the ways ncu might.
FORBIDDEN = re.compile(r"bank[\s_-]*conflict|conflicts", re.IGNORECASE)
# Rows ncu prints for shared-memory bank conflicts (names from ncu's sections and metric list).
KNOWN_CONFLICT_ROWS = (
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "Shared Load Bank Conflicts",
    "Shared Store Bank Conflicts",
    "Shared Atomic Bank Conflicts",
    "Bank Conflicts",
    "L1 Conflicts Shared N-Way",
    "derived__memory_l1_conflicts_shared_nway",
)
INDIRECT_HINTS_KEPT = (
    "l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed",
    "l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "Stall MIO Throttle",
    "Stall Short Scoreboard",
    "[ShortScoreboard]",
)


@pytest.fixture(params=FIXTURES, ids=[p.name.split(".")[0] for p in FIXTURES])
def report(request) -> NcuReport:
    return read_details_csv(request.param)


def _matches_documented_list(line: str) -> bool:
    """A deleted line is a metric row the ABLATION patterns name, or a rule message it names."""
    rule = re.match(r"\s*[A-Z]{3} \[(\w+)\] (.*)$", line)
    if rule:
        return rule.group(1) in ABLATION.rule_names or any(re.search(p, rule.group(2), re.I) for p in ABLATION.rule_text_patterns)
    return any(re.search(p, line, re.I) for p in ABLATION.metric_patterns)


def test_ablated_slip_never_mentions_bank_conflicts(report):
    assert FORBIDDEN.search(render_slip(report)), "the fixture must contain conflict rows for this test to mean anything"
    assert not FORBIDDEN.search(render_slip(report, ablated=True))


def test_ablation_only_deletes_documented_lines(report):
    full = render_slip(report).splitlines()
    ablated = render_slip(report, ablated=True).splitlines()
    diff = [d for d in difflib.ndiff(full, ablated) if d[:2] in ("- ", "+ ", "? ")]
    assert diff, "nothing was deleted"
    assert all(d.startswith("- ") for d in diff), [d for d in diff if not d.startswith("- ")]
    bad = [d for d in diff if not _matches_documented_list(d[2:])]
    assert not bad, f"deleted lines outside ABLATION: {bad}"


def test_ablation_keeps_everything_else():
    rep = read_details_csv(FIX / "layout-rules-3-kernels.placeholder.csv")
    ablated = render_slip(rep, ablated=True)
    for hint in INDIRECT_HINTS_KEPT:
        assert hint in ablated, f"{hint} is an indirect hint the ablation documents as kept"
    for headline in ("Duration", "Registers Per Thread", "Achieved Occupancy", "Theoretical Occupancy",
                     "Memory Throughput", "Compute (SM) Throughput", "Block Size", "Grid Size",
                     "Static Shared Memory Per Block", "Block Limit Registers", "[SOLBottleneck]"):
        assert headline in ablated
    for gone in ("[SharedMemoryConflicts]", "[UncoalescedSharedAccess]", "[CPIStall]",
                 "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"):
        assert gone in render_slip(rep) and gone not in ablated


@pytest.mark.parametrize("name", KNOWN_CONFLICT_ROWS)
def test_every_known_conflict_row_is_deleted(name):
    assert ABLATION.drops_metric(Metric(name, "", "1", 1.0))


@pytest.mark.parametrize("name", [h for h in INDIRECT_HINTS_KEPT if not h.startswith("[")])
def test_indirect_hints_are_kept(name):
    assert not ABLATION.drops_metric(Metric(name, "", "1", 1.0))


def test_rules_deleted_by_name_and_by_text():
    assert ABLATION.drops_rule(Rule("SharedMemoryConflicts", "OPT", "any text"))
    assert ABLATION.drops_rule(Rule("UncoalescedSharedAccess", "OPT", "excessive wavefronts"))
    assert ABLATION.drops_rule(Rule("SomeStall", "OPT", "... reduce bank conflicts, if reported."))
    assert not ABLATION.drops_rule(Rule("SOLBottleneck", "OPT", "memory is more heavily utilized"))


def test_incomplete_ablation_is_an_error():
    """A conflict mention the list does not cover fails loudly instead of leaking."""
    sec = Section("Bank Conflicts Of Some Future Section", (Metric("X", "", "1", 1.0),), ())
    rep = NcuReport("slips/h200/x.csv", "rules", (KernelResult("0", "k0", "", "", "", "", (sec,)),))
    with pytest.raises(SlipError, match="extend ABLATION"):
        render_slip(rep, ablated=True)


def test_slip_layout(report):
    text = render_slip(report)
    assert text == render_slip(report), "rendering is deterministic"
    assert text.startswith(f"Kernel launch 1 of {len(report.kernels)}: k0\n")
    order = [line.split("Section: ", 1)[1] for line in text.splitlines() if "Section: " in line]
    assert order == [s.name for k in report.kernels for s in k.sections]
    # values exactly as ncu printed them, in aligned columns
    line = next(line for line in text.splitlines() if line.strip().startswith("Elapsed Cycles"))
    assert line.endswith(" 3,333,333") and "cycle" in line
    table = text.split("Section: GPU Speed Of Light Throughput")[1].split("\n\n")[0].splitlines()[1:]
    widths = {len(line) for line in table if not re.match(r"\s*[A-Z]{3} \[", line)}
    assert len(widths) == 1, "the table's rows are aligned"


def test_multi_kernel_header_and_rules():
    text = render_slip(read_details_csv(FIX / "layout-rules-3-kernels.placeholder.csv"))
    assert "Kernel launch 1 of 3: k0\n  Grid Size (22222, 1, 1), Block Size (32, 32, 1), Device 0, CC 9.0" in text
    assert "Kernel launch 2 of 3: k1\n  Grid Size (333, 1, 1), Block Size (256, 1, 1)" in text
    assert "Kernel launch 3 of 3: k2" in text
    assert "  OPT [LaunchConfiguration] Placeholder text with a link" in text
    assert "(Est. Global Speedup: 11.11%)" in text
    assert "INF [ShortScoreboard]" in text


def test_load_slip_refuses_layout_fixtures(tmp_path):
    assert load_slip(tmp_path, "h200", "clamp_smem") is None
    (tmp_path / "h200").mkdir()
    shutil.copy(FIX / "layout-new.placeholder.csv", tmp_path / "h200" / "clamp_smem.csv")
    with pytest.raises(SlipError, match="layout fixture"):
        load_slip(tmp_path, "h200", "clamp_smem")


def test_conflict_words_cover_the_spellings():
    for s in ("bank conflict", "Bank-Conflicts", "bank_conflicts", "4-way conflict", "L1 Conflicts Shared"):
        assert CONFLICT_WORDS.search(s)


def test_repeated_kernel_is_shown_once():
    """launch_chain launches k0 eight times: the slip shows its first launch only."""
    import dataclasses

    report = read_details_csv(FIX / "layout-rules-3-kernels.placeholder.csv")
    k0 = report.kernels[0]
    repeated = dataclasses.replace(report, kernels=(k0, k0, k0, report.kernels[1]))
    text = render_slip(repeated)
    assert text.count("Section: GPU Speed Of Light Throughput") == 2
    assert "Kernel launch 1 of 4: k0 (the first of its 3 launches in the plan; the others are not shown)" in text
    assert "Kernel launch 4 of 4: k1" in text
    assert "Kernel launch 2 of 4" not in text
