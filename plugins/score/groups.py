"""Data groups scored as groups: did the slip help, did it mislead, do the cue rows cause it.

Why a unit above the item: the members of a data group share their source prompt byte for
byte and differ only in data the slip shows, so a model that answers the same question the
same way gets at most one member right from the source alone. The question is answered per
group-order (one group in one option order): were all members right, some, or none, in each
condition. The headline is the change in all-right group-orders from source to full, with an
exact McNemar test and a Newcombe interval, both from plugins.score.tally.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

from tabulate import tabulate

from plugins.items.options import ORDERS, ablated_condition
from plugins.score.tally import Interval, Paired, Record, mcnemar_exact, wilson

GROUP_SEP = "+"  # a group id is its members joined by '+' (plugins.family.manifest.Family.group_id)


def members_of(group: str) -> tuple[str, ...]:
    return tuple(group.split(GROUP_SEP)) if group else ()


@dataclass(frozen=True)
class GroupOrder:
    """One data group in one option order: per condition, each member's outcome (True right,
    False scored and not right, None missing or omitted), and in source each member's letter."""

    group: str
    order: str
    members: tuple[str, ...]
    outcomes: Mapping[str, tuple[bool | None, ...]]
    source_letters: tuple[str | None, ...]

    def right(self, condition: str) -> int | None:
        """Members right in `condition`, None when a member's item is missing or omitted there."""
        got = self.outcomes.get(condition, ())
        return None if len(got) != len(self.members) or None in got else sum(got)

    def kind(self, condition: str) -> str:
        """all | some | none | incomplete."""
        k = self.right(condition)
        return "incomplete" if k is None else "all" if k == len(self.members) else "none" if k == 0 else "some"


@dataclass(frozen=True)
class Tally:
    """Group-orders of one condition by how many members were right."""

    all_right: int
    some_right: int
    none_right: int
    incomplete: int

    @property
    def n(self) -> int:
        """Complete group-orders (every member scored)."""
        return self.all_right + self.some_right + self.none_right


@dataclass(frozen=True)
class GroupScore:
    """The group tally of one pass (one family set)."""

    pass_index: int
    conditions: tuple[str, str, str]  # source, full, the set's ablated condition
    tallies: Mapping[str, Tally]
    helped: Paired  # all right, paired by group-order: source first, full second (difference: full − source)
    misled: int  # group-orders with a member right in source and none in full
    misled_of: int  # group-orders complete in both source and full
    causal: Paired  # all right: the ablated condition first, full second (difference: full − ablated)
    consistent: int  # source group-orders where every member got the same letter
    consistent_of: int  # complete source group-orders
    rows: tuple[GroupOrder, ...]

    @property
    def ablated(self) -> str:
        return self.conditions[2]

    @property
    def consistency_interval(self) -> Interval | None:
        return wilson(self.consistent, self.consistent_of)


def group_orders(records: Iterable[Record]) -> list[GroupOrder]:
    """Every (group, order) the grouped records of one pass cover, sorted."""
    by: dict[tuple[str, str, str, str], Record] = {}
    keys: set[tuple[str, str]] = set()
    for r in records:
        if r.group:
            by[(r.group, r.order, r.condition, r.family)] = r
            keys.add((r.group, r.order))
    out = []
    for group, order in sorted(keys, key=lambda k: (k[0], ORDERS.index(k[1]) if k[1] in ORDERS else 9)):
        members = members_of(group)
        conds = sorted({c for (g, o, c, _f) in by if (g, o) == (group, order)})
        outcomes = {}
        for c in conds:
            got: list[bool | None] = []
            for m in members:
                r = by.get((group, order, c, m))
                got.append(None if r is None or r.outcome == "omitted" else r.outcome == "correct")
            outcomes[c] = tuple(got)
        letters = tuple((by[(group, order, "source", m)].chosen if (group, order, "source", m) in by else None)
                        for m in members)
        out.append(GroupOrder(group, order, members, outcomes, letters))
    return out


