"""The correctness gate on a GPU: every candidate through CuPy on fresh seeds.

Starting kernels and rewrites must pass; every deliberately wrong variant must
be rejected, with its reason. Skips, with the reason, without a CUDA device.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from plugins.gate.check import family_seeds, gate_candidate
from plugins.measure.gate_child import gate_isolated, runs_apart
from plugins.measure.targets import device_of, family_skip

pytestmark = pytest.mark.gpu


def test_gate_gpu(candidate, cupy_executor, record_property):
    fam, cand = candidate
    if why := family_skip(fam, device_of(cupy_executor)):
        pytest.skip(why)
    if cand.role == "wrong" and os.environ.get("SPARKTRACE_GATE_MEMCHECK") == "1":
        pytest.skip(f"{fam.name}/{cand.id}: under memcheck (scripts/gate-memcheck.sh) only starts and rewrites run; "
                    "a wrong variant may go out of bounds on purpose")
    if runs_apart(cand):  # it faults on purpose: only a child's context may die of it
        result = gate_isolated(fam, cand, family_seeds(fam.name), families_root=fam.path.parent.resolve(),
                               device_index=cupy_executor.device_index, repo=Path(__file__).resolve().parents[2])
    else:
        result = gate_candidate(fam, cand, cupy_executor, family_seeds(fam.name))
    record_property("gate_seeds", ",".join(map(str, result.seeds)))
    record_property("gate_reason", result.reason)
    if not result.passed and (lost := cupy_executor.context_error()):
        # A sticky CUDA error: every later verdict in this process would be a lie.
        pytest.exit(f"{cand.path} left the CUDA context unusable ({result.reason}): {lost}; "
                    "rerun the remaining candidates in a new process", returncode=1)
    if cand.role == "wrong":
        if result.passed:
            pytest.fail(f"{cand.path}: the deliberately wrong variant passed the GPU gate (seeds {result.seeds}); its defect: {cand.text}", pytrace=False)
        assert result.reason, "a rejection always carries its reason"
    elif not result.passed:
        pytest.fail(f"{cand.path} failed the GPU gate: {result.reason}", pytrace=False)
