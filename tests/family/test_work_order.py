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
from plugins.family.hooks import WorkOrder

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
    from _pytest.compat import NOTSET  # what pytest passes for an empty parameter set (no data groups)

    assert cat.rank({"group_member": NOTSET}) == cat.rank({"family": "gather_rows"}) == -1


class _Item:
    def __init__(self, name: str, **params: object) -> None:
        self.name = name
        if params:
            self.callspec = type("CallSpec", (), {"params": params})()


def test_the_hook_puts_each_familys_tests_together_in_discovery_order():
    """File order (compile tests of every family, then profile tests, then gate tests) becomes family
    order; tests of no family keep their relative order, first."""
    cat = Catalog.load(FIXTURES)
    a, b = cat.families[:2]
    ca, cb = a.all_candidates[0], b.all_candidates[0]
    items = [_Item("plain1"), _Item("compile-b", compile_case=(b, cb, b.targets[0])),
             _Item("compile-a", compile_case=(a, ca, a.targets[0])), _Item("plain2"),
             _Item("profile-b", family=b), _Item("profile-a", family=a),
             _Item("gate-a", candidate=(a, ca)), _Item("gate-b", candidate=(b, cb)), _Item("plain3", kind="x")]
    WorkOrder(cat).pytest_collection_modifyitems(items)
    assert [i.name for i in items] == ["plain1", "plain2", "plain3", "compile-a", "profile-a", "gate-a",
                                       "compile-b", "profile-b", "gate-b"]


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