def _paired(rows: Sequence[GroupOrder], first: str, second: str) -> Paired:
    """All-right in `first` vs in `second`, over the group-orders complete in both."""
    b = c = both = neither = 0
    pairs = [r for r in rows if r.right(first) is not None and r.right(second) is not None]
    for r in pairs:
        x, y = r.kind(first) == "all", r.kind(second) == "all"
        b += x and not y
        c += y and not x
        both += x and y
        neither += not x and not y
    return Paired(pairs=len(pairs), b=b, c=c, p=mcnemar_exact(b, c), both=both, neither=neither)


def score_groups(records: Iterable[Record], pass_index: int | None = None) -> GroupScore | None:
    """The group tally of one pass's records (None when none of them belongs to a data group)."""
    rs = [r for r in records if r.group]
    if not rs:
        return None
    passes = {r.pass_index for r in rs}
    if len(passes) > 1:
        raise ValueError(f"score_groups: records mix passes {sorted(passes)}; use score_groups_by_pass")
    sets = sorted({r.family_set for r in rs})
    if len(sets) > 1:
        raise ValueError(f"score_groups: grouped records of several sets {sets}; score each set on its own")
    conditions = ("source", "full", ablated_condition(sets[0]))
    rows = group_orders(rs)
    tallies = {}
    for c in conditions:
        kinds = [r.kind(c) for r in rows]
        tallies[c] = Tally(kinds.count("all"), kinds.count("some"), kinds.count("none"), kinds.count("incomplete"))
    both = [r for r in rows if r.right("source") is not None and r.right("full") is not None]
    src = [r for r in rows if r.right("source") is not None]
    consistent = sum(1 for r in src if None not in r.source_letters and len(set(r.source_letters)) == 1)
    return GroupScore(
        pass_index=pass_index if pass_index is not None else passes.pop(),
        conditions=conditions, tallies=tallies,
        helped=_paired(rows, "source", "full"),
        misled=sum(1 for r in both if (r.right("source") or 0) > 0 and r.right("full") == 0), misled_of=len(both),
        causal=_paired(rows, conditions[2], "full"),
        consistent=consistent, consistent_of=len(src), rows=tuple(rows),
    )


def score_groups_by_pass(records: Iterable[Record]) -> tuple[GroupScore, ...]:
    by: dict[int, list[Record]] = {}
    for r in records:
        if r.group:
            by.setdefault(r.pass_index, []).append(r)
    return tuple(g for k in sorted(by) if (g := score_groups(by[k], k)) is not None)


# -- as data, lines and junit properties ---------------------------------------------


def _paired_json(p: Paired) -> dict:
    iv = p.interval
    return {"pairs": p.pairs, "b_first_only": p.b, "c_second_only": p.c, "both": p.both, "neither": p.neither,
            "difference": p.difference, "newcombe95_low": iv.low if iv else None, "newcombe95_high": iv.high if iv else None,
            "p_exact_mcnemar": p.p}


def group_json(g: GroupScore) -> dict:
    civ = g.consistency_interval
    return {
        "pass": g.pass_index,
        "unit": "group-order (one data group in one option order)",
        "conditions": list(g.conditions),
        "tally": {c: {"all_right": t.all_right, "some_right": t.some_right, "none_right": t.none_right,
                      "incomplete": t.incomplete, "group_orders": t.n} for c, t in g.tallies.items()},
        "slip_helped": {**_paired_json(g.helped), "first": "source", "second": "full",
                        "what": "group-orders all right in full minus all right in source"},
        "slip_misled": {"group_orders": g.misled, "of": g.misled_of,
                        "what": "group-orders with a member right in source and none in full"},
        "full_minus_ablated": {**_paired_json(g.causal), "first": g.ablated, "second": "full",
                               "what": f"group-orders all right in full minus all right in {g.ablated}"},
        "source_consistency": {"consistent": g.consistent, "of": g.consistent_of,
                               "wilson95_low": civ.low if civ else None, "wilson95_high": civ.high if civ else None,
                               "what": "source group-orders in which every member got the same letter"},
        "group_orders": [
            {"group": r.group, "order": r.order, "members": list(r.members),
             "right": {c: list(v) for c, v in r.outcomes.items()}, "source_letters": list(r.source_letters)}
            for r in g.rows
        ],
    }


