"""The emulator's test kernels for the hard set's features are valid CUDA: NVRTC compiles
each for every target, with the project's flags, so the emulator is never tested
on code the GPU would reject."""
from __future__ import annotations

from pathlib import Path

import pytest

from plugins.family.compile import ARCHS, compile_source

FIX = Path(__file__).parents[1] / "fixtures" / "emu"
# kernels written for the hard set's emulator features (the older fixtures predate this check)
HARD_FIXTURES = ("lowp.cu", "wmma.cu", "async.cu", "cluster.cu")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("fixture", HARD_FIXTURES)
def test_fixture_compiles_with_nvrtc(fixture, arch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-bindings (NVRTC) is not installed")
    res = compile_source((FIX / fixture).read_text(), arch, fixture)
    assert res.ok, f"{fixture} does not compile for {arch} with NVRTC:\n{res.log}"
    assert not res.problems(), res.problems()
