"""`allow_spills = true`: a candidate that spills by design has its spill bytes recorded
(the ptxas resources report) instead of failing the compile check; a flag no target needs fails."""
from __future__ import annotations

import pytest

from plugins.family.compile import compile_source

SPILLS = """
extern "C" __global__ void __launch_bounds__(256, 8) k0(const float* __restrict__ x, float* __restrict__ y, int n)
{
    float a[48];
#pragma unroll
    for (int j = 0; j < 48; ++j) a[j] = x[(threadIdx.x + j * 97) % n];
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int j = 0; j < 48; ++j) { a[j] = a[j] * a[(j + r + 1) % 48] + 1.0f; s += a[j]; }
    y[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""


def test_ptxas_spills_are_read_and_only_an_allowed_candidate_passes():
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-bindings (NVRTC) is not installed")
    res = compile_source(SPILLS, "sm_90", "spills.cu")
    assert res.ok, res.log
    (k0,) = res.resources
    assert k0.registers == 32 and k0.spill_store_bytes > 0 and k0.spill_load_bytes > 0
    assert res.problems() and "spills" in res.problems()[0]
    assert res.problems(allow_spills=True) == []


def test_allow_spills_is_needed_on_some_target(catalog):
    """A stale flag would hide a spill that appears later; every flagged candidate spills somewhere."""
    stale = []
    for fam in catalog.families:
        for cand in fam.all_candidates:
            if not cand.allow_spills:
                continue
            results = [compile_source(cand.source, arch, cand.path.name) for arch in fam.targets]
            if all(r.ok for r in results) and not any(k.spill_store_bytes or k.spill_load_bytes for r in results for k in r.resources):
                stale.append(f"{cand.path}: allow_spills = true, but it spills on none of {list(fam.targets)}")
    if stale:
        pytest.fail("\n".join(stale) + "\nFix: remove allow_spills from these candidates", pytrace=False)
