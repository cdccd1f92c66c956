"""The emulated gate on the example families of tests/fixtures/hardfams/ (bf16 in, e4m3 codes
out, ...): starts and rewrites pass on fresh seeds, wrong variants are rejected."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plugins.family.manifest import load_family
from plugins.gate.check import fresh_seeds, gate_candidate

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it")

HARD = Path(__file__).resolve().parents[1] / "fixtures" / "hardfams"
CASES = [(d.name, c.id) for d in sorted(HARD.iterdir()) if (d / "family.toml").is_file() for c in load_family(d).all_candidates]


@pytest.mark.parametrize("fam_name, cid", CASES, ids=[f"{f}/{c}" for f, c in CASES])
def test_fixture_family_gate(fam_name, cid):
    from plugins.gate.emulate import EmuExecutor

    fam = load_family(HARD / fam_name)
    cand = fam.candidate(cid)
    result = gate_candidate(fam, cand, EmuExecutor(), fresh_seeds())
    assert result.as_expected, f"{fam_name}/{cid} ({cand.role}): passed={result.passed} {result.reason}"
    if cand.role == "wrong":
        assert result.reason
