"""What each page shows, as plain data: the templates only lay it out.

Why a separate module: the numbers on the pages (counts, intervals, paired
tests) come from plugins.score.tally exactly as score.md and the leaderboard
get them, and the tests check this data without parsing HTML.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from plugins.items.options import ALL_CONDITIONS, ORDERS, ablated_condition, conditions_for
from plugins.items.keys import KeyChoiceError, key_gpu, load_stand_in, resolve_key
from plugins.items.prompt import gpu_of_record, launch_plan_text
from plugins.score.extract import strict_letter
from plugins.score.report import unmeasured_banner
from plugins.score.groups import GroupScore
from plugins.score.tally import Cell, Paired, Record, cell, mcnemar_exact, paired_conditions
from plugins.site import charts
from plugins.site.catalog import FamilyView, ItemIndex, fragile_of, gpu_name, record_get, split_prompt
from plugins.site.runs import Run, Trace

EMPTY = Cell(0, 0, 0, 0, 0)


def site_conditions(runs: Sequence[Run]) -> tuple[str, ...]:
    """The condition columns of these runs: source, full, then each set's ablated condition
    (no-conflicts for classic and hard, no-cue for diagnose), the seed's three when no run has items."""
    return conditions_for(sorted({t.record.family_set for r in runs for t in r.traces}))


def views(runs: Sequence[Run]) -> tuple[str, ...]:
    return ("all", *site_conditions(runs))


def cond_cell(score: Any, condition: str) -> Cell:
    """A score's cell of `condition`, empty where its set has no such condition."""
    return score.conditions.get(condition) or EMPTY


OUTCOME_WORDS = {"correct": "correct", "wrong": "wrong letter", "no-letter": "no letter",
                 "truncated": "truncated (token budget)", "omitted": "omitted"}


def outcome_word(rec: Record) -> str:
    """The outcome as a reader reads it; an omission says why (the window, or no answer)."""
    if rec.outcome == "omitted":
        return "omitted: prompt too long" if rec.omitted_for == "context" else "omitted: no answer"
    return OUTCOME_WORDS[rec.outcome]


# -- paths ---------------------------------------------------------------------


def run_path(run: Run) -> str:
    return f"runs/{run.name}/index.html"


def item_path(run: Run, rec: Record) -> str:
    return f"runs/{run.name}/pass{rec.pass_index}/{rec.item}.html"


def family_path(name: str) -> str:
    return f"families/{name}.html"


# -- banners -------------------------------------------------------------------


@dataclass(frozen=True)
class Banner:
    kind: str  # "unmeasured" | "fragile" | "synthetic" | "problem"
    title: str
    text: str


def fragile_families(run: Run, families: Sequence[FamilyView]) -> list[str]:
    """Families whose key this run used is marked fragile: by the transcript's key block, else
    (measured runs) by the key file on disk."""
    out = set()
    by_name = {f.name: f for f in families}
    for t in run.traces:
        flag = t.record.key_fragile or fragile_of(t.key_info)
        if not flag and run.key_measured and (fv := by_name.get(t.record.family)):
            kv = fv.key(t.record.key)
            flag = kv.fragile if kv else None
        if flag:
            out.add(t.record.family)
    return sorted(out)


def synthetic_key(run: Run, families: Sequence[FamilyView]) -> bool:
    """A measured run whose key files on disk say SYNTHETIC in their provenance (a test's made-up key)."""
    if not run.key_measured:
        return False
    by_name = {f.name: f for f in families}
    for fam in {t.record.family for t in run.traces}:
        kv = by_name[fam].key(run.key) if fam in by_name else None
        if kv and kv.key and "SYNTHETIC" in repr(kv.key.record.get("provenance", "")):
            return True
    return False


