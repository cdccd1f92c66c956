"""Shortcut rules scored like models: what a reader wins without judging the mechanism.

Why: a question is only worth asking if no cheap cue answers it. Each rule
scores the four options on one surface feature (source length, distance from
the start, the option text's wording, counts from the binary's instruction
profile, launches) and picks the extreme. Ties go to the option shown first,
so a rule that cannot single out one option picks different rewrites in the
forward and mirror orders. `pytest --model heuristic:NAME` runs a rule through
the whole scoring pipeline (plugins.score.baselines); `source_score` is the
same pick computed directly, for the CI bounds on any family set: a rule
must score neither above half nor far below chance, since a rule far below
chance is a cue read backwards (its inverse would solve the set). In the
diagnose set the members of a data group share every byte a rule reads, so a
rule picks the same letter for each and is right on at most one: there the
check is that no rule is right on every member of any group (`group_hits`).
"""
from __future__ import annotations

import argparse
import difflib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from plugins.atomicio import write_text_atomic
from plugins.family.binary import profile_source
from plugins.family.compile import ARCHS
from plugins.family.manifest import DEFAULT_SET, SET_CHOICES, Candidate, Family, discover, selected_sets
from plugins.family.sass import KernelProfile
from plugins.items.build import build_items
from plugins.items.keys import KeyChoiceError, key_gpu, resolve_key
from plugins.items.options import LETTERS, ORDERS
from plugins.items.prompt import option_order

PREFIX = "heuristic:"
DEFAULT_ARCH = "sm_90"

# "Keeps the structure" markers: an option text that says it keeps, leaves
# unchanged or does the same as before. The structural-change rule picks the
# option whose text has the fewest of them (whole words, case-insensitive);
# most-keep-markers reads the same cue the other way round.
KEEP_MARKERS = ("keep", "keeps", "kept", "unchanged", "as before", "same", "still", "retains")
_KEEP = re.compile(r"\b(" + "|".join(re.escape(m) for m in KEEP_MARKERS) + r")\b", re.I)


@dataclass(frozen=True)
class OptionFacts:
    """What the rules may look at for one option."""

    text: str
    code: str  # the source as the prompt shows it (comments stripped)
    launches: int
    barriers: int  # BAR instructions in the SASS, summed over the plan's launches
    vector_memory: int  # global/shared loads and stores of 64 bits or wider, summed over launches


@dataclass(frozen=True)
class Rule:
    name: str
    describe: str
    value: Callable[[OptionFacts, str], float]  # (option, start code) -> the value ranked
    largest: bool  # pick the largest value (else the smallest)
    binary: bool = False  # reads the instruction profile (compiles and disassembles the options)
    # a second key for the options tied on the first: (option, start code) -> value, and its direction
    then: Callable[[OptionFacts, str], float] | None = None
    then_largest: bool = False


def code_length(code: str) -> int:
    """Characters of source with runs of whitespace counted once."""
    return len(re.sub(r"\s+", " ", code).strip())


def _lines(code: str) -> list[str]:
    return [ln.strip() for ln in code.splitlines() if ln.strip()]


def diff_lines(start: str, code: str) -> int:
    """Lines removed plus lines added going from the start's source to this one (difflib)."""
    return sum(1 for d in difflib.ndiff(_lines(start), _lines(code)) if d[:2] in ("+ ", "- "))


