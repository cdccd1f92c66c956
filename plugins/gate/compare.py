"""Comparing a candidate's outputs with the float64 reference.

Why: one comparison for the CPU emulator, the GPU gate and the reference
self-check, so that "passed" means the same everywhere. Unwritten (poisoned)
elements, NaN/Inf where the reference is finite, and degenerate references
(all zeros) can never pass.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from plugins.family.dtypes import LOW_PRECISION, e4m3_codes, e4m3_ordinal, is_float, np_dtype
from plugins.family.manifest import Buffer


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str = ""


def poison(dtype: str) -> float | int:
    """The fill value for outputs before a run: NaN, or the largest value for integers."""
    dt = np_dtype(dtype)
    return float("nan") if is_float(dt) else int(np.iinfo(dt).max)


def poisoned(dtype: str, count: int) -> np.ndarray:
    """`count` poisoned elements: 0xFF bytes for bfloat16, float16 and e4m3 (NaN in each,
    as the GPU executor writes them), else poison(dtype)."""
    dt = np_dtype(dtype)
    if dtype in LOW_PRECISION:
        return np.full(count * dt.itemsize, 0xFF, np.uint8).view(dt)
    return np.full(count, poison(dtype), dtype=dt)


def compare_buffer(buf: Buffer, got: np.ndarray, want: np.ndarray, scale: np.ndarray | None = None) -> Verdict:
    assert buf.tolerance is not None, f"{buf.name} is not an output"
    tol = buf.tolerance
    got = np.asarray(got).reshape(-1)
    want = np.asarray(want).reshape(-1)
    if got.shape != want.shape:
        return Verdict(False, f"{buf.name}: {got.size} elements, reference has {want.size}")
    if want.size and not np.any(want.astype(np.float64) != 0 if is_float(want.dtype) else want):
        return Verdict(False, f"{buf.name}: the reference is all zeros, so an unwritten output could pass; the family's inputs are degenerate")
    if tol.kind == "e4m3_step":
        return _compare_e4m3(buf, got, want, tol.steps)
    if is_float(got.dtype):
        finite_ref = np.isfinite(want)
        nonfinite = finite_ref & ~np.isfinite(got)
        if nonfinite.any():
            idx = np.flatnonzero(nonfinite)
            return Verdict(False, f"{buf.name}: {idx.size} of {got.size} elements are NaN/Inf (unwritten or overflowed); first at [{idx[0]}]: got {got[idx[0]]!r}, want {want[idx[0]]!r}")
    if tol.kind == "exact":
        bad = got != want
        if bad.any():
            idx = np.flatnonzero(bad)
            return Verdict(False, f"{buf.name}: {idx.size} of {got.size} elements differ (exact); first at [{idx[0]}]: got {got[idx[0]]!r}, want {want[idx[0]]!r}")
        return Verdict(True)
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    if tol.kind == "elementwise":
        s = np.abs(w)
    else:
        if scale is None:
            return Verdict(False, f"{buf.name}: tolerance 'scaled' needs reference.error_scale()")
        s = np.asarray(scale, dtype=np.float64).reshape(-1)
    limit = tol.atol + tol.rtol * s
    err = np.abs(g - w)
    bad = ~(err <= limit)
    if bad.any():
        idx = np.flatnonzero(bad)
        worst = idx[np.argmax(err[idx] / np.maximum(limit[idx], 1e-300))]
        return Verdict(False, f"{buf.name}: {idx.size} of {got.size} elements outside {tol.kind} tolerance (rtol={tol.rtol:g}, atol={tol.atol:g}); worst at [{worst}]: got {g[worst]!r}, want {w[worst]!r}, |err|={err[worst]:.3g} > {limit[worst]:.3g}")
    return Verdict(True)


def _compare_e4m3(buf: Buffer, got: np.ndarray, want: np.ndarray, steps: int) -> Verdict:
    """Codes against the reference rounded once to e4m3 (RNE, satfinite): at most `steps` apart."""
    if got.dtype != np_dtype("float8_e4m3"):
        return Verdict(False, f"{buf.name}: the e4m3_step tolerance needs float8_e4m3 output, got {got.dtype}")
    g = got.view(np.uint8)
    nan = (g & 0x7F) == 0x7F
    if nan.any():
        idx = np.flatnonzero(nan)
        return Verdict(False, f"{buf.name}: {idx.size} of {g.size} e4m3 codes are NaN (unwritten or not saturated); first at [{idx[0]}]: code {int(g[idx[0]]):#04x}")
    w = e4m3_codes(want)
    dist = np.abs(e4m3_ordinal(g) - e4m3_ordinal(w))
    bad = dist > steps
    if bad.any():
        idx = np.flatnonzero(bad)
        worst = idx[np.argmax(dist[idx])]
        return Verdict(False, f"{buf.name}: {idx.size} of {g.size} e4m3 codes are more than {steps} step(s) from the reference's; worst at [{worst}]: got {float(got[worst])!r} (code {int(g[worst]):#04x}), want {float(w.view(np_dtype('float8_e4m3'))[worst])!r} (code {int(w[worst]):#04x}), {int(dist[worst])} steps")
    return Verdict(True)


def compare_outputs(
    outputs: tuple[Buffer, ...],
    got: Mapping[str, np.ndarray],
    want: Mapping[str, np.ndarray],
    scales: Mapping[str, np.ndarray] | None = None,
) -> Verdict:
    """All outputs must pass; the first failure's reason is reported."""
    for buf in outputs:
        if buf.name not in want:
            return Verdict(False, f"the reference returned no {buf.name!r}")
        v = compare_buffer(buf, got[buf.name], want[buf.name], (scales or {}).get(buf.name))
        if not v.passed:
            return v
    return Verdict(True)