def _diff(p: Paired) -> str:
    if not p.pairs:
        return "n/a (no complete group-order)"
    iv = p.interval
    shown = f"{p.c - p.b:+d} of {p.pairs} ({p.difference:+.2f}"
    return shown + (f", 95% {iv.low:+.2f} to {iv.high:+.2f})" if iv else ")")


def _lines(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Iterator[str]:
    yield from tabulate(rows, headers=list(headers), tablefmt="github", disable_numparse=True).splitlines()


def group_lines(scores: Sequence[GroupScore], family_set: str = "diagnose") -> Iterator[str]:
    """The group tables of a report: per pass, the tally per condition, the four answers, the group-orders."""
    for g in scores:
        yield ""
        yield (f"Data groups, set {family_set}, pass {g.pass_index}: a group-order is one data group in one option "
               "order; all right means every member answered right (omitted members make it incomplete).")
        yield ""
        yield from _lines(("condition", "group-orders", "all right", "some right", "none right", "incomplete"),
                          [[c, str(t.n), str(t.all_right), str(t.some_right), str(t.none_right), str(t.incomplete)]
                           for c, t in g.tallies.items()])
        yield ""
        civ = g.consistency_interval
        yield from _lines(("question", "answer", "exact McNemar p"), [
            ["did the slip help (all right: full − source)", _diff(g.helped),
             f"{g.helped.p:.4g} (b={g.helped.b}, c={g.helped.c})" if g.helped.pairs else "n/a"],
            ["did the slip mislead (a member right in source, none in full)", f"{g.misled} of {g.misled_of}", ""],
            [f"do the cue rows cause it (all right: full − {g.ablated})", _diff(g.causal),
             f"{g.causal.p:.4g} (b={g.causal.b}, c={g.causal.c})" if g.causal.pairs else "n/a"],
            ["source consistency (the same letter to every member)",
             f"{g.consistent} of {g.consistent_of}" + (f" (95% {civ.low:.2f}-{civ.high:.2f})" if civ else ""), ""],
        ])
        yield ""
        yield from _lines(("group", "order", *(f"{c} right" for c in g.conditions)),
                          [[r.group, r.order, *(_frac(r, c) for c in g.conditions)] for r in g.rows])


def _frac(r: GroupOrder, c: str) -> str:
    k = r.right(c)
    return "-" if k is None else f"{k}/{len(r.members)}"


def suite_properties(scores: Sequence[GroupScore], family_set: str = "diagnose") -> list[tuple[str, str]]:
    """The headline numbers as junit `<testsuite>` properties, one set per pass."""
    out: list[tuple[str, str]] = []
    for g in scores:
        pre = f"{family_set}.groups.pass{g.pass_index}."
        for c, t in g.tallies.items():
            out += [(f"{pre}{c}.all_right", str(t.all_right)), (f"{pre}{c}.some_right", str(t.some_right)),
                    (f"{pre}{c}.none_right", str(t.none_right)), (f"{pre}{c}.group_orders", str(t.n))]
        for name, p in (("slip_helped", g.helped), ("full_minus_ablated", g.causal)):
            iv = p.interval
            out += [(f"{pre}{name}.pairs", str(p.pairs)), (f"{pre}{name}.b", str(p.b)), (f"{pre}{name}.c", str(p.c)),
                    (f"{pre}{name}.difference", "" if p.difference is None else repr(p.difference)),
                    (f"{pre}{name}.newcombe95_low", "" if iv is None else repr(iv.low)),
                    (f"{pre}{name}.newcombe95_high", "" if iv is None else repr(iv.high)),
                    (f"{pre}{name}.p_exact_mcnemar", repr(p.p))]
        out += [(f"{pre}slip_misled", str(g.misled)), (f"{pre}slip_misled.of", str(g.misled_of)),
                (f"{pre}source_consistency", str(g.consistent)), (f"{pre}source_consistency.of", str(g.consistent_of))]
    return out
