"""The correctness gate: every candidate against the reference, on fresh seeds.

Why: the answer key only ranks candidates that are correct, and the gate itself
is tested by the deliberately wrong variants, which it must reject. The gate is
pytest-free and runs on any Executor: CuPy on a GPU, or the CPU emulator.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

import numpy as np

from plugins.cache.work import count
from plugins.family.dtypes import np_dtype
from plugins.gate.compare import Verdict, compare_outputs, poisoned
from plugins.family.manifest import Candidate, Family
from plugins.family.plan import Number

MIN_SEEDS = 3


class Executor(Protocol):
    """Runs a candidate's launch plan on host arrays and returns every buffer."""

    name: str
    sm_count: int

    def run(self, fam: Family, cand: Candidate, shape: Mapping[str, Number], buffers: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...


def fresh_seeds(n: int = MIN_SEEDS) -> tuple[int, ...]:
    """Seeds drawn from the OS, so every gate run sees inputs nobody tuned for."""
    return tuple(int.from_bytes(os.urandom(4), "little") for _ in range(n))


_SEEDS: dict[tuple[str, int], tuple[int, ...]] = {}


def family_seeds(family: str, n: int = MIN_SEEDS) -> tuple[int, ...]:
    """fresh_seeds drawn once per family in this process: every candidate of a family is gated on the
    same fresh inputs, so each reference output is computed once per family, shape and seed
    (make_buffers), not once per candidate."""
    if (family, n) not in _SEEDS:
        _SEEDS[(family, n)] = fresh_seeds(n)
    return _SEEDS[(family, n)]


def host_buffers(fam: Family, shape: Mapping[str, Number], seed: int) -> dict[str, np.ndarray]:
    """Host buffers for one run: inputs from the reference's make_inputs, every
    other buffer poisoned (NaN, or all bits set), so unwritten elements show."""
    inputs = fam.make_inputs(np.random.default_rng(seed), shape)
    counts = fam.buffer_counts(shape)
    buffers: dict[str, np.ndarray] = {}
    for b in fam.buffers:
        if b.role == "input":
            arr = np.ascontiguousarray(inputs[b.name], dtype=np_dtype(b.dtype)).reshape(-1)
            if arr.size != counts[b.name]:
                raise ValueError(f"{fam.path}/reference.py: make_inputs gave {arr.size} elements for {b.name!r}, family.toml says {counts[b.name]}; fix make_inputs or buffers.{b.name}.count")
            buffers[b.name] = arr
        else:
            buffers[b.name] = poisoned(b.dtype, counts[b.name])
    return buffers


_MADE: dict[tuple[str, tuple, int], tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]] = {}
_MADE_MAX = 512


def make_buffers(fam: Family, shape: Mapping[str, Number], seed: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """host_buffers plus the expected outputs and their error scales. The reference runs once per
    family, shape and seed in a process; every caller gets its own copy of the buffers (a run writes
    them) and read-only expected outputs and scales."""
    key = (_family_key(fam), tuple(sorted(shape.items())), seed)
    if key not in _MADE:
        ref = fam.reference_module()
        buffers = host_buffers(fam, shape, seed)
        count("reference")
        expected = ref.reference({k: v.copy() for k, v in buffers.items() if fam.buffer(k).role == "input"}, dict(shape))
        scales = {}
        if hasattr(ref, "error_scale"):
            scales = ref.error_scale({k: v.copy() for k, v in buffers.items() if fam.buffer(k).role == "input"}, dict(shape))
        if len(_MADE) >= _MADE_MAX:
            _MADE.pop(next(iter(_MADE)))
        _MADE[key] = (buffers, {k: _read_only(v) for k, v in expected.items()}, {k: _read_only(v) for k, v in scales.items()})
    buffers, expected, scales = _MADE[key]
    return {k: v.copy() for k, v in buffers.items()}, dict(expected), dict(scales)


def _family_key(fam: Family) -> str:
    """What a kept reference output depends on: the folder, the bytes of its reference.py and
    family.toml, the buffers and [data], so an edited family never reads a kept output."""
    parts = [str(fam.path.resolve())]
    for name in ("reference.py", "family.toml"):
        try:
            parts.append(hashlib.sha256((fam.path / name).read_bytes()).hexdigest())
        except OSError:
            parts.append("-")
    parts += [repr([(b.name, b.dtype, b.count, b.role) for b in fam.buffers]), repr(sorted(fam.data.items()))]
    return ":".join(parts)


def _read_only(value: object) -> object:
    """A kept reference output, frozen: a comparison that wrote into it would corrupt the next candidate's."""
    if not isinstance(value, np.ndarray):
        return value
    arr = value.copy()
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class GateResult:
    family: str
    candidate: str
    role: str
    passed: bool
    reason: str
    seeds: tuple[int, ...]
    shapes: tuple[Mapping[str, Number], ...]
    executor: str

    @property
    def as_expected(self) -> bool:
        """Rewrites and the start must pass; wrong variants must be rejected."""
        return self.passed != (self.role == "wrong")


def gate_candidate(fam: Family, cand: Candidate, executor: Executor, seeds: Sequence[int], shapes: Sequence[Mapping[str, Number]] | None = None) -> GateResult:
    """Run every gate shape with every seed; the first failure is the verdict."""
    shapes = tuple(shapes if shapes is not None else fam.shapes("gate"))
    verdict = Verdict(True)
    for shape in shapes:
        for seed in seeds:
            buffers, expected, scales = make_buffers(fam, shape, seed)
            for z in cand.zero_before:
                buffers[z][:] = 0
            try:
                got = executor.run(fam, cand, shape, buffers)
            except Exception as exc:  # a crash is a rejection with its reason
                verdict = Verdict(False, f"{type(exc).__name__}: {exc}")
            else:
                verdict = compare_outputs(fam.outputs, got, expected, scales)
            if not verdict.passed:
                size = ", ".join(f"{k}={v}" for k, v in shape.items())
                return GateResult(fam.name, cand.id, cand.role, False, f"[{size}; seed {seed}] {verdict.reason}", tuple(seeds), shapes, executor.name)
    return GateResult(fam.name, cand.id, cand.role, True, "", tuple(seeds), shapes, executor.name)
