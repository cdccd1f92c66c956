"""NVRTC's precompiled headers change the compile's speed only: the same cubin, the same ptxas report."""
from __future__ import annotations

from pathlib import Path

import pytest

from plugins.family.compile import _nvrtc_compile
from plugins.family.manifest import load_family

FAMILY = Path(__file__).resolve().parents[2] / "families" / "wmma_ldm"  # mma.h and cuda_pipeline: the heavy headers


def _steady(log: str) -> list[str]:
    """The log without ptxas's timing lines (they differ run to run)."""
    return [ln for ln in log.splitlines() if "Compile time" not in ln]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_precompiled_headers_build_the_same_binary(arch, monkeypatch):
    fam = load_family(FAMILY)
    cands = fam.all_candidates[:3]
    monkeypatch.setenv("SPARKTRACE_NO_PCH", "1")
    plain = [_nvrtc_compile(c.source, arch, c.path.name) for c in cands]
    monkeypatch.delenv("SPARKTRACE_NO_PCH")
    with_pch = [_nvrtc_compile(c.source, arch, c.path.name) for c in cands]  # the 2nd and 3rd reuse the 1st's PCH
    for c, a, b in zip(cands, plain, with_pch):
        assert a.ok and b.ok, c.id
        assert a.cubin == b.cubin, f"{c.path}: the PCH build's cubin differs on {arch}"
        assert a.resources == b.resources
        assert _steady(a.log) == _steady(b.log), f"{c.path}: the PCH build's log differs on {arch}"
        assert "Warning" not in b.log and "precompiled" not in b.log, b.log[:300]
