"""A profile check may be a ratio of two classes (per_class), so a density claim holds whatever the unroll."""
from __future__ import annotations

import pytest

from plugins.family.profile_checks import CheckSpecError, failures, parse_profile_checks
from plugins.family.sass import CLASSES


class Loop:
    def __init__(self, counts, depth=0):
        self.counts, self.depth, self.start, self.end, self.step = counts, depth, 0x220, 0x300, 0


class Prof:
    def __init__(self, loops, arch="sm_80"):
        self.kernel, self.arch, self.loops = "k0", arch, loops
        self.counts = {c: sum(lp.counts.get(c, 0) for lp in loops) for c in CLASSES}


def _counts(**kw):
    return {c: kw.get(c, 0) for c in CLASSES}


def test_a_ratio_holds_for_either_unroll_and_fails_above_it():
    (chk,) = parse_profile_checks([{"candidate": "c", "count": "shared_loads", "per_class": "ffma", "scope": "each_loop",
                                    "op": "<=", "value": 0.375, "why": "at most 24 per 64"}], {"c": ["k0"]})
    assert chk.describe() == "shared_loads per ffma (each_loop) <= 0.375"
    sm80 = Prof([Loop(_counts(shared_loads=40, ffma=128))])
    sm90 = Prof([Loop(_counts(shared_loads=24, ffma=64))], "sm_90")
    start = Prof([Loop(_counts(shared_loads=16, ffma=32))])
    assert failures(chk, "c", [sm80]) == [] and failures(chk, "c", [sm90]) == []
    assert "counted 0.5" in failures(chk, "c", [start])[0]
    no_ffma = Prof([Loop(_counts(shared_loads=4))])
    assert failures(chk, "c", [no_ffma]), "loads with no FFMA at all are not a low ratio"


def test_per_class_must_be_an_instruction_class():
    with pytest.raises(CheckSpecError, match="per_class"):
        parse_profile_checks([{"candidate": "c", "count": "shared_loads", "per_class": "loops", "op": "<=", "value": 1,
                               "why": "x"}], {"c": ["k0"]})
