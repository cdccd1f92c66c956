"""Leaderboard: merge junit score sheets (models x passes) into one table and one chart.

Why junit: it is the score sheet every run already writes (also under xdist),
one testcase per item with its properties, so merging runs needs no other
state. Usage: python -m plugins.score.leaderboard reports/**/*.xml --out reports/leaderboard
"""
from __future__ import annotations

import argparse
import glob
import io
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from plugins.atomicio import write_bytes_atomic, write_text_atomic
from plugins.score.groups import GroupScore, score_groups_by_pass
from plugins.score.report import (conditions_of, fragile_lines, mean_row, score_headers, score_row, table_lines,
                                  unmeasured_banner)
from plugins.score.tally import CONDITIONS, Record, Score, score_by_pass, sets_of

REQUIRED = ("model", "item", "family", "condition", "order", "pass", "expected", "outcome", "key", "key_measured")


class LeaderboardError(ValueError):
    pass


@dataclass(frozen=True)
class Entry:
    """One model's runs (one mode, one key): a Score per pass."""

    model: str
    mode: str
    key: str
    scores: tuple[Score, ...]
    family_set: str = "classic"
    groups: tuple[GroupScore, ...] = ()  # the data-group tally per pass (the diagnose set)

    @property
    def label(self) -> str:
        return self.model + (" (two-step)" if self.mode == "two-step" else "")


def read_junit(path: Path) -> list[tuple[dict, Record]]:
    """(properties, record) for every scored testcase in one junit file; other testcases are skipped."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise LeaderboardError(f"{path}: not a readable junit XML file ({exc})") from None
    out = []
    for tc in root.iter("testcase"):
        props = {p.get("name"): p.get("value", "") for p in tc.iter("property")}
        if "outcome" not in props or "model" not in props:
            continue  # not an item test
        missing = [k for k in REQUIRED if k not in props]
        if missing:
            raise LeaderboardError(f"{path}: testcase {tc.get('name')!r} lacks propert(ies) {', '.join(missing)}; "
                                   "fix: rerun it with this version of SparkTrace")
        try:
            out.append((props, Record(
                item=props["item"], family=props["family"], condition=props["condition"], order=props["order"],
                pass_index=int(props["pass"]), expected=props["expected"], chosen=props.get("chosen") or None,
                strict=props.get("strict") or None, outcome=props["outcome"],
                key_measured=props["key_measured"] == "true", key=props["key"],
                key_fragile=props.get("key_fragile") == "true", family_set=props.get("set") or "classic",
                group=props.get("group") or "",
                omitted_for=props.get("omitted_for") or "",
            )))
        except ValueError as exc:
            raise LeaderboardError(f"{path}: testcase {tc.get('name')!r}: {exc}") from None
    return out


def collect(paths: Sequence[Path]) -> list[Entry]:
    """Group by model, mode and key; the same item-pass twice must agree (a rerun's copy), else it is an error."""
    groups: dict[tuple[str, str, str, str], dict[tuple[int, str], tuple[Record, Path]]] = {}
    for path in paths:
        for props, rec in read_junit(path):
            g = groups.setdefault((rec.family_set, props["model"], props.get("mode", "one-step"), rec.key), {})
            k = (rec.pass_index, rec.item)
            if k in g and g[k][0] != rec:
                raise LeaderboardError(
                    f"model {props['model']} pass {rec.pass_index} item {rec.item}: {g[k][1]} says "
                    f"{g[k][0].outcome}/{g[k][0].chosen}, {path} says {rec.outcome}/{rec.chosen}; "
                    "fix: pass only one of these runs (or give them different --passes)"
                )
            g[k] = (rec, path)
    order = {s: i for i, s in enumerate(sets_of(r for g in groups.values() for r, _ in g.values()))}
    return [Entry(m, mode, key, score_by_pass(r for r, _ in g.values()), family_set=fs,
                  groups=score_groups_by_pass(r for r, _ in g.values()))
            for (fs, m, mode, key), g in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1:]))]


def leaderboard_lines(entries: Sequence[Entry]) -> Iterator[str]:
    unmeasured = sorted({e.key for e in entries for s in e.scores if not s.key_measured})
    if unmeasured:
        yield unmeasured_banner(", ".join(unmeasured))
        yield ""
    yield ("SparkTrace leaderboard: correct letters per condition; one table per family set, "
           "one row per model and pass, then the mean.")
    for family_set in dict.fromkeys(e.family_set for e in entries):
        group = [e for e in entries if e.family_set == family_set]
        yield ""
        yield f"Set {family_set}:"
        yield ""
        scores = [s for e in group for s in e.scores]
        headers, dens = score_headers(scores, ("model", "key", "pass"))
        conds = conditions_of(scores)
        body = []
        for e in group:
            body += [score_row((e.label, e.key, str(s.pass_index)), s, dens, conds) for s in e.scores]
            if len(e.scores) > 1:
                body.append(mean_row((e.label, e.key, "mean"), e.scores))
        yield from table_lines(headers, body)
        yield from fragile_lines(scores)
        yield from group_board_lines(group)


