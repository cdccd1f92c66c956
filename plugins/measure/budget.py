"""Which slips and repeats still fit before the pass's deadline, and how long each step may run.

Why: the GPU window is one command of a few minutes. Keys come first; slips
and the repeat fill what is left. A step is started only when the time left
exceeds a safe multiple of the longest such step seen so far (a stated guess
before the first), and every subprocess timeout is bounded by the deadline,
so a step that does not fit is skipped with that reason instead of failing,
and nothing runs into the hard stop. Pure: a clock is passed in.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

# Estimates, not measurements (docs/gpu-run.md): an ncu slip of one starting plan
# (a Python + CuPy process, loading the key's inputs, ~7 sections of replay) is guessed
# at 6-15 s; the first slip is planned at the upper guess, later ones at the longest
# seen, each less the input draw it made and plus the family's own where its child draws.
FIRST_SLIP_GUESS_S = 15.0
SAFETY = 1.5  # start a step only with SAFETY x its planned length left
MIN_STEP_TIMEOUT_S = 3.0  # a subprocess given less than this is not started at all


@dataclass(frozen=True)
class Decision:
    start: bool
    reason: str  # why not, or the arithmetic that allowed it
    left_s: float | None  # seconds to the deadline; None: no deadline


@dataclass
class StepBudget:
    """Plans one kind of step (slips, or repeats) against a deadline on a monotonic clock.

    `deadline` None means no limit; a deadline at or before now (a budget of 0)
    means no such step is started.
    """

    deadline: float | None
    clock: Callable[[], float]
    what: str = "slip"
    first_guess_s: float = FIRST_SLIP_GUESS_S
    safety: float = SAFETY
    durations: list[float] = field(default_factory=list)
    bases: list[float] = field(default_factory=list)  # each duration less its family's own input draw

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - self.clock()

    @property
    def planned_s(self) -> float:
        """What the next step is planned to take before its own inputs: the longest seen (less the
        inputs that step drew), else the first guess."""
        return max(self.bases) if self.bases else self.first_guess_s

    def decide(self, planned_s: float | None = None, extra_s: float = 0.0) -> Decision:
        """Whether a step planned at `planned_s` (default: `planned_s` plus `extra_s`, the seconds this
        family's own inputs take to draw where its step draws them) may start now."""
        left = self.left()
        plan = self.planned_s + extra_s if planned_s is None else planned_s
        if left is None:
            return Decision(True, "no deadline", None)
        need = self.safety * plan
        what = ('the longest ' + self.what + ' so far' if self.bases and planned_s is None else 'planned')
        if extra_s and planned_s is None:
            what += f", {extra_s:.1f} s of it this family's own input draw"
        basis = f"{self.safety:g} x {plan:.1f} s ({what})"
        if left < need:
            return Decision(False, f"time budget: {max(left, 0.0):.0f} s left before the deadline, under the {need:.0f} s "
                                   f"a {self.what} needs ({basis})", left)
        return Decision(True, f"{left:.0f} s left >= {basis} = {need:.0f} s", left)

    def record(self, seconds: float, extra_s: float = 0.0) -> None:
        """A step's duration; `extra_s` of it drew that family's inputs (not planned for other families)."""
        if seconds >= 0 and math.isfinite(seconds):
            self.durations.append(seconds)
            self.bases.append(max(seconds - max(extra_s, 0.0), 0.0))

    def timeout(self, default_s: float, reserve_s: float = 0.0) -> float | None:
        """`default_s` bounded by the time to the deadline less `reserve_s`; None when
        under MIN_STEP_TIMEOUT_S is left (the caller then skips the subprocess)."""
        left = self.left()
        t = default_s if left is None else min(default_s, left - reserve_s)
        return t if t >= MIN_STEP_TIMEOUT_S else None


def deadline_from_budget(budget_s: float | None, now: float) -> float | None:
    """The deadline on the monotonic clock: None (no limit) only when no budget was given;
    a budget of 0 is a deadline of now, so nothing optional starts."""
    if budget_s is None:
        return None
    if not budget_s >= 0 or math.isinf(budget_s):
        raise ValueError(f"a time budget must be a finite number of seconds >= 0, got {budget_s}")
    return now + float(budget_s)