def banners(runs: Sequence[Run], families: Sequence[FamilyView]) -> list[Banner]:
    """What a reader must not miss about the runs a page uses."""
    out = []
    unmeasured = [r for r in runs if not r.key_measured]
    if unmeasured:
        keys = ", ".join(sorted({r.key for r in unmeasured}))
        text = unmeasured_banner(keys)
        text = text.split(": ", 1)[1] if text.upper().startswith("NOT A MEASURED SCORE: ") else text
        out.append(Banner("unmeasured", "Not a measured score: the answer key was never timed on a GPU",
                          text[:1].upper() + text[1:] + " Runs on this key: "
                          + ", ".join(f"{r.model} ({r.name})" for r in unmeasured) + "."))
    fragile = {r.name: fragile_families(r, families) for r in runs}
    if any(fragile.values()):
        parts = "; ".join(f"{name}: {', '.join(fams)}" for name, fams in fragile.items() if fams)
        out.append(Banner("fragile", "Fragile key",
                          "Some families in these runs were kept on a fragile key: the runner-up's interval reaches "
                          f"below the 1.08 keep gate, so a re-measurement could change the winner ({parts})."))
    synthetic = [r for r in runs if r.synthetic or synthetic_key(r, families)]
    if synthetic:
        out.append(Banner("synthetic", "Synthetic fixture",
                          "Test-fixture runs on made-up items or keys (their key file says SYNTHETIC): "
                          + ", ".join(r.name for r in synthetic) + ". Nothing in them is a measurement."))
    problems = [f"{r.name}: {p}" for r in runs for p in r.problems]
    if problems:
        shown = problems[:5] + ([f"... and {len(problems) - 5} more"] if len(problems) > 5 else [])
        out.append(Banner("problem", "Incomplete run data", "; ".join(shown)))
    return out


# -- leaderboard ---------------------------------------------------------------


@dataclass(frozen=True)
class CellView:
    correct: int
    n: int
    low: float | None
    high: float | None

    @property
    def fraction(self) -> float | None:
        return self.correct / self.n if self.n else None


def cell_view(c: Cell, strict: bool = False) -> CellView:
    iv = c.strict_interval if strict else c.interval
    return CellView(c.strict_correct if strict else c.correct, c.n, iv.low if iv else None, iv.high if iv else None)


@dataclass(frozen=True)
class BoardRow:
    run: Run
    pass_index: int
    conditions: dict[str, CellView]
    total: CellView
    strict_total: CellView
    full_minus_source: int | None
    no_letter: int
    omitted: int  # with no answer (the server gave no turn)
    truncated: int = 0
    omitted_context: int = 0  # the prompt did not fit the model's window


def board_rows(runs: Sequence[Run]) -> list[BoardRow]:
    rows = []
    conds = site_conditions(runs)
    for r in runs:
        for s in r.scores:
            rows.append(BoardRow(r, s.pass_index, {c: cell_view(cond_cell(s, c)) for c in conds},
                                 cell_view(s.total), cell_view(s.total, strict=True), s.full_minus_source,
                                 s.total.no_letter, s.total.omitted_no_answer, s.total.truncated,
                                 s.total.omitted_context))
    return rows


def row_label(run: Run, pass_index: int | None = None) -> str:
    label = run.model + (" (two-step)" if run.mode == "two-step" else "")
    if pass_index is not None and len(run.scores) > 1:
        label += f" · pass {pass_index}"
    return label


def scores_svg(runs: Sequence[Run]) -> str:
    rows = [charts.ScoreRow(row_label(r, s.pass_index), r.baseline,
                            {**dict(s.conditions), "total": s.total})
            for r in runs for s in r.scores]
    return charts.scores_chart(rows) if rows else ""


# -- heatmap -------------------------------------------------------------------


@dataclass(frozen=True)
class Mark:
    """One item of one pass, as a small square that links to its page."""

    href: str
    outcome: str
    title: str
    letter: str


@dataclass(frozen=True)
class HeatCell:
    run: str
    family: str
    view: str
    correct: int
    n: int
    no_letter: int
    omitted: int
    marks: tuple[Mark, ...] = ()
    truncated: int = 0
    omitted_context: int = 0

    @property
    def fraction(self) -> float | None:
        return self.correct / self.n if self.n else None