def keep_markers(text: str) -> int:
    return len(_KEEP.findall(text))


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("longest-source", "the longest source (characters, whitespace runs counted once)",
         lambda o, s: code_length(o.code), True),
    Rule("largest-diff", "the most lines removed plus added relative to the starting kernel",
         lambda o, s: diff_lines(s, o.code), True),
    Rule("shortest-source", "the shortest source (characters, whitespace runs counted once)",
         lambda o, s: code_length(o.code), False),
    Rule("structural-change", "the option text with the fewest keep-the-structure words "
         f"({', '.join(KEEP_MARKERS)})", lambda o, s: keep_markers(o.text), False),
    Rule("most-keep-markers", "the option text with the most keep-the-structure words "
         f"({', '.join(KEEP_MARKERS)})", lambda o, s: keep_markers(o.text), True),
    Rule("keep-then-shortest", "the option text with the most keep-the-structure words, "
         "ties broken by the shortest source", lambda o, s: keep_markers(o.text), True,
         then=lambda o, s: code_length(o.code), then_largest=False),
    Rule("most-vector-memory", "the most 64- and 128-bit global and shared loads and stores in the binary",
         lambda o, s: o.vector_memory, True, binary=True),
    Rule("fewest-launches", "the fewest kernel launches in the plan", lambda o, s: o.launches, False),
    Rule("fewest-barriers", "the fewest barrier (BAR) instructions in the binary, summed over launches",
         lambda o, s: o.barriers, False, binary=True),
)}


class HeuristicError(ValueError):
    """An unknown rule name, or an item the rule cannot read: says what to use."""


def rule_named(model: str) -> Rule:
    """`heuristic:NAME` (or NAME) as its rule."""
    name = model[len(PREFIX):] if model.startswith(PREFIX) else model
    if name not in RULES:
        raise HeuristicError(f"--model {model!r}: no such heuristic; use one of "
                             f"{', '.join(PREFIX + n for n in RULES)}")
    return RULES[name]


def pick(rule: Rule, options: Sequence[OptionFacts], start_code: str) -> tuple[int, list[float]]:
    """(index of the chosen option, each option's first-key value). Ties on the
    first key go to the second key when the rule has one, then to the first shown."""
    values = [float(rule.value(o, start_code)) for o in options]
    best = max(values) if rule.largest else min(values)
    tied = [i for i, v in enumerate(values) if v == best]
    if rule.then is not None and len(tied) > 1:
        second = {i: float(rule.then(options[i], start_code)) for i in tied}
        best2 = max(second.values()) if rule.then_largest else min(second.values())
        tied = [i for i in tied if second[i] == best2]
    return tied[0], values


def arch_for_key(key: str | None, families_root: Path = Path("families"), record: Mapping | None = None) -> str:
    """The compile target whose binary stands for a key's GPU: the compute capability its
    measurement records report (`key` None: the key a dry run would choose) when it is one of
    ARCHS, else sm_90 (stated in every trace)."""
    cc = ""
    if record is not None and isinstance(record.get("gpu"), Mapping):
        cc = str(record["gpu"].get("compute_capability", ""))
    if not cc:
        try:
            gpu = key_gpu(families_root, resolve_key(families_root, key, intended=True))
        except KeyChoiceError:  # several measured keys and none chosen, or an unreadable stand-in
            gpu = None
        cc = gpu.compute_capability if gpu is not None else ""
    arch = "sm_" + cc.replace(".", "") if cc else ""
    return arch if arch in ARCHS else DEFAULT_ARCH


def _plan_sum(cand: Candidate, profiles: Iterable[KernelProfile], cls: str) -> int:
    by = {p.kernel: p for p in profiles}
    return sum(by[launch.kernel].counts[cls] for launch in cand.launches if launch.kernel in by)


def option_facts(cand: Candidate, arch: str, binary: bool = True) -> OptionFacts:
    """The option's facts; without `binary` the SASS counts read 0 (nothing is compiled)."""
    profs = profile_source(cand.source, arch, cand.path.name) if binary else ()
    return OptionFacts(cand.text, cand.code, len(cand.launches), _plan_sum(cand, profs, "barriers"),
                       _plan_sum(cand, profs, "vector_memory"))


def family_arch(fam: Family, arch: str) -> str:
    """The family's own target for `arch`: itself, its `a` variant (sm_90 -> sm_90a), or the first target."""
    for t in (arch, arch + "a"):
        if t in fam.targets:
            return t
    return fam.targets[0]


