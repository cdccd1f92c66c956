"""The order the session runs family tests in (plugins/family/hooks.py sorts by Catalog.rank).

Why: under --dist worksteal each xdist worker takes a contiguous run of the collection. In file
order the two halves held the compile tests and the profile tests of the same candidates, and
both workers compiled the same cubins at once: on the compile and profile tests alone, 3,130
NVRTC compiles and 201 s in file order, 1,625 and 107 s grouped by family (cold cache, -n 2).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from plugins.family.catalog import Catalog

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "families"


def test_rank_is_the_familys_place_whatever_argument_names_it():
    cat = Catalog.load(FIXTURES)
    fams = cat.families
    assert len(fams) >= 2, "the fixture families should hold at least two good families"
    order = {d.name: i for i, d in enumerate(cat.found)}
    for fam in fams:
        cand = fam.all_candidates[0]
        want = order[fam.name]
        assert cat.rank({"family": fam}) == want
        assert cat.rank({"group_member": fam}) == want
        assert cat.rank({"candidate": (fam, cand)}) == want
        assert cat.rank({"compile_case": (fam, cand, fam.targets[0]), "other": 3}) == want
    assert cat.rank({"discovered": cat.found[-1]}) == len(cat.found) - 1
    assert cat.rank({}) == cat.rank({"kind": "source"}) == -1


def test_this_sessions_family_tests_are_grouped_by_family_after_the_rest(request):
    """Read from this very session's collection: each family's tests form one run, in discovery
    order, and the tests of no family come first."""
    from plugins.family.hooks import CATALOG

    cat = request.config.stash[CATALOG]
    ranks = [cat.rank(getattr(getattr(item, "callspec", None), "params", {})) for item in request.session.items]
    if len(set(ranks) - {-1}) < 2:
        pytest.skip("this session collected the tests of fewer than two families: nothing to order")
    assert ranks == sorted(ranks), "family tests are not grouped: " + ", ".join(
        f"{request.session.items[i].nodeid} after {request.session.items[i - 1].nodeid}"
        for i in range(1, len(ranks)) if ranks[i] < ranks[i - 1])[:600]