@dataclass(frozen=True)
class DiffCell:
    run: str
    family: str
    pairs: int
    b: int  # only source right
    c: int  # only full right

    @property
    def net(self) -> int:
        return self.c - self.b


def family_columns(runs: Sequence[Run], families: Sequence[FamilyView]) -> list[tuple[str, str]]:
    """(family, set) for every family any run scored: classic first, then the other sets, by name."""
    sets = {f.name: f.set for f in families}
    for r in runs:  # a family no longer in families/: its set from the task name
        for t in r.traces:
            if t.record.family not in sets:
                task = str((t.transcript or {}).get("task", ""))
                m = re.match(r"kernel-compass-(?:(\w+)-)?(?:source|full|ablated)-", task)
                sets[t.record.family] = (m.group(1) if m and m.group(1) else "classic")
    names = sorted({t.record.family for r in runs for t in r.traces})
    return sorted(((n, sets.get(n, "?")) for n in names), key=lambda x: (x[1] != "classic", x[1], x[0]))


def _sort_key(rec: Record) -> tuple:
    return (rec.pass_index, ALL_CONDITIONS.index(rec.condition), ORDERS.index(rec.order))


def mark(run: Run, t: Trace, root: str = "") -> Mark:
    r = t.record
    got = r.chosen or "–"
    return Mark(root + item_path(run, r), r.outcome,
                f"{r.item} (pass {r.pass_index}): {outcome_word(r)}, chose {got}, key {r.expected}", got)


def heat_cells(run: Run, family: str, root: str = "", shown: Sequence[str] | None = None) -> dict[str, HeatCell]:
    traces = sorted((t for t in run.traces if t.record.family == family), key=lambda t: _sort_key(t.record))
    out = {}
    for view in shown or views([run]):
        ts = [t for t in traces if view == "all" or t.record.condition == view]
        c = cell(t.record for t in ts)
        out[view] = HeatCell(run.name, family, view, c.correct, c.n, c.no_letter, c.omitted,
                             tuple(mark(run, t, root) for t in ts), c.truncated, c.omitted_context)
    return out


def diff_cell(run: Run, family: str) -> DiffCell:
    """Full vs source for one family, paired by order within each pass, summed over passes."""
    pairs = b = c = 0
    for k in run.passes:
        p = paired_conditions((t.record for t in run.traces if t.record.family == family and t.record.pass_index == k),
                              "source", "full")
        pairs, b, c = pairs + p.pairs, b + p.b, c + p.c
    return DiffCell(run.name, family, pairs, b, c)


def misses_svg(runs: Sequence[Run], columns: Sequence[tuple[str, str]]) -> str:
    fams = [f for f, _ in columns]
    wrong = [sum(t.record.outcome == "wrong" for r in runs for t in r.traces if t.record.family == f) for f in fams]
    none = [sum(t.record.outcome == "no-letter" for r in runs for t in r.traces if t.record.family == f) for f in fams]
    return charts.misses_chart(fams, wrong, none) if fams else ""


# -- slip effect ---------------------------------------------------------------


@dataclass(frozen=True)
class EffectView:
    run: Run
    pass_index: int
    full_vs_source: Paired
    nc_vs_full: Paired  # full first, the set's ablated condition second (no-conflicts, or no-cue for diagnose)


def paired_full_vs_ablated(records: Sequence[Record]) -> Paired:
    """Full paired with each set's own ablated condition by family and order, summed over the sets
    (one set: exactly paired_conditions(records, "full", its ablated condition))."""
    parts = [paired_conditions([r for r in records if r.family_set == s], "full", ablated_condition(s))
             for s in sorted({r.family_set for r in records})] or [paired_conditions(records, "full", "no-conflicts")]
    b, c = sum(p.b for p in parts), sum(p.c for p in parts)
    return Paired(pairs=sum(p.pairs for p in parts), b=b, c=c, p=mcnemar_exact(b, c),
                  both=sum(p.both for p in parts), neither=sum(p.neither for p in parts))


