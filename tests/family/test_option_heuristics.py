"""Shallow cues must not give the intended winner away.

A model that always picks the longest option, the odd one out, or a fixed
letter should do little better than chance. These checks use the authors'
intended winners (hypotheses), so they guard the wording and layout of the
options, not the measured key.
"""
from __future__ import annotations

import pytest

# At most this many of the families may be won by any one shallow heuristic
# (chance is a quarter). Longest code is the loosest today: the winner often
# does more (float4, shuffles, a register window).
MAX_SHARE = 0.5


def _winner_index(fam) -> int:
    return [r.id for r in fam.rewrites].index(fam.intended_winner)


def test_winner_is_not_the_odd_first_word(family):
    """'Keeps … / Keeps … / Keeps … / Replaces …' would point at the winner."""
    first = [r.text.split()[0].lower() for r in family.rewrites]
    w = _winner_index(family)
    others = {first[i] for i in range(4) if i != w}
    assert not (len(others) == 1 and first[w] not in others), (
        f"{family.name}: every other option starts with {others.pop()!r}; the winner's text starts with {first[w]!r}"
    )


HEURISTICS = {
    "longest option text": lambda f: max(range(4), key=lambda i: len(f.rewrites[i].text)),
    "shortest option text": lambda f: min(range(4), key=lambda i: len(f.rewrites[i].text)),
    "longest code": lambda f: max(range(4), key=lambda i: len(f.rewrites[i].code)),
    "shortest code": lambda f: min(range(4), key=lambda i: len(f.rewrites[i].code)),
    "letter A": lambda f: 0,
    "letter B": lambda f: 1,
    "letter C": lambda f: 2,
    "letter D": lambda f: 3,
}


@pytest.mark.parametrize("name", sorted(HEURISTICS))
def test_no_shallow_heuristic_finds_most_winners(catalog, name):
    fams = catalog.families
    if not fams:
        pytest.skip("no valid family")
    hits = sorted(f.name for f in fams if HEURISTICS[name](f) == _winner_index(f))
    assert len(hits) <= MAX_SHARE * len(fams), f"'{name}' picks the intended winner in {len(hits)}/{len(fams)} families: {hits}"
