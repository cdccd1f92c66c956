"""The emulator's test kernels for the hard set's features are valid CUDA: NVRTC compiles
each for every target, with the project's flags, so the emulator is never tested
on code the GPU would reject."""
from __future__ import annotations

from pathlib import Path

import pytest

from plugins.family.compile import ARCHS, compile_source
from plugins.family.needs import arch_cc, highest, uses

FIX = Path(__file__).parents[1] / "fixtures" / "emu"
# kernels written for the hard set's emulator features (the older fixtures predate this check)
HARD_FIXTURES = ("lowp.cu", "wmma.cu", "async.cu", "cluster.cu")
# What each needs, as a family would declare it: lowp.cu's fp8 conversions 8.9 (below it
# cuda_fp8.h emulates them: it compiles, to another binary); async.cu's bulk copy through a
# block-scope cuda::barrier (line 94) is cp.async.bulk, 9.0, which no pattern of
# plugins/family/needs.py sees; cluster.cu's clusters 9.0. Below those two, NVRTC refuses them.
NEEDS = {"lowp.cu": (8, 9), "async.cu": (9, 0), "cluster.cu": (9, 0)}
REFUSED_BELOW = {"async.cu", "cluster.cu"}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("fixture", HARD_FIXTURES)
def test_fixture_compiles_with_nvrtc(fixture, arch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-bindings (NVRTC) is not installed")
    source = (FIX / fixture).read_text()
    need = NEEDS.get(fixture, (8, 0))
    found = highest(uses(source))
    assert found is None or found.feature.cc <= need, f"{fixture}:{found.line} needs {found.feature.cc}, above {need}"
    res = compile_source(source, arch, fixture)
    if arch_cc(arch) < need:
        if fixture in REFUSED_BELOW:  # the binary confirms the need: below it the compile fails
            assert not res.ok, f"{fixture} compiles for {arch}, below the {need} it is said to need"
        return
    assert res.ok, f"{fixture} does not compile for {arch} with NVRTC:\n{res.log}"
    assert not res.problems(), res.problems()