def effects(runs: Sequence[Run]) -> list[EffectView]:
    out = []
    for r in runs:
        for k in r.passes:
            recs = [t.record for t in r.traces if t.record.pass_index == k]
            out.append(EffectView(r, k, paired_conditions(recs, "source", "full"), paired_full_vs_ablated(recs)))
    return out


def ablated_label(runs: Sequence[Run]) -> str:
    """What the ablated comparison is called on a page: its condition, or both of them."""
    thirds = site_conditions(runs)[2:]
    return " / ".join(thirds)


@dataclass(frozen=True)
class GroupView:
    run: Run
    score: GroupScore


def group_views(runs: Sequence[Run]) -> list[GroupView]:
    """The data-group tally of every run and pass (runs without data groups give none)."""
    return [GroupView(r, g) for r in runs for g in r.groups]


def effect_svg(views: Sequence[EffectView]) -> str:
    rows = [charts.EffectRow(row_label(v.run, v.pass_index), v.run.baseline, v.full_vs_source, v.nc_vs_full)
            for v in views]
    return charts.slip_effect_chart(rows, ablated=ablated_label([v.run for v in views])) if rows else ""


# -- item pages ----------------------------------------------------------------

_STRICT_SPOT = re.compile(r"Answer:\s*([ABCD])")  # where plugins.score.extract.strict_letter reads its letter


@dataclass(frozen=True)
class Segment:
    text: str
    kind: str = ""  # "" | "strict" (the match a strict scorer reads)


def trace_segments(text: str | None) -> list[Segment]:
    """The response with the strict scorer's match marked (only if it is the letter strict_letter read)."""
    if not text:
        return []
    m = _STRICT_SPOT.search(text)
    if m is None or m.group(1) != strict_letter(text):
        return [Segment(text)]
    return [Segment(text[: m.start()]), Segment(m.group(0), "strict"), Segment(text[m.end():])]


def explain_letters(tolerant: str | None, strict: str | None, text: str | None, outcome: str = "") -> str:
    """Why the tolerant extractor (the score) and the strict regex read what they read."""
    if outcome == "truncated":
        return ("The reply was cut off by its token budget before it finished, so no letter is scored: the item "
                "counts as truncated, apart from the misses. A reasoning model can spend the whole budget thinking; "
                "raise max_tokens and rerun with --refresh to ask it again.")
    if not text:
        return "The model returned no text, so neither extractor could read a letter."
    if tolerant is None and strict is None:
        return ("Neither extractor found an answer letter: the trace ends without an explicit answer, so the item "
                "counts as a miss (no letter).")
    if tolerant == strict:
        return f"Both read {tolerant}: the trace has a plain “Answer: {strict}” line and no later, different answer."
    if strict is None:
        return (f"The tolerant extractor read {tolerant}, from an explicit answer in another form (a bold or boxed "
                f"letter, “the answer is {tolerant}”, or a letter alone on the last line). The strict regex "
                "Answer:\\s*([ABCD]) found no match, so a strict scorer counts this item as missed.")
    if tolerant is None:
        return (f"The strict regex took {strict} from the first “Answer: {strict}”, but the tolerant extractor "
                "found no single explicit answer (alternatives such as “Answer: A or B”, an echoed list of options, "
                "or a letter inside code are not answers), so the item counts as no letter.")
    return (f"They differ. The strict regex takes the first “Answer: X” it meets ({strict}); the tolerant extractor "
            f"takes the last answer it accepts as explicit ({tolerant}), skipping alternatives (“A or B”, “A / B”), "
            "negations and letters inside code. The tolerant letter is the score.")


