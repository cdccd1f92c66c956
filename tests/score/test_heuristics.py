"""No shortcut solves the set: every heuristic baseline stays under half of the
source items on the intended key, for whichever family set --set selects, and
none falls far below chance either (a rule read backwards would then solve it).
The diagnose set keeps the upper bound (at most half) and replaces the lower one:
a rule reads only what the members of a data group share, so it is right on at
most one member, and its inverse too; the check there is that no rule is right
on every member of any group (true by construction; these tests check it).

The bound reads the authors' intended winners (hypotheses, not a measured
key), so it guards the design of the options. Run it on another set with
`pytest --set hard tests/score/test_heuristics.py`.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plugins.score.baselines import HEURISTICS, make_baseline
from plugins.family.manifest import DIAGNOSE_SET, load_family
from plugins.score.heuristics import (
    RULES,
    HeuristicError,
    OptionFacts,
    arch_for_key,
    diff_lines,
    group_hits,
    group_picks,
    keep_markers,
    pick,
    rule_named,
    source_score,
)
from plugins.score.modelapi import GenerateConfig

ROOT = Path(__file__).resolve().parents[2]
SYNTH = ROOT / "tests" / "fixtures" / "items" / "synth_scale"
GROUPS = ROOT / "tests" / "fixtures" / "datagroups"


def bound(n_families: int, family_set: str = "classic") -> int:
    """The most source items (two per family) a shortcut may get: under half; at most half in the
    diagnose set, where one member per group is what a shared source allows by construction."""
    return n_families if family_set == DIAGNOSE_SET else n_families - 1


def floor_bound(n_families: int) -> int:
    """The fewest source items a shortcut may get: a tenth of them (3 of 30),
    well under chance (a quarter); fewer means the cue is read backwards."""
    return max(1, (2 * n_families) // 10)


@pytest.mark.parametrize("name", sorted(RULES))
def test_no_heuristic_solves_the_set(catalog, name):
    """Per family set: with --set all each set keeps its own bounds. Classic and hard: under half and at
    least a tenth; diagnose: at most half, and right on every member of no group (instead of the tenth)."""
    by_set: dict[str, list] = {}
    for fam in catalog.families:
        by_set.setdefault(fam.set, []).append(fam)
    sets = {s: fams for s, fams in by_set.items() if len(fams) >= 2}
    if not sets:
        pytest.skip("fewer than two valid families in every selected set")
    over = []
    for family_set, fams in sorted(sets.items()):
        score = source_score(RULES[name], fams)
        if score.correct > bound(len(fams), family_set):
            over.append(f"{family_set} set: heuristic:{name} picks the intended winner in {score.correct}/"
                        f"{score.total} source items (bound {bound(len(fams), family_set)}): {', '.join(score.hits)}")
        elif family_set == DIAGNOSE_SET:
            if hits := group_hits(RULES[name], fams):
                over.append(f"{family_set} set: heuristic:{name} is right on every member of {', '.join(hits)}; the "
                            "members must share every byte a rule reads and intend different winners")
        elif score.correct < floor_bound(len(fams)):
            over.append(f"{family_set} set: heuristic:{name} picks the intended winner in only {score.correct}/"
                        f"{score.total} source items (floor {floor_bound(len(fams))}): the cue points away from "
                        f"the winners, so its inverse is a shortcut; rebalance the option texts or sources")
    assert not over, "\n".join(over)


# -- the rules on their own ------------------------------------------------------


def _opt(text="Does x.", code="k", launches=1, barriers=0, vector_memory=0):
    return OptionFacts(text, code, launches, barriers, vector_memory)


def test_ties_go_to_the_first_option_shown_so_the_orders_disagree():
    opts = [_opt(launches=1), _opt(launches=2), _opt(launches=1), _opt(launches=3)]
    rule = RULES["fewest-launches"]
    assert pick(rule, opts, "")[0] == 0
    assert pick(rule, opts[::-1], "")[0] == 1  # the mirror shows option C (index 2) second


def test_each_rule_reads_its_feature():
    start = "a\nb\nc"
    opts = [
        _opt(text="Keeps the tile; loop unchanged.", code="a\nb\nc", barriers=4),
        _opt(text="Keeps the launch.", code="a\nx y z w v u t s r q p o n m", vector_memory=2),
        _opt(text="Removes the tile.", code="q\nr\ns\nt", launches=2, vector_memory=5),
        _opt(text="Stages it the same way as before.", code="a", barriers=1),
    ]
    assert pick(RULES["longest-source"], opts, start)[0] == 1
    assert pick(RULES["shortest-source"], opts, start)[0] == 3
    assert pick(RULES["most-keep-markers"], opts, start)[0] == 0  # "Keeps" and "unchanged"
    assert pick(RULES["largest-diff"], opts, start)[0] == 2  # 3 removed + 4 added
    assert pick(RULES["structural-change"], opts, start)[0] == 2
    assert pick(RULES["most-vector-memory"], opts, start)[0] == 2
    assert pick(RULES["fewest-launches"], opts, start)[0] == 0
    assert pick(RULES["fewest-barriers"], opts, start)[0] == 1


def test_two_key_rule_breaks_first_key_ties_by_the_second():
    rule = RULES["keep-then-shortest"]
    opts = [_opt(text="Keeps x.", code="a b c d"), _opt(text="Removes x.", code="a"),
            _opt(text="Keeps y.", code="a b"), _opt(text="Keeps z.", code="a b")]
    assert pick(rule, opts, "")[0] == 2  # three keep one marker; C and D tie on length: C, shown first
    assert pick(rule, opts[::-1], "")[0] == 0  # the mirror shows D first
    assert pick(RULES["most-keep-markers"], opts, "")[0] == 0  # no second key: the first shown


def test_bounds_hold_a_rule_on_both_sides():
    assert (floor_bound(15), bound(15)) == (3, 14)
    assert floor_bound(2) == 1
    assert bound(18, DIAGNOSE_SET) == 18, "diagnose: at most half of its 36 source items"


def _fixture_group():
    return [load_family(GROUPS / n) for n in ("gather_sorted", "gather_random")]


@pytest.mark.parametrize("name", sorted(RULES))
def test_no_rule_is_right_on_every_member_of_the_fixture_group(name):
    """By construction: the members' sources are identical, so a rule picks one letter for both,
    and their winners differ, so that letter is right for one member at most."""
    fams = _fixture_group()
    picks = group_picks(RULES[name], fams)
    assert [(g.group, g.order) for g in picks] == [("gather_sorted+gather_random", o) for o in ("forward", "mirror")]
    assert all(len(set(g.letters)) == 1 for g in picks), "identical sources, identical picks"
    assert all(sum(g.right) <= 1 for g in picks) and group_hits(RULES[name], fams) == []


def test_a_group_whose_members_share_a_winner_is_caught():
    """The check can fail: members given one winner (group_problems forbids it) are all right together."""
    import dataclasses

    a, b = _fixture_group()
    same = [a, dataclasses.replace(b, intended_winner=a.intended_winner)]
    hits = {n: group_hits(RULES[n], same) for n in RULES}
    assert any(hits.values()), "some rule picks the shared winner in some order"
    for n, h in hits.items():
        mine = source_score(RULES[n], [same[0]]).hits
        assert h == [f"gather_sorted+gather_random/{x.split('/')[1]}" for x in mine]


def test_readme_block_has_a_group_column_for_the_diagnose_set(tmp_path):
    from plugins.score.heuristics import readme_block

    root = tmp_path / "families"
    for n in ("gather_sorted", "gather_random"):
        shutil.copytree(GROUPS / n, root / n)
    block = readme_block(root, family_set="all")
    assert "diagnose set, source items of both orders" in block and "classic set" not in block
    assert "| baseline | picks | source items right (of 4) | group-orders with every member right (of 2) |" in block
    rows = [l for l in block.splitlines() if l.startswith("| `heuristic:")]
    assert len(rows) == len(RULES) and all(l.endswith(" 0 |") for l in rows)


def test_feature_helpers():
    assert diff_lines("a\nb\n\nc", "a\nc\nd") == 2
    assert keep_markers("Keeps the tile; indexing unchanged, as before, the same launch") == 4
    assert keep_markers("Bookkeeping is not a marker; keepsake neither") == 0


def test_names_and_targets(tmp_path):
    from plugins.measure.keyfile import SCHEMA, write_key

    assert rule_named("heuristic:fewest-barriers").name == "fewest-barriers"
    with pytest.raises(HeuristicError, match="heuristic:longest-source"):
        rule_named("heuristic:shortest")
    root = tmp_path / "families"
    shutil.copytree(SYNTH, root / "synth_scale")
    assert arch_for_key("h200", root) == "sm_90" and arch_for_key("gb10", root) == "sm_90"  # gb10: nothing names it
    # a key's compute capability is what its measurement record reports (the measure stage's writer)
    write_key(root / "synth_scale", "gb10", {"schema": SCHEMA, "gpu": {"name": "NVIDIA GB10", "sm_count": 48,
                                                                        "compute_capability": "12.1"}})
    assert arch_for_key("gb10", root) == "sm_121" and arch_for_key(None, root) == "sm_121"  # the one measured key
    assert arch_for_key("x", record={"gpu": {"compute_capability": "10.0"}}) == "sm_100"
    assert arch_for_key("unknown") == "sm_90"
    assert set(HEURISTICS) == {f"heuristic:{n}" for n in RULES} and len(RULES) >= 6


def test_a_family_on_other_targets_is_read_on_its_own(tmp_path):
    import dataclasses

    from plugins.family.manifest import load_family
    from plugins.score.heuristics import family_arch

    fam = load_family(shutil.copytree(SYNTH, tmp_path / "synth_scale"))
    assert family_arch(fam, "sm_90") == "sm_90" and family_arch(fam, "sm_121") == "sm_121"
    hopper = dataclasses.replace(fam, targets=("sm_90a",))
    assert family_arch(hopper, "sm_90") == "sm_90a" and family_arch(hopper, "sm_121") == "sm_90a"


def test_baseline_answers_from_the_family_and_says_why(tmp_path):
    root = tmp_path / "families"
    shutil.copytree(SYNTH, root / "synth_scale")
    model = make_baseline("heuristic:fewest-barriers")
    assert model is not None and make_baseline("heuristic:nope") is None
    model.families_root = root
    fwd = model.for_item("synth_scale/source/forward", 1).generate([], GenerateConfig()).text
    mir = model.for_item("synth_scale/full/mirror", 1).generate([], GenerateConfig()).text
    # rw_stage (forward D) is the only option with a barrier: the rest tie at 0
    assert fwd.endswith("Answer: A") and "D=1" in fwd and "A=0" in fwd and "sm_90" in fwd
    assert mir.endswith("Answer: B") and "A=1" in mir


def test_heuristic_run_end_to_end_needs_no_server(project):
    """`pytest --model heuristic:NAME --key-intended` on a scratch project: labelled, scored, offline."""
    shutil.copytree(SYNTH, project.path / "families" / "synth_scale")
    shutil.copytree(ROOT / "prompts", project.path / "prompts")
    shutil.copy(ROOT / "tests" / "score" / "test_items_model.py", project.path / "tests")
    r = project.runpytest_subprocess("-p", "no:cacheprovider", "--model", "heuristic:fewest-launches",
                                     "--key-intended", "--junitxml", "h.xml", timeout=300)
    out = r.stdout.str()
    assert "NOT A MEASURED SCORE" in out and "heuristic:fewest-launches" in out
    # every rewrite launches once: a four-way tie, so forward picks A and mirror picks A (forward D)
    r.assert_outcomes(passed=1, failed=1)
    refused = project.runpytest_subprocess("-p", "no:cacheprovider", "--model", "heuristic:nope", "--key-intended",
                                           timeout=120)
    assert refused.ret != 0 and "heuristic:longest-source" in refused.stderr.str()


def test_readme_table_is_generated_from_the_current_families(pytestconfig):
    """The README's numbers come from the command, never typed: regenerate with
    `python -m plugins.score.heuristics --readme README.md` after changing a family."""
    from plugins.score.heuristics import readme_block, readme_shown

    if pytestconfig.getoption("families_root") != "families":
        pytest.skip("the README shows the sets of families/, not of --families-root")
    shown = readme_shown((ROOT / "README.md").read_text())
    assert shown == readme_block(ROOT / "families"), (
        "README.md's heuristics table is stale; run: python -m plugins.score.heuristics --readme README.md")
