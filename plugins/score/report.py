"""The score table, as lines: one generator feeds the terminal and the files.

Why a generator of lines (as syrupy's report does): the terminal reporter and
score.md show exactly the same text, and nothing is formatted twice.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from tabulate import tabulate

from plugins.atomicio import write_text_atomic

from plugins.score.groups import GroupScore, group_json, group_lines
from plugins.score.tally import CONDITIONS, Cell, Interval, Score, score_json

SCHEMA = "sparktrace.score/1"


def unmeasured_banner(key: str) -> str:
    return (
        f"NOT A MEASURED SCORE: the answer key ({key}) was not measured on a GPU; these items use the family "
        "author's intended winner (--key-intended), so this run only checks the pipeline."
    )


@dataclass(frozen=True)
class RunReport:
    """One run of one model: a Score per pass, plus notes on families left out."""

    model: str
    key_gpu: str
    mode: str  # "one-step" | "two-step"
    scores: tuple[Score, ...]
    notes: tuple[str, ...] = ()
    family_set: str = "classic"  # the family set scored, or "all" for the combined table (--combine-sets)
    groups: tuple[GroupScore, ...] = ()  # the data-group tally per pass (the diagnose set; plugins.score.groups)

    @property
    def key_measured(self) -> bool:
        return all(s.key_measured for s in self.scores)


def _den(cells: Sequence[Cell]) -> int | None:
    ns = {c.n for c in cells}
    return ns.pop() if len(ns) == 1 else None


def _frac(c: Cell, den: int | None) -> str:
    return str(c.correct) if den is not None else f"{c.correct}/{c.n}"


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+g}" if x else "0"


def _iv(iv: Interval | None) -> str:
    return "n/a" if iv is None else f"{iv.low:.2f}-{iv.high:.2f}"


def conditions_of(scores: Sequence[Score]) -> tuple[str, ...]:
    """The condition columns of these scores, in table order (the seed's three for classic and hard;
    the diagnose set's third is no-cue; a combined table has both)."""
    found = tuple(dict.fromkeys(c for s in scores for c in s.conditions))
    return found or CONDITIONS


def _cell(s: Score, c: str) -> Cell:
    return s.conditions.get(c) or Cell(0, 0, 0, 0, 0)


def score_headers(scores: Sequence[Score], label_headers: Sequence[str]) -> tuple[list[str], list[int | None]]:
    """The seed's columns: labels, source/30, full/30, no-conflicts/30, total/90, full-source,
    then what was not a scored letter, each counted apart (no-letter, truncated, omitted for
    context, omitted with no answer), and the strict total. A denominator shared by every row
    goes in the header."""
    conds = conditions_of(scores)
    cols = [[_cell(s, c) for s in scores] for c in conds] + [[s.total for s in scores]]
    dens = [_den(col) for col in cols]
    names = [*conds, "total"]
    strict = f"strict total/{dens[-1]}" if dens[-1] is not None else "strict total"
    return [*label_headers, *(f"{n}/{d}" if d is not None else n for n, d in zip(names, dens)),
            "full-source", *EXCEPTION_HEADERS, strict], dens


def score_row(labels: Sequence[str], s: Score, dens: Sequence[int | None], conds: Sequence[str] | None = None) -> list[str]:
    """One row under score_headers; `conds` are the table's condition columns (default: this score's)."""
    conds = conditions_of([s]) if conds is None else conds
    cells = [*(_cell(s, c) for c in conds), s.total]
    return [*labels, *(_frac(c, d) for c, d in zip(cells, dens)), _signed(s.full_minus_source),
            *(str(x) for x in exception_counts(s.total)),
            str(s.total.strict_correct) if dens[-1] is not None else f"{s.total.strict_correct}/{s.total.n}"]


# What was not a scored letter, each its own count: a miss without a letter, a reply cut off
# by its token budget, a prompt too long for the model's window, and no model turn at all.
EXCEPTION_HEADERS = ("no-letter", "truncated", "omitted: context", "omitted: no answer")


def exception_counts(c: Cell) -> tuple[int, int, int, int]:
    return c.no_letter, c.truncated, c.omitted_context, c.omitted_no_answer


def _mean_diff(xs: Sequence[int | None]) -> str:
    return "n/a" if any(x is None for x in xs) else f"{sum(xs) / len(xs):+.1f}"  # type: ignore[arg-type]


def mean_row(labels: Sequence[str], scores: Sequence[Score]) -> list[str]:
    """Means over passes (one decimal: a mean of counts is not a count)."""
    k = len(scores)

    def m(xs: Iterable[float]) -> str:
        return f"{sum(xs) / k:.1f}"

    return [*labels, *(m(_cell(s, c).correct for s in scores) for c in conditions_of(scores)),
            m(s.total.correct for s in scores), _mean_diff([s.full_minus_source for s in scores]),
            *(m(exception_counts(s.total)[i] for s in scores) for i in range(len(EXCEPTION_HEADERS))),
            m(s.total.strict_correct for s in scores)]


def table_lines(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Iterator[str]:
    yield from tabulate(rows, headers=list(headers), tablefmt="github", disable_numparse=True).splitlines()


def report_lines(rep: RunReport) -> Iterator[str]:
    """Every line of the report, first line the warning when the key was not measured."""
    if not rep.key_measured:
        yield unmeasured_banner(rep.key_gpu)
    what = "every set together" if rep.family_set == "all" else f"set {rep.family_set}"
    yield (f"SparkTrace score: model {rep.model}, {what}, key {rep.key_gpu} "
           f"({'measured' if rep.key_measured else 'NOT measured: intended winner'}), {rep.mode}, "
           f"{len(rep.scores)} pass{'es' if len(rep.scores) > 1 else ''}")
    yield ""
    headers, dens = score_headers(rep.scores, ("model", "pass"))
    conds = conditions_of(rep.scores)
    body = [score_row((rep.model, str(s.pass_index)), s, dens, conds) for s in rep.scores]
    if len(rep.scores) > 1:
        body.append(mean_row((rep.model, "mean"), rep.scores))
    yield from table_lines(headers, body)
    yield ""
    yield ("Truncated replies (cut off by their token budget) count in the denominator, never as correct; "
           "omitted items (no model turn, or a prompt too long for the model's window) are excluded.")
    yield ""
    yield "Wilson 95% intervals (fraction correct; omitted items excluded):"
    yield ""
    yield from table_lines(
        ("pass", *conds, "total", "strict total"),
        [[str(s.pass_index), *(_iv(_cell(s, c).interval) for c in conds), _iv(s.total.interval),
          _iv(s.total.strict_interval)] for s in rep.scores],
    )
    yield ""
    yield "Full vs source, paired by family and order (exact McNemar on the discordant pairs):"
    yield ""
    yield from table_lines(
        ("pass", "pairs", "b: only source right", "c: only full right", "p (two-sided)"),
        [[str(s.pass_index), str(s.paired.pairs), str(s.paired.b), str(s.paired.c), f"{s.paired.p:.4g}"]
         for s in rep.scores],
    )
    yield from group_lines(rep.groups, rep.family_set)
    for s in rep.scores:
        yield ""
        yield f"Per family, pass {s.pass_index} (correct out of the items scored):"
        yield ""
        yield from table_lines(
            ("family", *conds, "total", "95% interval", *EXCEPTION_HEADERS),
            [[fragile_label(f.family, f.key_fragile), *(f"{_fc(f, c).correct}/{_fc(f, c).n}" for c in conds),
              f"{f.total.correct}/{f.total.n}", _iv(f.total.interval), *(str(x) for x in exception_counts(f.total))]
             for f in s.families],
        )
    yield from fragile_lines(rep.scores)
    if rep.notes:
        yield ""
        yield "Notes from the item builder:"
        yield from (f"- {n}" for n in rep.notes)


def _fc(f, c: str) -> Cell:
    return f.conditions.get(c) or Cell(0, 0, 0, 0, 0)


def fragile_label(family: str, fragile: bool) -> str:
    return f"{family} (fragile key)" if fragile else family


def fragile_lines(scores: Sequence[Score]) -> Iterator[str]:
    """Under any table that counts items of families whose key is fragile: which ones, and what that means."""
    names = sorted({f.family for s in scores for f in s.families if f.key_fragile})
    if names:
        yield ""
        yield (f"Fragile keys ({len(names)}): {', '.join(names)}. Kept (runner-up median >= 1.08x the winner's) "
               "but the 95% interval on the per-block ratio reaches below 1.08; a rerun may drop them.")


def no_items_lines(model: str, key: str, notes: Sequence[str], built: int) -> Iterator[str]:
    """What to say when nothing was scored: why, and how to dry-run anyway."""
    if built:
        yield f"SparkTrace: no item of model {model} was scored in this run ({built} were built; none ran)."
        return
    yield f"SparkTrace: no item could be built on key {key}, so model {model} was not scored."
    yield ""
    # The table's shape with nothing in it: zero denominators, never zero scores.
    yield from table_lines(
        ("model", *(f"{c}/0" for c in CONDITIONS), "total/0", "full-source", *EXCEPTION_HEADERS),
        [[model, *("-" for _ in CONDITIONS), "-", "n/a", *("-" for _ in EXCEPTION_HEADERS)]],
    )
    yield ""
    yield from (f"- {n}" for n in notes) if notes else iter(["- the item builder gave no reason (is families/ empty?)"])
    yield ("Measure the families on a GPU (pytest -m measure), pick a measured key with --key GPU, or pass "
           "--key-intended for a dry run on each family's intended winner (not a score).")



def report_json(rep: RunReport) -> dict:
    head = {"warning": unmeasured_banner(rep.key_gpu)} if not rep.key_measured else {}
    groups = {"groups": [group_json(g) for g in rep.groups]} if rep.groups else {}
    return {**head, "schema": SCHEMA, "model": rep.model, "set": rep.family_set, "key": rep.key_gpu,
            "key_measured": rep.key_measured, "mode": rep.mode, "notes": list(rep.notes),
            "passes": [score_json(s) for s in rep.scores], **groups}


def reports_lines(reps: Sequence[RunReport]) -> Iterator[str]:
    """One report per family set, separated by a blank line."""
    for i, rep in enumerate(reps):
        if i:
            yield ""
        yield from report_lines(rep)


def reports_json(reps: Sequence[RunReport]) -> dict:
    """One set: that set's report. Several: each under `sets`, so no table mixes
    denominators unless the combined one ("all") was asked for."""
    if len(reps) == 1:
        return report_json(reps[0])
    first = reps[0]
    head = {"warning": unmeasured_banner(first.key_gpu)} if not all(r.key_measured for r in reps) else {}
    return {**head, "schema": SCHEMA, "model": first.model, "key": first.key_gpu,
            "key_measured": all(r.key_measured for r in reps), "mode": first.mode, "notes": list(first.notes),
            "sets": {r.family_set: report_json(r) for r in reps}}


def write_report(reps: RunReport | Sequence[RunReport], run_dir: Path) -> tuple[Path, Path]:
    """`score.md` and `score.json` in the run folder, each replaced atomically."""
    reps = [reps] if isinstance(reps, RunReport) else list(reps)
    md, js = Path(run_dir, "score.md"), Path(run_dir, "score.json")
    write_text_atomic(md, "\n".join(reports_lines(reps)) + "\n")
    write_text_atomic(js, json.dumps(reports_json(reps), indent=1) + "\n")
    return md, js