@dataclass(frozen=True)
class OptionRow:
    letter: str
    rewrite: str
    text: str
    time_ms: float | None
    speedup: float | None  # start time / this time, from the key file
    winner: bool
    runner_up: bool
    expected: bool
    chosen: bool
    first_choice: bool
    code: str = ""


@dataclass(frozen=True)
class Turn:
    index: int
    followup: str  # the message sent before this turn (two-step), '' for the first
    segments: list[Segment]
    response: str | None
    letter: str | None
    strict: str | None
    response_model: str
    tokens: str
    latency_s: float | None
    attempts: int | None
    started_utc: str
    stop_reason: str = ""  # the server's own word (finish_reason / stop_reason)
    truncated: bool = False
    reasoning: str = ""  # a separate reasoning channel: shown, never scored


@dataclass
class ItemPage:
    run: Run
    trace: Trace
    prompt: str
    prompt_parts: tuple[str, str, str]
    turns: list[Turn]
    explanation: str
    options: list[OptionRow]
    match_note: str
    verified: bool
    key: Mapping[str, Any]
    key_gpu_name: str
    fragile: bool | None
    runner_up_ratio: float | None
    ratio_source: str
    start_ms: float | None
    intended: str
    intended_reasoning: str
    runtimes_svg: str
    prev: str | None = None
    next: str | None = None
    family_known: bool = True
    set: str = ""
    task: str = ""


def _turns(transcript: Mapping | None) -> list[Turn]:
    out = []
    for i, t in enumerate((transcript or {}).get("turns") or [], 1):
        req = t.get("request") or []
        followup = req[-1]["content"] if i > 1 and req else ""
        pt, ct = t.get("prompt_tokens"), t.get("completion_tokens")
        out.append(Turn(i, followup, trace_segments(t.get("response")), t.get("response"), t.get("letter"),
                        t.get("strict_letter"), str(t.get("response_model") or ""),
                        "n/a" if pt is None or ct is None else f"{pt} in, {ct} out",
                        t.get("latency_s"), t.get("attempts"), str(t.get("started_utc") or ""),
                        str(t.get("stop_reason") or ""), bool(t.get("truncated")), str(t.get("reasoning") or "")))
    return out


def item_page(run: Run, t: Trace, index: ItemIndex, families: Sequence[FamilyView]) -> ItemPage:
    rec, data = t.record, t.transcript or {}
    turns = _turns(data)
    prompt = ""
    if data.get("turns"):
        req = data["turns"][0].get("request") or []
        prompt = req[0]["content"] if req else ""
    key = t.key_info
    m = index.match(rec.item, str(data.get("prompt_sha256", "")), rec.key, rec.key_measured)
    fv = next((f for f in families if f.name == rec.family), None)
    kv = fv.key(rec.key) if fv else None
    fk = kv.key if kv else None
    start_ms = None
    if fk is not None and fv and fv.family:
        start_ms = fk.times_ms.get(fv.family.start.id)
    options: list[OptionRow] = []
    ratio, ratio_source = None, ""
    if m.item is not None:
        times = dict(m.item.runtimes_ms)
        ranked = sorted((v, k) for k, v in times.items())
        winner = ranked[0][1] if ranked else ""
        runner = ranked[1][1] if len(ranked) > 1 else ""
        code = {c.id: c.code for c in fv.family.rewrites} if fv and fv.family else {}
        for o in m.item.options:
            tm = times.get(o.letter)
            options.append(OptionRow(
                o.letter, o.rewrite, o.text, tm, (start_ms / tm) if (start_ms and tm) else None,
                o.letter == winner, o.letter == runner, o.letter == rec.expected, o.letter == rec.chosen,
                data.get("first_choice") == o.letter and data.get("mode") == "two-step", code.get(o.rewrite, "")))
        if fk is not None and rec.key_measured and fk.ratio:
            ratio, ratio_source = fk.ratio, f"ranking.ratio in {kv.key.path.name if kv and kv.key else ''}"
        elif len(ranked) > 1 and ranked[0][0] > 0:
            ratio, ratio_source = ranked[1][0] / ranked[0][0], "computed from the runtimes above"
    svg = ""
    if options and all(o.time_ms is not None for o in options):
        # the same chart for every model's copy of this item (the pick is marked in the table): drawn once
        bars = ([charts.Bar("starting kernel", start_ms, "start")] if start_ms else []) + [
            charts.Bar(f"{o.letter}  {o.rewrite}", o.time_ms, "winner" if o.winner else "option")  # type: ignore[arg-type]
            for o in options]
        svg = _runtimes_svg(tuple(bars))
    fam = fv.family if fv else None
    return ItemPage(
        run=run, trace=t, prompt=prompt, prompt_parts=split_prompt(prompt), turns=turns,
        explanation=explain_letters(rec.chosen, rec.strict, turns[-1].response if turns else None, rec.outcome),
        options=options, match_note=m.note, verified=m.verified, key=key,
        key_gpu_name=gpu_name(families, rec.key) if rec.key_measured else _dry_run_gpu(families, rec.key),
        fragile=(None if not rec.key_measured else
                 True if rec.key_fragile or fragile_of(key) or (kv is not None and kv.fragile) else
                 fragile_of(key) if fragile_of(key) is not None else (kv.fragile if kv else None)),
        runner_up_ratio=ratio, ratio_source=ratio_source, start_ms=start_ms,
        intended=fam.intended_winner if fam else "", intended_reasoning=fam.intended_reasoning.strip() if fam else "",
        runtimes_svg=svg, family_known=fv is not None, set=fv.set if fv else "", task=str(data.get("task", "")),
    )


