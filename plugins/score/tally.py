"""Score: per-item records in, counts, intervals and a paired test out.

Why pure functions: the end-of-run table, score.json and the leaderboard all
compute the same numbers from records read off disk (transcripts or junit), so
the arithmetic lives in one place and is tested against hand-computed cases.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Mapping

from plugins.items.options import ALL_CONDITIONS, CONDITIONS, conditions_for  # CONDITIONS: re-exported for the tables
# truncated: the reply was cut off by its token budget (scored, never correct, counted apart
# from misses); omitted: no model turn, or (omitted_for "context") the prompt could not fit.
OUTCOMES = ("correct", "wrong", "no-letter", "truncated", "omitted")
# Two-sided 95%: the normal quantile at 0.975.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Record:
    """One scored item in one pass, whatever it was read from."""

    item: str
    family: str
    condition: str
    order: str
    pass_index: int
    expected: str
    chosen: str | None
    strict: str | None  # what a plain `Answer: X` regex read
    outcome: str  # one of OUTCOMES
    key_measured: bool = True
    key: str = ""  # whose measurements are the answer key (GPU slug)
    key_fragile: bool = False  # the family's key is kept but its ratio interval reaches below 1.08
    family_set: str = "classic"  # the family set the item belongs to (classic, hard, diagnose)
    group: str = ""  # a data group's id, its members joined by '+' (plugins.score.groups scores the group)
    omitted_for: str = ""  # "context": omitted because the prompt could not fit the model's window

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"record {self.item}: outcome {self.outcome!r} is not one of {OUTCOMES}")
        if self.condition not in ALL_CONDITIONS:
            raise ValueError(f"record {self.item}: condition {self.condition!r} is not one of {ALL_CONDITIONS}")


def outcome_of(expected: str, chosen: str | None, truncated: bool = False) -> str:
    """The outcome of a turn that came back: no letter is a miss, never omitted; a turn cut
    off by its budget is truncated, whatever letter it had reached."""
    if truncated:
        return "truncated"
    if chosen is None:
        return "no-letter"
    return "correct" if chosen == expected else "wrong"


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def wilson(correct: int, n: int, z: float = Z95) -> Interval | None:
    """Wilson score interval; None when nothing was scored (n = 0)."""
    if n < 0 or correct < 0 or correct > n:
        raise ValueError(f"wilson: need 0 <= correct <= n, got {correct}/{n}")
    if n == 0:
        return None
    p = correct / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # Clamp float dust so 0/n and n/n give exactly 0 and 1 on their closed side.
    low = 0.0 if correct == 0 else max(0.0, centre - half)
    high = 1.0 if correct == n else min(1.0, centre + half)
    return Interval(low, high)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar (binomial sign test on the b + c discordant pairs)."""
    if b < 0 or c < 0:
        raise ValueError(f"mcnemar: discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return float(min(Fraction(1), 2 * Fraction(tail, 2**n)))


@dataclass(frozen=True)
class Cell:
    """One cell of the table: correct out of the items that came back."""

    correct: int
    n: int  # denominator: items scored (truncated included), omitted excluded
    no_letter: int
    omitted: int  # every omitted item, omitted_context included
    strict_correct: int
    truncated: int = 0
    omitted_context: int = 0  # omitted because the prompt could not fit the model's window

    @property
    def omitted_no_answer(self) -> int:
        return self.omitted - self.omitted_context

    @property
    def interval(self) -> Interval | None:
        return wilson(self.correct, self.n)

    @property
    def strict_interval(self) -> Interval | None:
        return wilson(self.strict_correct, self.n)


def cell(records: Iterable[Record]) -> Cell:
    rs = list(records)
    scored = [r for r in rs if r.outcome != "omitted"]
    return Cell(
        correct=sum(r.outcome == "correct" for r in scored),
        n=len(scored),
        no_letter=sum(r.outcome == "no-letter" for r in scored),
        omitted=len(rs) - len(scored),
        strict_correct=sum(r.strict is not None and r.strict == r.expected for r in scored),
        truncated=sum(r.outcome == "truncated" for r in scored),
        omitted_context=sum(r.outcome == "omitted" and r.omitted_for == "context" for r in rs),
    )


@dataclass(frozen=True)
class Paired:
    """Two conditions paired by family+order: b = only the first right, c = only the second right.

    For full vs source the first condition is source. `both` and `neither` are
    the concordant pairs, which the interval on the difference needs."""

    pairs: int
    b: int
    c: int
    p: float
    both: int = 0
    neither: int = 0

    @property
    def difference(self) -> float | None:
        """Second minus first, as a fraction of the pairs; None when there is no pair."""
        return (self.c - self.b) / self.pairs if self.pairs else None

    @property
    def interval(self) -> Interval | None:
        return newcombe_paired(self.both, self.c, self.b, self.neither)


def newcombe_paired(both: int, only_second: int, only_first: int, neither: int, z: float = Z95) -> Interval | None:
    """Newcombe's (1998) method 10 for a paired difference, second minus first:
    the Wilson intervals of the two marginal fractions, squared and added with a
    correction for their correlation. Why this one: it stays inside [-1, 1] and
    behaves at 0 or n discordant pairs, where a Wald interval collapses."""
    counts = (both, only_second, only_first, neither)
    if min(counts) < 0:
        raise ValueError(f"newcombe_paired: counts must be >= 0, got {counts}")
    n = sum(counts)
    if n == 0:
        return None
    # p1: the second condition's fraction right; p2: the first's (estimate p1 - p2)
    r, s, t, u = both, only_second, only_first, neither
    p1, p2 = (r + s) / n, (r + t) / n
    i1, i2 = wilson(r + s, n, z), wilson(r + t, n, z)
    assert i1 is not None and i2 is not None
    a = (r + s) * (t + u) * (r + t) * (s + u)
    b = r * u - s * t
    c = b - n / 2 if b > n / 2 else (b if b < 0 else 0.0)
    phi = c / math.sqrt(a) if a else 0.0
    d = p1 - p2
    dl1, du1, dl2, du2 = p1 - i1.low, i1.high - p1, p2 - i2.low, i2.high - p2
    low = d - math.sqrt(max(0.0, dl1 * dl1 - 2 * phi * dl1 * du2 + du2 * du2))
    high = d + math.sqrt(max(0.0, dl2 * dl2 - 2 * phi * dl2 * du1 + du1 * du1))
    return Interval(max(-1.0, low), min(1.0, high))


def paired_conditions(records: Iterable[Record], first: str, second: str) -> Paired:
    """Pair `first` and `second` by family+order (omitted items excluded) and test them."""
    by_key: dict[tuple[str, str], dict[str, Record]] = {}
    for r in records:
        if r.condition in (first, second) and r.outcome != "omitted":
            by_key.setdefault((r.family, r.order), {})[r.condition] = r
    b = c = both = neither = pairs = 0
    for pair in by_key.values():
        if len(pair) != 2:
            continue
        pairs += 1
        x, y = pair[first].outcome == "correct", pair[second].outcome == "correct"
        b += x and not y
        c += y and not x
        both += x and y
        neither += not x and not y
    return Paired(pairs=pairs, b=b, c=c, p=mcnemar_exact(b, c), both=both, neither=neither)


def paired_full_vs_source(records: Iterable[Record]) -> Paired:
    return paired_conditions(records, "source", "full")


@dataclass(frozen=True)
class FamilyScore:
    family: str
    conditions: Mapping[str, Cell]
    total: Cell
    key_fragile: bool = False


@dataclass(frozen=True)
class Score:
    """Everything the report shows for one pass."""

    pass_index: int
    conditions: Mapping[str, Cell]
    total: Cell
    full_minus_source: int | None  # None when either condition has nothing scored
    paired: Paired
    families: tuple[FamilyScore, ...]
    key_measured: bool


def score_pass(records: Iterable[Record]) -> Score:
    """Score the records of one pass (raises if they mix passes or repeat an item)."""
    rs = list(records)
    passes = {r.pass_index for r in rs}
    if len(passes) > 1:
        raise ValueError(f"score_pass: records mix passes {sorted(passes)}; use score_by_pass")
    seen: set[str] = set()
    for r in rs:
        if r.item in seen:
            raise ValueError(f"score_pass: item {r.item} appears twice in pass {r.pass_index}")
        seen.add(r.item)
    columns = conditions_for(sets_of(rs))  # the classic and hard sets: CONDITIONS; diagnose: no-cue third
    conds = {c: cell(r for r in rs if r.condition == c) for c in columns}
    families = []
    for fam in sorted({r.family for r in rs}):
        fr = [r for r in rs if r.family == fam]
        families.append(
            FamilyScore(fam, {c: cell(r for r in fr if r.condition == c) for c in columns}, cell(fr),
                        key_fragile=any(r.key_fragile for r in fr))
        )
    return Score(
        pass_index=passes.pop() if passes else 1,
        conditions=conds,
        total=cell(rs),
        full_minus_source=(conds["full"].correct - conds["source"].correct
                           if conds["full"].n and conds["source"].n else None),
        paired=paired_full_vs_source(rs),
        families=tuple(families),
        key_measured=all(r.key_measured for r in rs),
    )


def sets_of(records: Iterable[Record]) -> tuple[str, ...]:
    """The family sets the records cover, classic first, then by name."""
    return tuple(sorted({r.family_set for r in records}, key=lambda s: (s != "classic", s)))


def score_by_set(records: Iterable[Record], combine: bool = False) -> dict[str, tuple[Score, ...]]:
    """Scores per family set, each with its own denominators (a set's table is /30 per
    condition, /90 in all); with `combine`, also "all" over every set, only when asked."""
    rs = list(records)
    out = {s: score_by_pass(r for r in rs if r.family_set == s) for s in sets_of(rs)}
    if combine and len(out) > 1:
        out["all"] = score_by_pass(rs)
    return out


def score_by_pass(records: Iterable[Record]) -> tuple[Score, ...]:
    groups: dict[int, list[Record]] = {}
    for r in records:
        groups.setdefault(r.pass_index, []).append(r)
    return tuple(score_pass(groups[k]) for k in sorted(groups))


def cell_json(c: Cell) -> dict:
    iv, siv = c.interval, c.strict_interval
    return {
        "correct": c.correct,
        "n": c.n,
        "no_letter": c.no_letter,
        "truncated": c.truncated,
        "omitted": c.omitted,
        "omitted_context": c.omitted_context,
        "strict_correct": c.strict_correct,
        "wilson95_low": iv.low if iv else None,
        "wilson95_high": iv.high if iv else None,
        "strict_wilson95_low": siv.low if siv else None,
        "strict_wilson95_high": siv.high if siv else None,
    }


def score_json(s: Score) -> dict:
    return {
        "pass": s.pass_index,
        "key_measured": s.key_measured,
        "conditions": {c: cell_json(v) for c, v in s.conditions.items()},
        "total": cell_json(s.total),
        "full_minus_source": s.full_minus_source,
        "paired_full_vs_source": {"pairs": s.paired.pairs, "b_source_only": s.paired.b,
                                  "c_full_only": s.paired.c, "p_exact_mcnemar": s.paired.p},
        "families": {
            f.family: {"total": cell_json(f.total), **{c: cell_json(v) for c, v in f.conditions.items()},
                       "key_fragile": f.key_fragile}
            for f in s.families
        },
        "fragile_families": [f.family for f in s.families if f.key_fragile],
    }
