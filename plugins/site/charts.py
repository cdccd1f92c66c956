"""Charts as inline SVG, drawn by matplotlib, in the seed's colours.

Why inline SVG: the site opens from file:// with nothing fetched, text in the
charts stays text (fonttype none), and each chart is a plain string in its page.
The seed's colours carry through every chart and the CSS: black and grey for
what came before (no slip, baselines, the starting kernel), green for a correct
answer or the measured winner, blue for the slip.
"""
from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from typing import Sequence

from plugins.score.session import format_ms
from plugins.score.tally import Cell, Paired

INK = "#1a1a1a"  # prior work: the starting kernel, a wrong answer, source-only evidence
GREY = "#8c8c8c"  # prior work, lighter: baselines, no letter, other options
PALE = "#d9d9d9"
GREEN = "#2e8540"  # a correct answer, the measured winner
BLUE = "#1f5fbf"  # the slip (full)
LIGHT_BLUE = "#7fa7e0"  # the slip without its bank-conflict rows (no-conflicts) or its cue rows (no-cue)
CONDITION_COLOURS = {"source": INK, "full": BLUE, "no-conflicts": LIGHT_BLUE, "no-cue": LIGHT_BLUE, "total": GREEN}
CHANCE = 0.25  # one pick in four

_ID = re.compile(r'\bid="([^"]+)"')


def _svg(fig, prefix: str) -> str:
    """The figure as an <svg> element with ids made unique to this chart (several share a page)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": prefix}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    for old in sorted(set(_ID.findall(text)), key=len, reverse=True):
        new = f"{prefix}-{old}"
        text = text.replace(f'id="{old}"', f'id="{new}"').replace(f"#{old})", f"#{new})").replace(
            f'href="#{old}"', f'href="#{new}"')
    # scale with the page: keep the viewBox, drop the fixed size
    text = re.sub(r'<svg([^>]*?) width="[^"]+" height="[^"]+"', r'<svg\1 class="chart" role="img"', text, count=1)
    return text


def _figure(width: float, height: float):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    fig.patch.set_alpha(0)
    return fig


def _rows_figure(rows: int, row_in: float, left: float, right: float = 0.97, top_in: float = 0.25,
                 bottom_in: float = 0.8, width: float = 8.0):
    """A figure whose plot area grows with the rows while its margins stay fixed in inches."""
    height = top_in + row_in * max(1, rows) + bottom_in
    fig = _figure(width, height)
    fig.subplots_adjust(left=left, right=right, top=1 - top_in / height, bottom=bottom_in / height)
    return fig, height


def _legend(fig, ax, ncol: int, height: float) -> None:
    """The legend in one row under the x label, whatever the figure's height."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.04 / height), ncol=ncol,
                   frameon=False, fontsize=8.5)


def _style(ax) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.spines["left"].set_color(GREY)
    ax.spines["bottom"].set_color(GREY)
    ax.tick_params(colors=INK, labelsize=9)


@dataclass(frozen=True)
class ScoreRow:
    label: str
    baseline: bool
    cells: dict[str, Cell]  # source, full, the set's ablated condition (no-conflicts, no-cue), total


def scores_chart(rows: Sequence[ScoreRow], prefix: str = "scores") -> str:
    """Fraction correct per condition and in total, with Wilson 95% intervals; chance marked."""
    fig, height = _rows_figure(len(rows), 0.62, left=0.22)
    ax = fig.add_subplot()
    _style(ax)
    names = tuple(dict.fromkeys(n for r in rows for n in r.cells if n != "total")) + ("total",)
    offsets = {n: ((len(names) - 1) / 2 - i) * (0.68 / len(names)) for i, n in enumerate(names)}
    drawn: set[str] = set()
    for y, row in enumerate(reversed(rows)):
        for name in names:
            c = row.cells.get(name)
            if c is None or c.n == 0:
                continue
            iv = c.interval
            yy = y + offsets[name]
            ax.plot([iv.low, iv.high], [yy, yy], color=CONDITION_COLOURS[name], lw=1.6, solid_capstyle="butt")
            ax.plot([c.correct / c.n], [yy], "o" if name != "total" else "D", ms=5.5 if name != "total" else 6,
                    color=CONDITION_COLOURS[name], label=None if name in drawn else name)
            drawn.add(name)
    ax.axvline(CHANCE, color=GREY, lw=1, ls=(0, (4, 3)))
    ax.text(CHANCE, len(rows) - 0.45, " chance", color=GREY, fontsize=8, va="bottom")
    ax.set_yticks(range(len(rows)), [r.label for r in reversed(rows)])
    for tick, row in zip(ax.get_yticklabels(), reversed(rows)):
        tick.set_color(GREY if row.baseline else INK)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel("fraction correct (95% Wilson interval; omitted items excluded)", fontsize=9, color=INK)
    _legend(fig, ax, len(names), height)
    return _svg(fig, prefix)


@dataclass(frozen=True)
class EffectRow:
    label: str
    baseline: bool
    full_vs_source: Paired
    nc_vs_full: Paired


