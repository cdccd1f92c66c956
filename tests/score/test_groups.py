"""The data-group tally (plugins/score/groups.py) on hand-computed SYNTHETIC records (names fam_a...
are fixtures, not families), in the report, score.json and the junit sheet."""
from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from plugins.score.groups import members_of, score_groups, score_groups_by_pass, suite_properties
from plugins.score.report import RunReport, report_json, report_lines
from plugins.score.tally import Record, mcnemar_exact, newcombe_paired, score_pass

ROOT = Path(__file__).resolve().parents[2]
PAIR, TRIPLE = "fam_a+fam_b", "fam_c+fam_d+fam_e"

# (group, order) -> condition -> per member: (chosen letter, right?)  -- SYNTHETIC
PLAN = {
    (PAIR, "forward"): {"source": [("B", True), ("B", False)], "full": [("B", True), ("C", True)],
                        "no-cue": [("B", True), ("B", False)]},
    (PAIR, "mirror"): {"source": [("A", False), ("C", False)], "full": [("C", True), ("B", True)],
                       "no-cue": [("C", True), ("B", True)]},
    (TRIPLE, "forward"): {"source": [("A", True), ("A", False), ("A", False)],
                          "full": [("D", False), ("D", False), ("D", False)],
                          "no-cue": [("D", False), ("D", False), ("D", False)]},
    (TRIPLE, "mirror"): {"source": [("D", False), ("D", False), ("D", False)],
                         "full": [("A", True), ("B", True), ("A", False)],
                         "no-cue": [("D", False), ("D", False), ("D", False)]},
}


def records(pass_index=1, omit=()):
    out = []
    for (group, order), conds in PLAN.items():
        for cond, picks in conds.items():
            for fam, (letter, right) in zip(members_of(group), picks):
                item = f"{fam}/{cond}/{order}"
                outcome = "omitted" if item in omit else "correct" if right else "wrong"
                expected = letter if right else ("A" if letter != "A" else "B")
                out.append(Record(item, fam, cond, order, pass_index, expected, None if outcome == "omitted" else letter,
                                  letter, outcome, key="fx", family_set="diagnose", group=group))
    return out


def test_the_tally_by_hand():
    g = score_groups(records())
    assert g.conditions == ("source", "full", "no-cue")
    t = {c: (x.all_right, x.some_right, x.none_right, x.incomplete) for c, x in g.tallies.items()}
    assert t == {"source": (0, 2, 2, 0), "full": (2, 1, 1, 0), "no-cue": (1, 1, 2, 0)}
    # did the slip help: all right in full (pair, both orders) and never in source
    h = g.helped
    assert (h.pairs, h.b, h.c, h.both, h.neither) == (4, 0, 2, 0, 2) and h.difference == 0.5
    assert h.p == mcnemar_exact(0, 2) == 0.5 and h.interval == newcombe_paired(0, 2, 0, 2)
    # did it mislead: the triple, forward: fam_c right in source, nobody in full
    assert (g.misled, g.misled_of) == (1, 4)
    # do the cue rows cause it: no-cue keeps the pair's mirror all right, loses its forward
    c = g.causal
    assert (c.pairs, c.b, c.c, c.both, c.neither) == (4, 0, 1, 1, 2) and c.difference == 0.25 and c.p == 1.0
    # source consistency: the pair's mirror gave two letters
    assert (g.consistent, g.consistent_of) == (3, 4)
    assert [(r.group, r.order, r.right("full")) for r in g.rows] == [
        (PAIR, "forward", 2), (PAIR, "mirror", 2), (TRIPLE, "forward", 0), (TRIPLE, "mirror", 2)]


def test_an_omitted_member_makes_its_group_order_incomplete():
    g = score_groups(records(omit={"fam_b/full/forward"}))
    assert g.tallies["full"].incomplete == 1 and g.tallies["full"].all_right == 1 and g.tallies["full"].n == 3
    assert g.helped.pairs == 3 and g.helped.c == 1 and g.misled_of == 3
    assert g.tallies["source"].incomplete == 0


def test_a_missing_member_makes_its_group_order_incomplete():
    """A member with no item (dropped on the key, no slip) never lets the others count as all right."""
    rs = [r for r in records() if r.family != "fam_b"]
    g = score_groups(rs)
    assert all(g.tallies[c].n == 2 and g.tallies[c].incomplete == 2 for c in g.conditions)
    assert g.helped.pairs == 2


def test_passes_and_sets_are_scored_apart():
    rs = records(1) + records(2)
    assert [g.pass_index for g in score_groups_by_pass(rs)] == [1, 2]
    with pytest.raises(ValueError, match="mix passes"):
        score_groups(rs)
    assert score_groups([r for r in records() if False]) is None
    plain = Record("x/source/forward", "x", "source", "forward", 1, "A", "A", "A", "correct", key="fx")
    assert score_groups([plain]) is None and score_groups_by_pass([plain]) == ()