def choose(rule: Rule, fam: Family, order: str, arch: str) -> tuple[str, list[float]]:
    """(letter, values in letter order) for one family in one option order."""
    arch = family_arch(fam, arch)
    options = [option_facts(c, arch, rule.binary) for c in option_order(fam, order)]
    i, values = pick(rule, options, fam.start.code)
    return LETTERS[i], values


@dataclass(frozen=True)
class SetScore:
    rule: str
    correct: int
    total: int
    hits: tuple[str, ...]  # "family/order" items the rule gets right


def source_score(rule: Rule, families: Sequence[Family], arch: str = DEFAULT_ARCH) -> SetScore:
    """The rule's score on the source items (both orders) with each family's
    intended winner as the key: the number the CI bound holds under half."""
    hits = []
    for fam in families:
        for order in ORDERS:
            letter, _ = choose(rule, fam, order, arch)
            if option_order(fam, order)[LETTERS.index(letter)].id == fam.intended_winner:
                hits.append(f"{fam.name}/{order}")
    return SetScore(rule.name, len(hits), 2 * len(families), tuple(hits))


@dataclass(frozen=True)
class GroupPick:
    """One rule on one data group in one order: each member's pick and whether it is that member's winner."""

    group: str
    order: str
    letters: tuple[str, ...]
    right: tuple[bool, ...]

    @property
    def all_right(self) -> bool:
        return all(self.right)


def group_picks(rule: Rule, families: Sequence[Family], answers: Mapping[tuple[str, str], str] | None = None,
                arch: str = DEFAULT_ARCH) -> list[GroupPick]:
    """The rule's pick for every member of every complete data group among `families`, per order;
    right against `answers` ((family, order) -> letter), else against each intended winner."""
    by = {f.name: f for f in families}
    out = []
    for group in dict.fromkeys(f.group for f in families if f.group):
        if not all(m in by for m in group):
            continue
        for order in ORDERS:
            letters, right = [], []
            for m in group:
                fam = by[m]
                letter, _ = choose(rule, fam, order, arch)
                want = (answers or {}).get((m, order)) or LETTERS[[c.id for c in option_order(fam, order)].index(fam.intended_winner)]
                letters.append(letter)
                right.append(letter == want)
            out.append(GroupPick("+".join(group), order, tuple(letters), tuple(right)))
    return out


def group_hits(rule: Rule, families: Sequence[Family], answers: Mapping[tuple[str, str], str] | None = None,
               arch: str = DEFAULT_ARCH) -> list[str]:
    """"group/order" where the rule is right on every member: none, in a fair set (identical
    sources give one pick, and the members' winners differ)."""
    return [f"{g.group}/{g.order}" for g in group_picks(rule, families, answers, arch) if g.all_right]


def trace(rule: Rule, letter: str, values: Sequence[float], arch: str) -> str:
    """What the baseline answers: the rule, each option's value, the pick."""
    shown = ", ".join(f"{lt}={v:g}" for lt, v in zip(LETTERS, values))
    return (f"Baseline {PREFIX}{rule.name}: picks {rule.describe}; ties go to the first option shown "
            f"(binary counts from {arch}).\nValues: {shown}.\nAnswer: {letter}")


# -- the README table ----------------------------------------------------------------

README_BEGIN = "<!-- heuristics:begin (python -m plugins.score.heuristics --readme README.md) -->"
README_END = "<!-- heuristics:end -->"


def key_answers(families_root: Path, key: str, intended: bool, sets: tuple[str, ...]) -> tuple[dict[tuple[str, str], str], bool]:
    """(family, order) -> the answer letter of its source item on `key`, and whether the key was measured."""
    items, _ = build_items(families_root, key, allow_intended=intended, sets=sets)
    src = [it for it in items if it.condition == "source"]
    return {(it.family, it.order): it.answer for it in src}, bool(src) and all(it.key.measured for it in src)