def _paired_cell(p) -> str:
    if not p.pairs:
        return "n/a"
    iv = p.interval
    return f"{p.c - p.b:+d}/{p.pairs}" + (f" [{iv.low:+.2f}, {iv.high:+.2f}]" if iv else "") + f" p={p.p:.3g}"


def group_board_lines(entries: Sequence[Entry]) -> Iterator[str]:
    """The data-group headline per model and pass: all-right group-orders per condition, did the slip help
    (full − source, exact McNemar p, Newcombe interval), did it mislead, full − ablated, source consistency."""
    rows = [(e, g) for e in entries for g in e.groups]
    if not rows:
        return
    third = rows[0][1].ablated
    yield ""
    yield ("Data groups (group-orders: one group in one option order; all right = every member right; "
           "net all right / complete group-orders [95% Newcombe interval], exact McNemar p):")
    yield ""
    yield from table_lines(
        ("model", "key", "pass", "group-orders", "all right: source", "full", third, "slip helped (full − source)",
         "slip misled", f"full − {third}", "source consistency"),
        [[e.label, e.key, str(g.pass_index), str(g.tallies["source"].n + g.tallies["source"].incomplete),
          *(str(g.tallies[c].all_right) for c in g.conditions), _paired_cell(g.helped), f"{g.misled}/{g.misled_of}",
          _paired_cell(g.causal), f"{g.consistent}/{g.consistent_of}"] for e, g in rows])


def bar_values(e: Entry, conds: Sequence[str] = CONDITIONS) -> list[float | None]:
    """Fraction correct per condition, mean over the passes that scored it; None: no item of that
    condition was scored (absent, drawn as such, never as 0)."""
    out: list[float | None] = []
    for c in conds:
        cells = [s.conditions[c] for s in e.scores if c in s.conditions and s.conditions[c].n]
        out.append(sum(x.correct / x.n for x in cells) / len(cells) if cells else None)
    return out


ABSENT = "no items"


def chart_figure(entries: Sequence[Entry]):
    """Grouped bars: fraction correct per condition (mean over passes), one bar per model; a
    condition with no scored item gets a hatched outline and the words "no items"."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(6.0, 1.2 * len(entries) + 4), 4.5))
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(entries))
    conds = conditions_of([s for e in entries for s in e.scores])
    for i, e in enumerate(entries):
        xs = [j + (i - (len(entries) - 1) / 2) * width for j in range(len(conds))]
        ys = bar_values(e, conds)
        bars = ax.bar([x for x, y in zip(xs, ys) if y is not None], [y for y in ys if y is not None], width,
                      label=f"{e.label} [{e.key}, {e.family_set}]")
        colour = bars.patches[0].get_facecolor() if bars.patches else None
        for x, y in zip(xs, ys):
            if y is None:
                ax.bar([x], [1.0], width, fill=False, hatch="//", edgecolor=colour or "0.6", linewidth=0.8)
                ax.text(x, 0.5, ABSENT, rotation=90, ha="center", va="center", fontsize="small", color="0.3")
    ax.set_xticks(range(len(conds)), conds)
    ax.set_ylim(0, 1)
    ax.set_ylabel("fraction correct (mean over passes)")
    measured = all(s.key_measured for e in entries for s in e.scores)
    ax.set_title("SparkTrace: score by condition" + ("" if measured else " (KEY NOT MEASURED: dry run)"))
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def write_chart(entries: Sequence[Entry], path: Path) -> None:
    buf = io.BytesIO()
    chart_figure(entries).savefig(buf, format="png", dpi=100)
    write_bytes_atomic(path, buf.getvalue())


def expand(patterns: Sequence[str]) -> list[Path]:
    """Arguments as given, globbed here too (so `reports/**/*.xml` works without the shell's globstar)."""
    out: list[Path] = []
    for p in patterns:
        hits = sorted(glob.glob(p, recursive=True)) if glob.has_magic(p) else [p]
        if not hits:
            raise LeaderboardError(f"{p}: matches no file")
        out += [Path(h) for h in hits]
    return list(dict.fromkeys(out))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m plugins.score.leaderboard", description=__doc__.splitlines()[0])
    ap.add_argument("junit", nargs="+", help="junit XML files written by pytest --model ... --junitxml")
    ap.add_argument("--out", required=True, type=Path, help="folder for leaderboard.md and leaderboard.png")
    args = ap.parse_args(argv)
    try:
        entries = collect(expand(args.junit))
    except LeaderboardError as exc:
        ap.error(str(exc))
    if not entries:
        ap.error("no scored item in these files (were they written with --model and --junitxml?)")
    lines = list(leaderboard_lines(entries))
    md, png = args.out / "leaderboard.md", args.out / "leaderboard.png"
    write_text_atomic(md, "\n".join(lines) + f"\n\n![score by condition]({png.name})\n")
    write_chart(entries, png)
    sys.stdout.write("\n".join(lines) + f"\n\nwritten: {md} and {png}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
