"""From block samples to the answer key: medians, spreads, the ranking and the 1.08 gate.

Why pure: the keep gate and the noise flag decide which families a model is
asked about, so they are computed by plain functions that CPU tests feed with
timings of their own, never by code that needs a GPU.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Mapping, Sequence

KEEP_RATIO = 1.08  # the runner-up must be at least this many times slower than the winner


@dataclass(frozen=True)
class CandidateStats:
    """One timed candidate: its median over kept block samples and their spread."""

    id: str
    time_ms: float | None
    samples_ms: tuple[float, ...]
    spread: float | None  # (max - min) / median over kept samples

    @property
    def timed(self) -> bool:
        return self.time_ms is not None and self.time_ms > 0


def median(values: Sequence[float]) -> float:
    """The median; an empty sequence is an error, never a zero."""
    if not values:
        raise ValueError("median of no samples")
    return float(statistics.median(values))


def spread(values: Sequence[float]) -> float:
    """(max - min) / median: how far apart a candidate's blocks landed, relative to its time."""
    m = median(values)
    if m <= 0:
        raise ValueError(f"median {m} is not positive; event timings must be > 0")
    return (max(values) - min(values)) / m


def candidate_stats(cid: str, kept_samples_ms: Sequence[float]) -> CandidateStats:
    samples = tuple(float(s) for s in kept_samples_ms)
    if not samples:
        return CandidateStats(cid, None, (), None)
    return CandidateStats(cid, median(samples), samples, spread(samples))


@dataclass(frozen=True)
class Ranking:
    """The ranking of the rewrites that passed the gate, and the keep decision."""

    order: tuple[str, ...]  # timed rewrites, fastest first
    winner: str | None
    runner_up: str | None
    ratio: float | None  # runner_up time / winner time
    kept: bool
    reason: str
    noisy: bool
    noise_reason: str
    ties: tuple[tuple[str, str], ...] = ()

    def as_record(self) -> dict:
        return {
            "order": list(self.order),
            "winner": self.winner,
            "runner_up": self.runner_up,
            "ratio": self.ratio,
            "kept": self.kept,
            "reason": self.reason,
            "noisy": self.noisy,
            "noise_reason": self.noise_reason,
            "ties": [list(t) for t in self.ties],
        }


def rank(
    rewrites: Sequence[str],
    stats: Mapping[str, CandidateStats],
    not_timed: Mapping[str, str] | None = None,
    gate_problem: str = "",
    keep_ratio: float = KEEP_RATIO,
) -> Ranking:
    """Rank the timed rewrites and apply the keep gate.

    `rewrites` is the forward option order; it breaks exact ties so the order
    is deterministic (a tie can never be kept: its ratio is 1.0).
    `not_timed` maps rewrites that were gated out (or lost every sample) to
    why. `gate_problem` (a wrong variant that passed, a start that failed)
    drops the family whatever the timings say.
    The noise flag: the ratio's spread is taken as the sum of the winner's
    and runner-up's spreads (the worst case of two relative ranges); a family
    whose distance from the gate, |ratio / keep_ratio - 1|, is within it could
    land on the other side of 1.08 on a rerun.
    """
    not_timed = dict(not_timed or {})
    timed = [r for r in rewrites if r not in not_timed and r in stats and stats[r].timed]
    for r in rewrites:
        if r not in timed and r not in not_timed:
            not_timed[r] = "no kept timing samples"
    position = {r: i for i, r in enumerate(rewrites)}
    order = tuple(sorted(timed, key=lambda r: (stats[r].time_ms, position[r])))
    ties = tuple(
        (a, b) for i, a in enumerate(order) for b in order[i + 1:] if stats[a].time_ms == stats[b].time_ms
    )
    missing = "; ".join(f"{r}: {why}" for r, why in not_timed.items())
    if len(order) < 2:
        return Ranking(
            order=order, winner=order[0] if order else None, runner_up=None, ratio=None, kept=False,
            reason=f"dropped: only {len(order)} rewrite(s) timed, a ranking needs 2" + (f" ({missing})" if missing else ""),
            noisy=False, noise_reason="", ties=ties,
        )
    winner, runner = order[0], order[1]
    tw, tr = stats[winner].time_ms, stats[runner].time_ms
    ratio = tr / tw  # type: ignore[operator]
    partial = f"; ranked {len(order)} of {len(rewrites)} rewrites ({missing})" if missing else ""
    if gate_problem:
        kept, reason = False, f"dropped: {gate_problem}"
    elif ratio >= keep_ratio:
        kept, reason = True, f"kept: runner-up {runner} is {ratio:.4f}x the winner {winner}'s time (>= {keep_ratio})"
    elif (winner, runner) in ties:
        kept, reason = False, f"dropped: {winner} and {runner} tie at {tw} ms (ratio 1.0 < {keep_ratio})"
    else:
        kept, reason = False, f"dropped: runner-up {runner} is only {ratio:.4f}x the winner {winner}'s time (< {keep_ratio})"
    ratio_spread = (stats[winner].spread or 0.0) + (stats[runner].spread or 0.0)
    distance = abs(ratio / keep_ratio - 1.0)
    noisy = distance <= ratio_spread
    noise_reason = (
        f"the ratio is {distance:.4f} (relative) from {keep_ratio}, within the blocks' spread "
        f"{ratio_spread:.4f} ({winner} {stats[winner].spread:.4f} + {runner} {stats[runner].spread:.4f})"
        if noisy else ""
    )
    return Ranking(order, winner, runner, ratio, kept, reason + partial, noisy, noise_reason, ties)


