"""The correctness gate on the CPU emulator: every candidate, fresh seeds, gate shapes.

This checks the kernels' logic (indexing, tails, barriers, shuffles, atomics),
not the GPU's memory model or speed; the GPU gate (tests/gate/test_gate_gpu.py)
repeats it on hardware when a device is present.
"""
from __future__ import annotations

import shutil

import pytest

from plugins.gate.check import family_seeds, gate_candidate

# The emulator's words for a fault, which on a GPU can leave the CUDA context unusable (plugins/gate/emulate.py).
FAULTS = ("EmuOutOfBounds", "the kernel trapped", ": abort() (")

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it")


@pytest.fixture(scope="session")
def emulator(tmp_path_factory):
    from plugins.gate.emulate import EmuExecutor

    return EmuExecutor()


def test_gate_emulated(candidate, emulator, record_property):
    fam, cand = candidate
    if cand.id in fam.gpu_gate_only:
        pytest.skip(f"GPU gate only: {fam.name}/{cand.id}: {fam.gpu_gate_only[cand.id]}")
    result = gate_candidate(fam, cand, emulator, family_seeds(fam.name))
    record_property("gate_seeds", ",".join(map(str, result.seeds)))
    if cand.role == "wrong":
        if result.passed:
            pytest.fail(f"{cand.path}: the deliberately wrong variant passed the gate (seeds {result.seeds}); its defect: {cand.text}. "
                        "Fix: make the variant fail as its defect says, on the gate sizes (or add a gate size where it does)", pytrace=False)
        faulted = any(f in result.reason for f in FAULTS)
        if faulted and not cand.faults:
            pytest.fail(f"{cand.path}: the wrong variant faults ({result.reason}); on a GPU a fault can kill the CUDA context "
                        "of the process that runs it, and every family after it. Fix: add faults = \"how it faults\" to its "
                        "[[wrong]] entry in family.toml, so the GPU gate runs it in a child process", pytrace=False)
        if cand.faults and not faulted:
            pytest.fail(f"{cand.path}: declares faults = {cand.faults!r}, but the emulated gate rejected it without a fault "
                        f"({result.reason}). Fix: remove faults from its [[wrong]] entry, or make the defect what it says", pytrace=False)
    elif not result.passed:
        if "EmuCompileError" in result.reason:
            from plugins.family.compile import ARCHS, compile_source

            if not compile_source(cand.source, ARCHS[0], cand.path.name).ok:  # one defect, one failure
                pytest.skip(f"{cand.path} does not compile; reported once, by test_compiles[{fam.name}/{cand.id}/{ARCHS[0]}]")
        pytest.fail(f"{cand.path} failed the emulated gate: {result.reason}. "
                    "Fix: correct the kernel or its launch plan in family.toml (the reason names the launch and the sizes)", pytrace=False)