@functools.lru_cache(maxsize=512)
def _runtimes_svg(bars: tuple[charts.Bar, ...]) -> str:
    return charts.runtimes_chart(bars, prefix="item-runtimes")


def _dry_run_gpu(families: Sequence[FamilyView], key: str) -> str:
    """The device an unmeasured key's prompts named: a key file's, the stand-in's for its key, else the slug."""
    name = gpu_name(families, key)
    if name != key:
        return name
    try:
        stand_in = load_stand_in()
    except KeyChoiceError:
        return key
    return stand_in.gpu.name if key == stand_in.key else key


def default_key(families_root: Path) -> str:
    """The key a family page sizes launch plans for when the family has none: the dry run's choice."""
    try:
        return resolve_key(families_root, None, intended=True)
    except KeyChoiceError:  # several measured keys: any page may show the stand-in's sizes, labelled by key
        return load_stand_in().key


def ordered_traces(run: Run) -> list[Trace]:
    return sorted(run.traces, key=lambda t: (t.record.pass_index, t.record.family, ALL_CONDITIONS.index(t.record.condition),
                                             ORDERS.index(t.record.order)))


# -- run pages -----------------------------------------------------------------


@dataclass(frozen=True)
class FamilyLine:
    family: str
    set: str
    pass_index: int
    marks: dict[tuple[str, str], Mark]  # (condition, order) -> mark
    cell: Cell


def family_lines(run: Run, pass_index: int, sets: Mapping[str, str], root: str = "") -> list[FamilyLine]:
    out = []
    for fam in sorted({t.record.family for t in run.traces}):
        ts = [t for t in run.traces if t.record.family == fam and t.record.pass_index == pass_index]
        if not ts:
            continue
        out.append(FamilyLine(fam, sets.get(fam, "?"), pass_index, {(t.record.condition, t.record.order): mark(run, t, root) for t in ts},
                              cell(t.record for t in ts)))
    return out


def disagreements(run: Run) -> list[Trace]:
    """Items where the strict regex and the tolerant extractor read different letters."""
    return [t for t in ordered_traces(run) if t.record.outcome != "omitted" and t.record.strict != t.record.chosen]


# -- family pages --------------------------------------------------------------


