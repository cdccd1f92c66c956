"""Candidates that only the GPU gate can check, listed with their reasons.

A family names them (`gpu_gate_only = [{ id, why }]`) when the CPU emulator
cannot run them (inline PTX, say). The emulated gate skips exactly those, so
CI's summary (pytest.ini's -ra) prints one "GPU gate only: family/id: why"
line each; this test checks the entries and records the list (junit property
`gpu_gate_only`, and the log).
"""
from __future__ import annotations

import logging

log = logging.getLogger("sparktrace.gate")


def test_gpu_gate_only_candidates_are_listed(catalog, record_property):
    listed = []
    for fam in catalog.families:
        ids = {c.id for c in fam.all_candidates}
        for cid, why in fam.gpu_gate_only.items():
            assert cid in ids and why.strip(), f"{fam.name}: gpu_gate_only names {cid!r} ({why!r})"
            listed.append(f"{fam.name}/{cid}: {why}")
    record_property("gpu_gate_only", "; ".join(listed) or "none")
    for line in listed:
        log.warning("GPU gate only (the emulated gate skips it): %s", line)
