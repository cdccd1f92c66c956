"""The correctness gate on the CPU emulator: every candidate, fresh seeds, gate shapes.

This checks the kernels' logic (indexing, tails, barriers, shuffles, atomics),
not the GPU's memory model or speed; the GPU gate (tests/gate/test_gate_gpu.py)
repeats it on hardware when a device is present.
"""
from __future__ import annotations

import shutil

import pytest

from plugins.gate.check import fresh_seeds, gate_candidate

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it")


@pytest.fixture(scope="session")
def emulator(tmp_path_factory):
    from plugins.gate.emulate import EmuExecutor

    return EmuExecutor()


def test_gate_emulated(candidate, emulator, record_property):
    fam, cand = candidate
    if cand.id in fam.gpu_gate_only:
        pytest.skip(f"GPU gate only: {fam.name}/{cand.id}: {fam.gpu_gate_only[cand.id]}")
    result = gate_candidate(fam, cand, emulator, fresh_seeds())
    record_property("gate_seeds", ",".join(map(str, result.seeds)))
    if cand.role == "wrong":
        if result.passed:
            pytest.fail(f"{cand.path}: the deliberately wrong variant passed the gate (seeds {result.seeds}); its defect: {cand.text}", pytrace=False)
    elif not result.passed:
        pytest.fail(f"{cand.path} failed the emulated gate: {result.reason}", pytrace=False)
