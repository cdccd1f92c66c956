"""The diagnose set's slip: the full slip shows each family's declared cue rows, and the
no-cue ablation deletes exactly them, on LAYOUT-ONLY fixture slips (tests/items/layout_slips.py:
placeholder numbers, never a measurement), for every data group of the catalog and the
fixture group. The classic and hard sets keep their bank-conflict ablation (test_slip.py)."""
from __future__ import annotations

import dataclasses
import difflib
import re
from pathlib import Path

import pytest

from layout_slips import cue_csv, cue_report
from plugins.family.manifest import SlipCues, load_family
from plugins.items.build import condition_slips
from plugins.items.slip import ABLATION, SlipError, cue_ablation, cue_lines, render_slip, slip_lines
from plugins.measure.ncu import parse_details_csv

GROUPS = Path(__file__).parents[1] / "fixtures" / "datagroups"
FIXTURE_MEMBERS = sorted(p.name for p in GROUPS.iterdir() if (p / "family.toml").is_file())


def declared(cues: SlipCues, line) -> bool:
    """The spec, read independently of plugins/items/slip.py: a metric row whose name a cue_metrics
    pattern finds (re.search, case-insensitive), a rule named in cue_rules or whose text cue_rule_text finds."""
    if line.metric is not None:
        return any(re.search(p, line.metric.name, re.IGNORECASE) for p in cues.cue_metrics)
    if line.rule is not None:
        return line.rule.name in cues.cue_rules or any(re.search(p, line.rule.description, re.IGNORECASE)
                                                        for p in cues.cue_rule_text)
    return False


def cue_problems(fam, member: int = 0) -> list[str]:
    """What is wrong with `fam`'s no-cue slip on its layout-only fixture, [] when nothing is:
    the ablated slip must be the full slip minus exactly the declared cue lines."""
    report = cue_report(fam, member)
    cues = fam.slip
    full = render_slip(report, cues=cues).splitlines()
    ablated = render_slip(report, ablated=True, cues=cues).splitlines()
    lines = slip_lines(report)
    want = [line.text for line in lines if declared(cues, line)]
    expected = [line.text for line in lines if not declared(cues, line)]
    out = []
    if ablated != expected:
        diff = [d for d in difflib.ndiff(expected, ablated) if d[:2] in ("- ", "+ ")]
        out.append(f"{fam.name}: the no-cue slip is not the full slip minus the declared cue rows {want}: {diff}")
    if [line.text for line in cue_lines(report, cues)] != want:
        out.append(f"{fam.name}: cue_lines gives {[line.text for line in cue_lines(report, cues)]}, the declared rows are {want}")
    for p in cues.cue_metrics:
        if not any(line.metric is not None and re.search(p, line.metric.name, re.IGNORECASE) and line.text in full
                   for line in lines):
            out.append(f"{fam.name}: cue_metrics {p!r} shows no row in the full slip")
    for rid in cues.cue_rules:
        if not any(line.rule is not None and line.rule.name == rid and line.text in full for line in lines):
            out.append(f"{fam.name}: cue_rules {rid!r} shows no rule message in the full slip")
    return out


def test_every_data_group_member_shows_and_deletes_its_cue_rows(group_member):
    """Every member of a data group in the selected sets (--set diagnose or all; make family NAME=x)."""
    assert cue_problems(group_member, group_member.group.index(group_member.name)) == []


@pytest.mark.parametrize("name", FIXTURE_MEMBERS)
def test_fixture_group_shows_and_deletes_its_cue_rows(name):
    fam = load_family(GROUPS / name)
    assert cue_problems(fam, fam.group.index(name)) == []
    report = cue_report(fam)
    full, ablated = render_slip(report, cues=fam.slip), render_slip(report, ablated=True, cues=fam.slip)
    assert "L2 Hit Rate" in full and "lts__t_sectors_srcunit_tex_op_read.sum" in full
    assert "L2 Hit Rate" not in ablated and "lts__t_sectors_srcunit_tex_op_read.sum" not in ablated
    # the rest of the layout is kept, the bank-conflict rows included: this set deletes only its cues
    for kept in ("L1/TEX Hit Rate", "L2 Cache Throughput", "Shared Load Bank Conflicts", "[SharedMemoryConflicts]", "Duration"):
        assert kept in ablated