def test_the_report_answers_the_four_questions():
    rs = records()
    rep = RunReport("m1", "fx", "one-step", (score_pass(rs),), family_set="diagnose", groups=(score_groups(rs),))
    lines = list(report_lines(rep))
    header = next(l for l in lines if l.startswith("| model"))
    assert [c.strip() for c in header.split("|")[1:-1]][2:5] == ["source/10", "full/10", "no-cue/10"]
    helped = next(l for l in lines if "did the slip help" in l)
    assert "+2 of 4 (+0.50, 95%" in helped and "0.5 (b=0, c=2)" in helped
    assert "| 1 of 4 " in next(l for l in lines if "did the slip mislead" in l)
    assert "+1 of 4 (+0.25" in next(l for l in lines if "full − no-cue" in l)
    assert "3 of 4" in next(l for l in lines if "source consistency" in l)
    row = next(l for l in lines if l.startswith("| fam_c+fam_d+fam_e | forward"))
    assert [c.strip() for c in row.split("|")[1:-1]] == [TRIPLE, "forward", "1/3", "0/3", "0/3"]
    data = report_json(rep)["groups"][0]
    assert data["slip_helped"]["c_second_only"] == 2 and data["slip_helped"]["p_exact_mcnemar"] == 0.5
    assert data["slip_misled"] == {"group_orders": 1, "of": 4, "what": data["slip_misled"]["what"]}
    assert data["tally"]["no-cue"]["all_right"] == 1 and data["source_consistency"]["consistent"] == 3
    assert data["group_orders"][0]["right"]["full"] == [True, True]
    classic = RunReport("m1", "fx", "one-step", (score_pass([r for r in rs if False]),))
    assert "Data groups" not in "\n".join(report_lines(classic)) and "groups" not in report_json(classic)


def test_suite_properties_carry_the_headline():
    props = dict(suite_properties([score_groups(records())]))
    assert props["diagnose.groups.pass1.full.all_right"] == "2" and props["diagnose.groups.pass1.source.all_right"] == "0"
    assert props["diagnose.groups.pass1.slip_helped.c"] == "2" and props["diagnose.groups.pass1.slip_helped.difference"] == "0.5"
    assert props["diagnose.groups.pass1.slip_helped.p_exact_mcnemar"] == "0.5"
    assert props["diagnose.groups.pass1.slip_misled"] == "1" and props["diagnose.groups.pass1.source_consistency.of"] == "4"
    assert float(props["diagnose.groups.pass1.full_minus_ablated.difference"]) == 0.25


def test_leaderboard_reads_the_group_from_the_sheet(tmp_path):
    from plugins.score.leaderboard import collect, leaderboard_lines

    cases = "".join(
        f'<testcase name="t{i}"><properties>' + "".join(
            f'<property name="{k}" value="{v}"/>' for k, v in {
                "model": "m1", "item": r.item, "family": r.family, "set": "diagnose", "group": r.group,
                "condition": r.condition, "order": r.order, "pass": "1", "expected": r.expected,
                "chosen": r.chosen or "", "strict": r.strict or "", "outcome": r.outcome, "key": "fx",
                "key_measured": "true"}.items()) + "</properties></testcase>"
        for i, r in enumerate(records()))
    sheet = tmp_path / "junit.xml"
    sheet.write_text(f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')
    (entry,) = collect([sheet])
    assert entry.family_set == "diagnose" and entry.groups[0].helped.c == 2
    lines = list(leaderboard_lines([entry]))
    row = next(l for l in lines if l.startswith("| m1") and "p=0.5" in l)
    assert [c.strip() for c in row.split("|")[1:-1]][3:8] == ["4", "0", "2", "1", "+2/4 [" + row.split("[")[1].split("]")[0] + "] p=0.5"]


def test_junit_sheet_carries_the_group_and_its_tally(project):
    """`pytest --model always-a --key-intended --set diagnose` on the fixture group (a scratch project):
    every testcase names its group, the suite carries the tally, score.json has it."""
    for name in ("gather_sorted", "gather_random"):
        shutil.copytree(ROOT / "tests" / "fixtures" / "datagroups" / name, project.path / "families" / name)
    shutil.copytree(ROOT / "prompts", project.path / "prompts")
    shutil.copy(ROOT / "tests" / "score" / "test_items_model.py", project.path / "tests")
    r = project.runpytest_subprocess("-p", "no:cacheprovider", "--model", "always-a", "--key-intended", "--set", "diagnose",
                                     "--run-dir=run", "--junitxml", "run/junit.xml", timeout=300)
    out = r.stdout.str()
    assert "Data groups, set diagnose, pass 1" in out and "did the slip help" in out, out[-3000:]
    root = ET.parse(project.path / "run" / "junit.xml").getroot()
    suite = {p.get("name"): p.get("value") for p in root.find("testsuite").find("properties")}
    assert suite["diagnose.groups.pass1.source.group_orders"] == "2" and suite["diagnose.groups.pass1.source.none_right"] == "2"
    assert suite["diagnose.groups.pass1.source_consistency"] == "2", "always-a gives one letter to every member"
    groups = {p.get("value") for tc in root.iter("testcase") for p in tc.iter("property") if p.get("name") == "group"}
    assert groups == {"gather_sorted+gather_random"}
    data = json.loads((project.path / "run" / "score.json").read_text())
    assert data["set"] == "diagnose" and data["groups"][0]["tally"]["source"]["none_right"] == 2
