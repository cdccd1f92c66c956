"""Pair families and data groups: families that share their kernel sources byte for byte.

A shape pair (`pair`) differs only in problem shape; a data group (`group`, the
diagnose set) differs only in the run-time data `make_inputs` draws from its
`[data]` table. Either way the intended winners differ: the shape or the data decides.

Why a check: a pair is only a fair question if nothing but the shape differs; a
hand-copied file that drifts would let the code, not the shape, pick the winner.
Shared means kernel.cu and every rewrites/*.cu (same names, same bytes), the
options (ids, texts, order), launch plans, buffers, gate shapes and targets.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from plugins.family.manifest import Candidate, Family


def source_hashes(fam: Family, with_reference: bool = False) -> dict[str, str]:
    """sha256 of each shared kernel source (and reference.py), by its path inside the family."""
    files = [fam.path / "kernel.cu", *sorted((fam.path / "rewrites").glob("*.cu"))]
    files += [fam.path / "reference.py"] if with_reference else []
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


def input_digest(fam: Family, seed: int = 0) -> str:
    """sha256 of the inputs make_inputs draws at the first gate shape: the data a member's `[data]` selects."""
    import numpy as np

    inputs = fam.make_inputs(np.random.default_rng(seed), fam.shapes("gate")[0])
    h = hashlib.sha256()
    for name in sorted(inputs):
        arr = np.ascontiguousarray(inputs[name])
        h.update(name.encode() + str(arr.dtype).encode() + arr.tobytes())
    return h.hexdigest()


def group_problems(members: list[Family]) -> list[str]:
    """Everything that keeps `members` from being a fair data group; [] when they are one.

    Shared: every .cu file and reference.py byte for byte, the options, plans, buffers,
    every size set, params, constraints, targets, computes, bound and the `[slip]` cues.
    Different: the `[data]` tables, the inputs they draw, and the intended winners.
    """
    out: list[str] = []
    names = [m.name for m in members]
    first = members[0]
    for m in members:
        if list(m.group) != list(first.group) or sorted(m.group) != sorted(names):
            out.append(f"{m.name} names group {list(m.group)}; every member names the same list {list(first.group)}")
        if m.set != first.set:
            out.append(f"{m.name} is in set {m.set!r}, {first.name} in {first.set!r}")
    ha = source_hashes(first, with_reference=True)
    for m in members[1:]:
        hb = source_hashes(m, with_reference=True)
        for name in sorted(set(ha) | set(hb)):
            if name not in ha or name not in hb:
                out.append(f"{name} exists only in {first.name if name in ha else m.name}")
            elif ha[name] != hb[name]:
                out.append(f"{name} differs between {first.name} and {m.name} (sha256 {ha[name][:12]} vs {hb[name][:12]}); "
                           "copy it byte for byte and put what differs in [data]")
        same = {
            "the start's and the options' ids, files, texts, launch plans, zero_before or allow_spills": (
                [_plan(c) for c in first.candidates], [_plan(c) for c in m.candidates]),
            "the buffers (dtype, count, role, tolerance)": (first.buffers, m.buffers),
            "the timing shape": (dict(first.timing), dict(m.timing)),
            "the gate shapes": ([dict(s) for s in first.gate], [dict(s) for s in m.gate]),
            "the tiny shapes": ([dict(s) for s in first.tiny], [dict(s) for s in m.tiny]),
            "the params": (dict(first.params), dict(m.params)),
            "the constraints": (first.constraints, m.constraints),
            "the targets": (first.targets, m.targets),
            "computes": (first.computes, m.computes),
            "bound": (first.bound, m.bound),
            "the [slip] cues": (first.slip, m.slip),
        }
        for what, (x, y) in same.items():
            if x != y:
                out.append(f"{what} differ between {first.name} and {m.name}; a data group shares everything but [data]")
    datas = [dict(m.data) for m in members]
    for i, a in enumerate(members):
        for b, db in zip(members[i + 1:], datas[i + 1:]):
            if datas[i] == db:
                out.append(f"{a.name} and {b.name} declare the same [data]; the members must differ in their data")
    if not out:
        digests = {m.name: input_digest(m) for m in members}
        if len(set(digests.values())) != len(members):
            out.append(f"make_inputs draws the same bytes for two members at the first gate shape ({digests}); "
                       "make it read [data]")
    winners = [m.intended_winner for m in members]
    if len(set(winners)) != len(winners):
        out.append(f"intended winners {dict(zip(names, winners))} repeat; every member of a data group intends a different winner")
    return out