def test_the_diff_check_catches_an_ablation_that_deletes_too_much(monkeypatch):
    """cue_problems fails when the ablation deletes a line that is not a declared cue row."""
    fam = load_family(GROUPS / FIXTURE_MEMBERS[0])
    import plugins.items.slip as slip

    greedy = lambda cues: dataclasses.replace(slip.Ablation((*cues.cue_metrics, "^Duration$"), tuple(cues.cue_rules),
                                                            tuple(cues.cue_rule_text), match_unit=False))
    monkeypatch.setattr(slip, "cue_ablation", greedy)
    problems = cue_problems(fam)
    assert any("not the full slip minus" in p and "Duration" in p for p in problems), problems


def test_a_cue_pattern_that_matches_no_row_fails_loudly():
    """A cue the capture lost: the extra metric is not in the slip, so rendering (full or ablated) refuses."""
    fam = load_family(GROUPS / FIXTURE_MEMBERS[0])
    text = cue_csv(fam.slip, ("k0",))
    lost = "\n".join(line for line in text.splitlines() if "lts__t_sectors_srcunit_tex_op_read.sum" not in line) + "\n"
    report = parse_details_csv(lost, "slips/h200/gather_sorted.csv")
    for ablated in (False, True):
        with pytest.raises(SlipError, match=r"gather_sorted.csv.*lts__t_sectors_srcunit_tex_op_read.*matches no row"):
            render_slip(report, ablated=ablated, cues=fam.slip)
    assert render_slip(report)  # the classic renderer has no cues to check


def test_a_kept_rule_that_names_a_deleted_cue_row_fails_loudly():
    """ncu's AchievedOccupancy rule quotes the achieved occupancy: declaring the row without the rule leaks it."""
    cues = SlipCues(cue_metrics=("^Achieved Occupancy$",))
    report = parse_details_csv(cue_csv(cues), "slips/h200/x.csv")
    assert "Achieved Occupancy" in render_slip(report, cues=cues)
    with pytest.raises(SlipError, match=r"names the deleted cue row 'Achieved Occupancy'.*AchievedOccupancy.*cue_rules"):
        render_slip(report, ablated=True, cues=cues)
    fixed = SlipCues(cue_metrics=("^Achieved Occupancy$",), cue_rules=("AchievedOccupancy",))
    text = render_slip(parse_details_csv(cue_csv(fixed), "slips/h200/x.csv"), ablated=True, cues=fixed)
    assert "Achieved Occupancy" not in text and "[AchievedOccupancy]" not in text and "Theoretical Occupancy" in text


def test_cue_patterns_read_the_row_name_only():
    """`^L2 Hit Rate$` is the row, not "L2 Hit Rate" and its unit; the classic list still reads name and unit."""
    from plugins.measure.ncu import Metric

    ab = cue_ablation(SlipCues(cue_metrics=("^L2 Hit Rate$",)))
    assert ab.drops_metric(Metric("L2 Hit Rate", "%", "1", 1.0)) and not ab.drops_metric(Metric("L2 Hit Rate Total", "%", "1", 1.0))
    assert ABLATION.match_unit and ABLATION.drops_metric(Metric("Shared Load", "conflicts", "1", 1.0))


def test_condition_slips_per_set():
    """A data group member's items get full and no-cue; the slip of a classic family, full and no-conflicts."""
    fam = load_family(GROUPS / FIXTURE_MEMBERS[0])
    report = cue_report(fam)
    slips = condition_slips(fam, report)
    assert set(slips) == {"full", "no-cue"}
    assert slips["no-cue"] == render_slip(report, ablated=True, cues=fam.slip)
    classic = dataclasses.replace(fam, set="classic", group=(), data={}, slip=None)
    assert condition_slips(classic, report) == {"full": render_slip(report), "no-conflicts": render_slip(report, ablated=True)}