@dataclass(frozen=True)
class CandidateRow:
    id: str
    role: str
    time_ms: float | None
    spread: float | None
    low_ms: float | None
    high_ms: float | None
    speedup: float | None
    bytes_per_s: float | None
    fraction_of_copy: float | None
    winner: bool
    runner_up: bool


@dataclass(frozen=True)
class KeyPanel:
    gpu: str
    gpu_name: str
    file: str
    error: str
    rows: list[CandidateRow]
    ranking: dict
    provenance: dict
    copy_bytes_per_s: float | None
    fragile: bool | None
    svg: str
    repeats: list[str]


def key_panels(fv: FamilyView) -> list[KeyPanel]:
    out = []
    fam = fv.family
    for kv in fv.keys:
        fk = kv.key
        if fk is None:
            out.append(KeyPanel(kv.gpu, kv.gpu, "", kv.error, [], {}, {}, None, None, "", [p.name for p in kv.repeats]))
            continue
        rec = fk.record
        cands = rec.get("candidates") or {}
        ids = [c.id for c in fam.candidates] if fam else list(cands)
        ids += [i for i in cands if i not in ids]
        rows = []
        for cid in ids:
            c = cands.get(cid) or {}
            samples = [float(x) for x in c.get("samples_ms") or []]
            rows.append(CandidateRow(
                cid, "start" if fam and cid == fam.start.id else "rewrite", _f(c.get("time_ms")), _f(c.get("spread")),
                min(samples) if samples else None, max(samples) if samples else None, _f(c.get("speedup_vs_start")),
                _f(c.get("bytes_per_s")), _f(c.get("fraction_of_copy")), cid == fk.winner, cid == fk.runner_up))
        bars = [charts.Bar(r.id, r.time_ms, "start" if r.role == "start" else "winner" if r.winner else "option",
                           r.low_ms, r.high_ms) for r in rows if r.time_ms is not None]
        ranking = {k: v for k, v in (rec.get("ranking") or {}).items() if not isinstance(v, (dict, list))}
        prov = {k: v for k, v in (rec.get("provenance") or {}).items()
                if k in ("date", "git_commit", "git_dirty", "driver", "cuda_runtime", "ncu", "command", "hostname")}
        out.append(KeyPanel(kv.gpu, str(record_get(rec, "gpu", "name") or kv.gpu), fk.path.as_posix(), "", rows,
                            ranking, prov, _f(rec.get("copy_bytes_per_s")), kv.fragile,
                            charts.runtimes_chart(bars, prefix=f"key-{kv.gpu}") if bars else "",
                            [p.name for p in kv.repeats]))
    return out


def _f(v: Any) -> float | None:
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None


def launch_text(fv: FamilyView, cand, gpu: str, families_root: Path | None = None) -> str:
    """The launch plan as the prompt prints it, sized for `gpu`: the device its key file (or, with
    `families_root`, any family's key file of that slug) reported, the stand-in for the dry run's key."""
    kv = fv.key(gpu)
    device = gpu_of_record(kv.key.record) if kv and kv.key else None
    try:
        device = device or (key_gpu(families_root, gpu) if families_root is not None else None)
        if device is None:
            stand_in = load_stand_in()
            device = stand_in.gpu if gpu == stand_in.key else None
        if device is None:
            return f"(launch plan not shown: no key file names the device of GPU key {gpu!r})"
        return launch_plan_text(fv.family, cand, device)
    except ValueError as exc:
        return f"(launch plan not shown: {exc})"


def results_for_family(runs: Iterable[Run], family: str, root: str = "") -> list[tuple[Run, FamilyLine]]:
    out = []
    for r in runs:
        for k in r.passes:
            lines = [ln for ln in family_lines(r, k, {}, root) if ln.family == family]
            out += [(r, ln) for ln in lines]
    return out


def relpath_root(page: str) -> str:
    """The prefix from a page (a path under the site) back to the site root: '', '../', ..."""
    depth = len(Path(page).parts) - 1
    return "../" * depth