def table(families: Sequence[Family], answers: Mapping[tuple[str, str], str], arch: str) -> list[tuple]:
    """(rule, what it picks, correct, items) for every rule, over the families that have answers;
    where the families form data groups, also (group-orders with every member right, group-orders)."""
    fams = [f for f in families if all((f.name, o) in answers for o in ORDERS)]
    rows: list[tuple] = []
    for rule in RULES.values():
        right = sum(choose(rule, f, o, arch)[0] == answers[(f.name, o)] for f in fams for o in ORDERS)
        row: tuple = (PREFIX + rule.name, rule.describe, right, 2 * len(fams))
        if any(f.group for f in fams):
            picks = group_picks(rule, fams, answers, arch)
            row += (sum(g.all_right for g in picks), len(picks))
        rows.append(row)
    return rows


def table_markdown(rows: Sequence[tuple], key: str, measured: bool, arch: str, family_set: str) -> str:
    status = "measured" if measured else "NOT measured: the authors' intended winners"
    total = rows[0][3] if rows else 0
    grouped = bool(rows) and len(rows[0]) > 4
    head = f"| baseline | picks | source items right (of {total}) |"
    if grouped:
        head += f" group-orders with every member right (of {rows[0][5]}) |"
    lines = [f"Key {key} ({status}), {family_set} set, source items of both orders, binary counts from {arch}:", "",
             head, "|---|---|---|" + ("---|" if grouped else "")]
    lines += [f"| `{r[0]}` | {r[1]} | {r[2]} |" + (f" {r[4]} |" if grouped else "") for r in rows]
    return "\n".join(lines)


def readme_block(families_root: Path, key: str | None = None, family_set: str = "all") -> str:
    """The tables the README shows, one per family set (each scored on its own 30
    source items): the intended key, and the measured key once one exists (`key` None:
    plugins.items.keys.resolve_key's choice for a dry run)."""
    key = resolve_key(families_root, key, intended=True)
    arch = arch_for_key(key, families_root)
    blocks = []
    for one_set in selected_sets(family_set):
        sets = (one_set,)
        fams = [d.family for d in discover(families_root, sets) if d.family is not None]
        for intended in (True, False):
            answers, measured = key_answers(families_root, key, intended, sets)
            if answers and measured != intended:
                blocks.append(table_markdown(table(fams, answers, arch), key, measured, arch, one_set))
    return "\n\n".join(blocks)


def readme_shown(readme: str) -> str:
    """The block currently between the README's heuristics markers."""
    if README_BEGIN not in readme or README_END not in readme:
        raise HeuristicError(f"README has no '{README_BEGIN}' ... '{README_END}' block; fix: add both marker lines")
    return readme.split(README_BEGIN, 1)[1].split(README_END, 1)[0].strip("\n")


def splice(readme: str, block: str) -> str:
    """The README with the text between the heuristics markers replaced by `block`."""
    if README_BEGIN not in readme or README_END not in readme:
        raise HeuristicError(f"README has no '{README_BEGIN}' ... '{README_END}' block; fix: add both marker lines")
    head, rest = readme.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    return f"{head}{README_BEGIN}\n{block}\n{README_END}{tail}"


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m plugins.score.heuristics [--key GPU] [--set all] [--readme README.md]`:
    every heuristic's score on the source items of the intended key, and of the
    measured key when one exists."""
    ap = argparse.ArgumentParser(prog="python -m plugins.score.heuristics", description=main.__doc__.splitlines()[0])
    ap.add_argument("--families", type=Path, default=Path("families"))
    ap.add_argument("--key", help="the GPU key (default: the one measured, else the dry run's stand-in key)")
    ap.add_argument("--set", dest="st_set", default="all", choices=SET_CHOICES,
                    help="which family sets (default: all, one table each)")
    ap.add_argument("--readme", type=Path, help="rewrite the block between the heuristics markers of this file")
    args = ap.parse_args(argv)
    try:
        text = readme_block(args.families, args.key, args.st_set)
    except KeyChoiceError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    if args.readme is not None:
        write_text_atomic(args.readme, splice(args.readme.read_text(), text))
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
