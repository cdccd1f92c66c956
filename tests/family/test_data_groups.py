"""Data groups (the diagnose set): members share every file a model reads and differ only in
the data make_inputs draws from `[data]` (plugins/family/pairs.py: group_problems)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plugins.family.manifest import DIAGNOSE_SET, FamilyError, load_family
from plugins.family.pairs import group_problems

GROUPS = Path(__file__).resolve().parents[1] / "fixtures" / "datagroups"
MEMBERS = ("gather_sorted", "gather_random")


def test_groups_share_everything_but_their_data(catalog):
    """Every group of the selected families, its members loaded from disk when --set left them out."""
    problems, seen = [], set()
    for fam in catalog.families:
        if not fam.group or fam.group in seen:
            continue
        seen.add(fam.group)
        members = []
        for name in fam.group:
            member = next((f for f in catalog.families if f.name == name), None)
            if member is None:
                try:
                    member = load_family(catalog.root / name)
                except (FamilyError, OSError) as exc:
                    problems.append(f"{fam.name}: group member {name} cannot be loaded: {exc}")
                    continue
            members.append(member)
        if len(members) == len(fam.group):
            problems += [f"group {'/'.join(fam.group)}: {p}" for p in group_problems(members)]
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def test_every_diagnose_family_is_in_a_group(catalog):
    loose = [f.name for f in catalog.families if f.set == DIAGNOSE_SET and not f.group]
    assert loose == []


def _group(tmp_path: Path) -> list[Path]:
    out = []
    for m in MEMBERS:
        shutil.copytree(GROUPS / m, tmp_path / m, ignore=shutil.ignore_patterns("__pycache__"))
        out.append(tmp_path / m)
    return out


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def test_a_fair_group_has_no_problems(tmp_path):
    assert group_problems([load_family(p) for p in _group(tmp_path)]) == []


@pytest.mark.parametrize(
    "mutate, words",
    [
        (lambda b: _edit(b / "rewrites" / "vec4.cu", "}", "}\n"), "rewrites/vec4.cu differs"),
        (lambda b: _edit(b / "reference.py", "np.sort(idx)", "np.sort(idx)  # sorted"), "reference.py differs"),
        (lambda b: _edit(b / "family.toml", 'winner = "warp_row"', 'winner = "vec4"'), "repeat"),
        (lambda b: _edit(b / "family.toml", 'generator = "random"', 'generator = "sorted"'), "the same [data]"),
        (lambda b: _edit(b / "family.toml", 'generator = "random"', 'generator = "sorted"\nskew = 2'), "draws the same bytes"),
        (lambda b: _edit(b / "family.toml", "R = 262144", "R = 131072"), "the timing shape differ"),
        (lambda b: _edit(b / "family.toml", "cue_rule_text = ['L2']", "cue_rule_text = ['hit']"), "[slip] cues differ"),
        (lambda b: _edit(b / "family.toml", 'group = ["gather_sorted", "gather_random"]', 'group = ["gather_random", "gather_sorted"]'), "same list"),
    ],
    ids=["rewrite-drift", "reference-drift", "same-winner", "same-data", "data-unread", "timing", "slip", "group-order"],
)
def test_group_problems_are_named(tmp_path, mutate, words):
    a, b = _group(tmp_path)
    mutate(b)
    problems = group_problems([load_family(a), load_family(b)])
    assert any(words in p for p in problems), problems


@pytest.mark.parametrize(
    "old, new, words",
    [
        ('set = "diagnose"\n', "", r"field 'group'.*in set 'classic'"),
        ("[data]\ngenerator = \"sorted\"\n", "", r"field 'data'.*missing"),
        ("cue_metrics = ['^L2 Hit Rate$', '^lts__t_sectors_srcunit_tex_op_read\\.sum$']\n", "", r"field 'slip.cue_metrics'.*missing"),
        ("cue_rule_text = ['L2']", "cue_rule_text = ['L2(']", r"slip.cue_rule_text\[0\].*not a regular expression"),
        ('extra_metrics = ["lts__t_sectors_srcunit_tex_op_read.sum"]', 'extra_metrics = ["L2 Hit Rate"]', r"not an ncu metric name"),
        ('cue = "L2 hit rate high: consecutive rows repeat"\n', "", r"intended.cue.*missing"),
        ('group = ["gather_sorted", "gather_random"]', 'group = ["gather_random", "gather_other"]', r"does not name 'gather_sorted'"),
        ('group = ["gather_sorted", "gather_random"]', 'group = ["gather_sorted"]', r"field 'group'.*name 2 or 3"),
    ],
    ids=["not-diagnose", "no-data", "no-cue-rows", "bad-regex", "bad-metric", "no-cue", "self-missing", "too-small"],
)
def test_group_fields_are_checked(tmp_path, old, new, words):
    a, _ = _group(tmp_path)
    _edit(a / "family.toml", old, new)
    with pytest.raises(FamilyError, match=words):
        load_family(a)


def test_make_inputs_gets_the_members_data(tmp_path):
    import numpy as np

    a, b = (load_family(p) for p in _group(tmp_path))
    shape = a.shapes("gate")[0]
    ia, ib = a.make_inputs(np.random.default_rng(1), shape)["idx"], b.make_inputs(np.random.default_rng(1), shape)["idx"]
    assert np.all(np.diff(ia) >= 0) and not np.all(np.diff(ib) >= 0)
