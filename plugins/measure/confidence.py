"""How sure a key is of its winner: per-block ratios, an interval on them, block agreement.

Why: the 1.08 gate compares two medians, and five blocks can pass it while
disagreeing. Every block times every candidate once, interleaved, so the
runner-up's time over the winner's time *within one block* is a paired ratio
that shares that block's clocks and thermal state. The interval is a 95%
Student-t interval on the mean of the log per-block ratios, exponentiated (an
interval on the geometric-mean ratio): t, not a bootstrap, because there are
only about five blocks (a bootstrap over five values has 126 distinct
resamples and understates the spread). A kept family whose interval reaches
below the gate is kept but marked fragile. Pure functions: CPU tests feed
block timings in.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

from plugins.measure.ranking import KEEP_RATIO

LEVEL = 0.95
METHOD = ("95% Student-t interval on the mean of ln(runner-up / winner) over the blocks in which both have a "
          "kept sample, exponentiated (a geometric-mean ratio interval); fragile when a kept family's lower end "
          f"is below the keep gate")
# Two-sided 95% quantiles of Student's t (the 0.975 quantile), by degrees of freedom;
# tests/measure/test_confidence.py checks each against a numerical integral of t's density.
T975 = {
    1: 12.706204736, 2: 4.302652730, 3: 3.182446305, 4: 2.776445105, 5: 2.570581836, 6: 2.446911851,
    7: 2.364624252, 8: 2.306004135, 9: 2.262157163, 10: 2.228138852, 11: 2.200985160, 12: 2.178812830,
    13: 2.160368656, 14: 2.144786688, 15: 2.131449546, 16: 2.119905299, 17: 2.109815578, 18: 2.100922040,
    19: 2.093024054, 20: 2.085963447, 21: 2.079613845, 22: 2.073873068, 23: 2.068657610, 24: 2.063898562,
    25: 2.059538553, 26: 2.055529439, 27: 2.051830516, 28: 2.048407142, 29: 2.045229642, 30: 2.042272456,
}
Z975 = 1.959963984540054


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (table to 30, then
    the Cornish-Fisher expansion, good to about 1e-5 there)."""
    if df < 1:
        raise ValueError(f"t quantile needs df >= 1, got {df}")
    if df in T975:
        return T975[df]
    z, v = Z975, float(df)
    return (z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3))


@dataclass(frozen=True)
class Confidence:
    """The confidence statement of one family's ranking."""

    winner: str | None
    runner_up: str | None
    blocks: tuple[int, ...]  # blocks in which both have a kept sample, in block order
    block_ratios: tuple[float, ...]  # runner-up / winner in each of those blocks
    block_winners: tuple[str, ...]  # the fastest rewrite in each of those blocks
    blocks_agree: bool  # every one of those blocks has the overall winner fastest
    interval: tuple[float, float] | None  # None with fewer than two paired blocks
    geometric_mean_ratio: float | None
    fragile: bool
    fragile_reason: str
    keep_ratio: float = KEEP_RATIO

    def as_record(self) -> dict:
        return {
            "method": METHOD,
            "level": LEVEL,
            "keep_ratio": self.keep_ratio,
            "winner": self.winner,
            "runner_up": self.runner_up,
            "blocks": list(self.blocks),
            "block_ratios": list(self.block_ratios),
            "block_winners": list(self.block_winners),
            "blocks_agree": self.blocks_agree,
            "interval": list(self.interval) if self.interval else None,
            "geometric_mean_ratio": self.geometric_mean_ratio,
            "fragile": self.fragile,
            "fragile_reason": self.fragile_reason,
        }


def ratio_interval(ratios: Sequence[float]) -> tuple[float, float] | None:
    """95% t-interval on the geometric mean of `ratios`; None for fewer than two."""
    if any(not r > 0 or math.isinf(r) for r in ratios):
        raise ValueError(f"block ratios must be positive and finite, got {list(ratios)}")
    if len(ratios) < 2:
        return None
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    half = t975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean - half), math.exp(mean + half)


def assess(
    block_samples: Mapping[str, Mapping[int, float]],
    rewrites: Sequence[str],
    winner: str | None,
    runner_up: str | None,
    kept: bool,
    keep_ratio: float = KEEP_RATIO,
) -> Confidence:
    """The confidence statement from each rewrite's kept samples by block.

    `block_samples[cid][block]` is that candidate's kept time in that block;
    `rewrites` is the forward option order (it breaks exact ties, as the ranking does).
    Only a kept family can be fragile: a dropped one has no answer to doubt.
    """
    if winner is None or runner_up is None:
        return Confidence(winner, runner_up, (), (), (), False, None, None, False,
                          "no runner-up, so no ratio" if kept else "", keep_ratio)
    w, r = block_samples.get(winner, {}), block_samples.get(runner_up, {})
    blocks = tuple(sorted(set(w) & set(r)))
    ratios = tuple(r[b] / w[b] for b in blocks)
    position = {c: i for i, c in enumerate(rewrites)}
    winners = []
    for b in blocks:
        present = [c for c in rewrites if b in block_samples.get(c, {})]
        winners.append(min(present, key=lambda c: (block_samples[c][b], position[c])))
    agree = bool(blocks) and all(x == winner for x in winners)
    interval = ratio_interval(ratios) if ratios else None
    gmean = math.exp(statistics.fmean(math.log(x) for x in ratios)) if ratios else None
    fragile, why = False, ""
    if kept:
        if interval is None:
            fragile, why = True, f"only {len(blocks)} block(s) with both {winner} and {runner_up} kept: no interval"
        elif interval[0] < keep_ratio:
            fragile, why = True, (f"the 95% interval on {runner_up}/{winner} is {interval[0]:.4f}-{interval[1]:.4f}, "
                                  f"reaching below {keep_ratio}")
    return Confidence(winner, runner_up, blocks, ratios, tuple(winners), agree, interval, gmean, fragile, why, keep_ratio)