@dataclass(frozen=True)
class Throughput:
    bytes_moved: int
    bytes_per_s: float | None
    fraction_of_copy: float | None


def throughput(bytes_moved: int, time_ms: float | None, copy_bytes_per_s: float | None, memory_bound: bool) -> Throughput:
    """Achieved bandwidth against a device copy measured in the same run (memory-bound only)."""
    if not memory_bound or time_ms is None or time_ms <= 0:
        return Throughput(bytes_moved, None, None)
    bps = bytes_moved / (time_ms / 1e3)
    frac = bps / copy_bytes_per_s if copy_bytes_per_s else None
    return Throughput(bytes_moved, bps, frac)


def speedup(start_ms: float | None, time_ms: float | None) -> float | None:
    """start time / this time; None when either is missing."""
    if not start_ms or not time_ms:
        return None
    return start_ms / time_ms


@dataclass(frozen=True)
class FamilyRanking:
    """Everything ranking adds to a measurement file."""

    stats: Mapping[str, CandidateStats]
    ranking: Ranking
    speedups: Mapping[str, float | None] = field(default_factory=dict)
    throughputs: Mapping[str, Throughput] = field(default_factory=dict)


def rank_family(
    start: str,
    rewrites: Sequence[str],
    kept_samples: Mapping[str, Sequence[float]],
    not_timed: Mapping[str, str] | None = None,
    gate_problem: str = "",
    bytes_moved: int = 0,
    copy_bytes_per_s: float | None = None,
    memory_bound: bool = False,
    keep_ratio: float = KEEP_RATIO,
) -> FamilyRanking:
    """Stats for every timed candidate (start included), the ranking, speedups and bandwidth."""
    stats = {cid: candidate_stats(cid, s) for cid, s in kept_samples.items()}
    problem = gate_problem
    if start not in stats or not stats[start].timed:
        problem = problem or f"the starting kernel {start!r} has no timing, so speedups have no reference"
    ranking = rank(rewrites, stats, not_timed, problem, keep_ratio)
    start_ms = stats[start].time_ms if start in stats else None
    speedups = {cid: speedup(start_ms, st.time_ms) for cid, st in stats.items()}
    thr = {cid: throughput(bytes_moved, st.time_ms, copy_bytes_per_s, memory_bound) for cid, st in stats.items()}
    return FamilyRanking(stats, ranking, speedups, thr)
