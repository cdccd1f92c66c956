"""Pair families: two families that share their kernel sources byte for byte and differ
only in problem shape, with different intended winners (the shape decides).

Why a check: a pair is only a fair question if nothing but the shape differs; a
hand-copied file that drifts would let the code, not the shape, pick the winner.
Shared means kernel.cu and every rewrites/*.cu (same names, same bytes), the
options (ids, texts, order), launch plans, buffers, gate shapes and targets.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from plugins.family.manifest import Candidate, Family


def source_hashes(fam: Family) -> dict[str, str]:
    """sha256 of each shared kernel source, by its path inside the family."""
    files = [fam.path / "kernel.cu", *sorted((fam.path / "rewrites").glob("*.cu"))]
    return {p.relative_to(fam.path).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _plan(c: Candidate) -> tuple:
    return (c.id, Path(c.path).name, c.text, c.launches, c.zero_before, c.allow_spills)


def pair_problems(a: Family, b: Family) -> list[str]:
    """Everything that keeps `a` and `b` from being a fair shape pair; [] when they are one."""
    out: list[str] = []
    if a.pair != b.name or b.pair != a.name:
        out.append(f"{a.name} names pair {a.pair!r} and {b.name} names pair {b.pair!r}; each must name the other")
    if a.set != b.set:
        out.append(f"{a.name} is in set {a.set!r}, {b.name} in {b.set!r}")
    ha, hb = source_hashes(a), source_hashes(b)
    for name in sorted(set(ha) | set(hb)):
        if name not in ha or name not in hb:
            out.append(f"{name} exists only in {a.name if name in ha else b.name}")
        elif ha[name] != hb[name]:
            out.append(f"{name} differs between {a.name} and {b.name} (sha256 {ha[name][:12]} vs {hb[name][:12]}); copy it byte for byte")
    if [_plan(c) for c in a.candidates] != [_plan(c) for c in b.candidates]:
        out.append("the start's and the options' ids, files, texts, launch plans, zero_before or allow_spills differ")
    if a.buffers != b.buffers:
        out.append("the buffers (dtype, count, role, tolerance) differ")
    if [dict(s) for s in a.gate] != [dict(s) for s in b.gate]:
        out.append("the gate shapes differ; both members of a pair use the same gate shapes")
    if a.targets != b.targets:
        out.append(f"targets differ: {list(a.targets)} vs {list(b.targets)}")
    if dict(a.timing) == dict(b.timing):
        out.append("the timing shapes are the same, so the pair does not differ in shape")
    if a.intended_winner == b.intended_winner:
        out.append(f"both intend {a.intended_winner!r} to win; a pair's winners must differ")
    return out