def _p(p: Paired) -> str:
    return f"{p.c - p.b:+d} of {p.pairs} pairs, p = {p.p:.3g}" if p.pairs else "no pairs"


def slip_effect_chart(rows: Sequence[EffectRow], prefix: str = "effect", ablated: str = "no-conflicts") -> str:
    """Per model: full minus source and no-conflicts minus full, paired by family and order,
    as fractions of the pairs with Newcombe 95% intervals; the exact McNemar p beside each."""
    fig, height = _rows_figure(len(rows), 0.75, left=0.2, right=0.72)
    ax = fig.add_subplot()
    _style(ax)
    series = (("full − source", "full_vs_source", BLUE, 0.16), (f"{ablated} − full", "nc_vs_full", LIGHT_BLUE, -0.16))
    drawn: set[str] = set()
    for y, row in enumerate(reversed(rows)):
        for name, attr, colour, off in series:
            p: Paired = getattr(row, attr)
            iv, d = p.interval, p.difference
            if iv is None or d is None:
                ax.text(0.02, y + off, f"  {name}: no pairs", fontsize=8, color=GREY, va="center")
                continue
            ax.plot([iv.low, iv.high], [y + off] * 2, color=colour, lw=1.8, solid_capstyle="butt")
            ax.plot([d], [y + off], "o", ms=6, color=colour, label=None if name in drawn else name)
            ax.text(1.04, y + off, _p(p), fontsize=8, color=INK, va="center", transform=ax.get_yaxis_transform())
            drawn.add(name)
    ax.axvline(0, color=INK, lw=1)
    ax.set_xlim(-1, 1)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_yticks(range(len(rows)), [r.label for r in reversed(rows)])
    for tick, row in zip(ax.get_yticklabels(), reversed(rows)):
        tick.set_color(GREY if row.baseline else INK)
    ax.set_xlabel("difference in fraction correct, paired by family and order (95% Newcombe interval)",
                  fontsize=9, color=INK)
    _legend(fig, ax, 2, height)
    return _svg(fig, prefix)


def misses_chart(families: Sequence[str], wrong: Sequence[int], no_letter: Sequence[int], prefix: str = "misses") -> str:
    """Where the points went: wrong letters and missing letters per family, all runs and passes."""
    fig, height = _rows_figure(len(families), 0.24, left=0.2)
    ax = fig.add_subplot()
    _style(ax)
    ys = list(range(len(families)))[::-1]
    ax.barh(ys, wrong, color=INK, height=0.6, label="wrong letter")
    ax.barh(ys, no_letter, left=wrong, color=GREY, height=0.6, label="no letter")
    for y, w, n in zip(ys, wrong, no_letter):
        if w + n:
            ax.text(w + n, y, f" {w + n}", va="center", fontsize=8, color=INK)
    ax.set_yticks(ys, families)
    ax.set_ylim(-0.6, len(families) - 0.4)
    top = max([w + n for w, n in zip(wrong, no_letter)] or [0])
    ax.set_xlim(0, max(1, top) * 1.12)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("items missed (all runs and passes)", fontsize=9, color=INK)
    _legend(fig, ax, 2, height)
    return _svg(fig, prefix)


@dataclass(frozen=True)
class Bar:
    label: str
    time_ms: float
    kind: str  # "start" | "winner" | "option"
    low_ms: float | None = None  # spread across blocks, when known
    high_ms: float | None = None


def runtimes_chart(bars: Sequence[Bar], prefix: str = "runtimes") -> str:
    """Measured median time per candidate (log scale when they span more than 20x), winner in green."""
    fig, height = _rows_figure(len(bars), 0.4, left=0.26, bottom_in=0.6)
    ax = fig.add_subplot()
    _style(ax)
    colour = {"start": INK, "winner": GREEN, "option": GREY}
    ys = list(range(len(bars)))[::-1]
    times = [b.time_ms for b in bars]
    ax.barh(ys, times, color=[colour[b.kind] for b in bars], height=0.6)
    for y, b in zip(ys, bars):
        if b.low_ms is not None and b.high_ms is not None:
            ax.plot([b.low_ms, b.high_ms], [y, y], color=INK if b.kind != "start" else GREY, lw=1.2)
        ax.text(max(b.time_ms, b.high_ms or 0.0), y, f" {fmt_ms(b.time_ms)} ms", va="center", fontsize=8.5, color=INK)
    positive = [t for t in times if t > 0]
    if positive and max(positive) / min(positive) > 20:
        ax.set_xscale("log")
        ax.set_xlim(min(positive) / 1.5, max(positive) * 6)
    else:
        ax.set_xlim(0, max(times or [1]) * 1.45)
    ax.set_yticks(ys, [b.label for b in bars])
    ax.set_ylim(-0.6, len(bars) - 0.4)
    ax.set_xlabel("median time of the launch plan, ms", fontsize=9, color=INK)
    return _svg(fig, prefix)


def fmt_ms(t: float | None) -> str:
    """The scorer's runtime format (as the two-step message writes it), n/a for nothing."""
    return "n/a" if t is None or not math.isfinite(t) else format_ms(t)
