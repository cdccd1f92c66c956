"""Build the report site: `python -m plugins.site reports/runs/* --out reports/site`.

Why a static site regenerated whole: it opens from file:// on any machine with
nothing fetched (no CDN, no server), and it is built into a fresh folder that
then replaces the old one, so a reader never sees half of one build and half of
another. A folder not built by this command is never replaced.
"""
from __future__ import annotations

import argparse
import functools
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from plugins.atomicio import write_text_atomic
from plugins.items.options import CONDITIONS, ORDERS, conditions_of
from plugins.site import charts, pages
from plugins.site.catalog import FamilyView, ItemIndex, load_families
from plugins.site.runs import Run, RunFolderError, expand, read_runs

TEMPLATES = Path(__file__).resolve().parent / "templates"
MARKER = ".sparktrace-site"  # written into every built site; only such a folder is replaced


class SiteError(ValueError):
    pass


def _env():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.globals.update(CONDITIONS=CONDITIONS, ORDERS=ORDERS, cond_cell=pages.cond_cell, colours={
        "ink": charts.INK, "grey": charts.GREY, "pale": charts.PALE, "green": charts.GREEN, "blue": charts.BLUE,
        "light_blue": charts.LIGHT_BLUE}, fmt_ms=charts.fmt_ms, OUTCOME_WORDS=pages.OUTCOME_WORDS,
        outcome_word=pages.outcome_word)
    env.filters.update(
        pct=lambda x: "n/a" if x is None else f"{100 * x:.0f}%",
        num=lambda x, d=2: "n/a" if x is None else f"{x:.{d}f}",
        signed=lambda x: "n/a" if x is None else f"{x:+d}" if x else "0",
        gbs=lambda x: "n/a" if x is None else f"{x / 1e9:,.1f} GB/s",
        iv=lambda c: "" if c.low is None else f"{c.low:.2f}–{c.high:.2f}",
    )
    return env


def _shared(dens: set[int]) -> int | None:
    """A denominator every row shares goes in the header (as in score.md); none when it is 0."""
    return next(iter(dens)) if len(dens) == 1 and next(iter(dens)) > 0 else None


@dataclass
class Site:
    runs: list[Run]
    families: tuple[FamilyView, ...]
    index: ItemIndex
    out: Path

    def __post_init__(self) -> None:
        self.env = _env()
        self.env.globals["CONDITIONS"] = pages.site_conditions(self.runs)  # no-cue too once a diagnose run is read
        self.written: list[str] = []
        self.skipped: list[str] = []  # empty run folders left out, each with why
        self.sets = {f.name: f.set for f in self.families}

    def page(self, template: str, path: str, runs: Sequence[Run], title: str, **ctx: Any) -> None:
        root = pages.relpath_root(path)
        html = self.env.get_template(template).render(
            root=root, title=title, page=path, banners=pages.banners(runs, self.families),
            nav_runs=self.runs, **ctx)
        write_text_atomic(self.out / path, html)
        self.written.append(path)

    # -- pages -----------------------------------------------------------------

    def leaderboard(self) -> None:
        rows = pages.board_rows(self.runs)
        dens = {c: {r.conditions[c].n for r in rows} for c in pages.site_conditions(self.runs)}
        total_dens = {r.total.n for r in rows}
        self.page("leaderboard.html.j2", "index.html", self.runs, "SparkTrace leaderboard", rows=rows,
                  dens={c: _shared(d) for c, d in dens.items()}, total_den=_shared(total_dens),
                  chart=pages.scores_svg(self.runs), run_path=pages.run_path, row_label=pages.row_label,
                  groups=pages.group_views(self.runs), ablated=pages.ablated_label(self.runs))

    def heatmap(self) -> None:
        root = pages.relpath_root("heatmap.html")
        cols = pages.family_columns(self.runs, self.families)
        shown = pages.views(self.runs)
        cells = {(r.name, f): pages.heat_cells(r, f, root, shown) for r in self.runs for f, _ in cols}
        diffs = {(r.name, f): pages.diff_cell(r, f) for r in self.runs for f, _ in cols}
        models = [r for r in self.runs if not r.baseline]
        self.page("heatmap.html.j2", "heatmap.html", self.runs, "SparkTrace per-family heatmap", columns=cols,
                  cells=cells, diffs=diffs, views=shown, chart=pages.misses_svg(models or self.runs, cols),
                  misses_of=[r.model for r in (models or self.runs)],
                  run_path=pages.run_path, family_path=pages.family_path, row_label=pages.row_label)

    def slip_effect(self) -> None:
        views = pages.effects(self.runs)
        self.page("slip_effect.html.j2", "slip-effect.html", self.runs, "SparkTrace slip effect", effects=views,
                  chart=pages.effect_svg(views) if any(v.full_vs_source.pairs or v.nc_vs_full.pairs for v in views) else "",
                  run_path=pages.run_path, row_label=pages.row_label, ablated=pages.ablated_label(self.runs))

    def run_page(self, run: Run) -> None:
        path = pages.run_path(run)
        root = pages.relpath_root(path)
        self.page("run.html.j2", path, [run], f"{run.model}: SparkTrace run {run.name}", run=run,
                  CONDITIONS=pages.site_conditions([run]), ablated=pages.ablated_label([run]), groups=pages.group_views([run]),
                  lines={k: pages.family_lines(run, k, self.sets, root) for k in run.passes},
                  effects=[e for e in pages.effects([run])], disagreements=pages.disagreements(run),
                  no_letter=[t for t in pages.ordered_traces(run) if t.record.outcome == "no-letter"],
                  omitted=[t for t in pages.ordered_traces(run) if t.record.outcome == "omitted"],
                  truncated=[t for t in pages.ordered_traces(run) if t.record.outcome == "truncated"],
                  item_path=pages.item_path, family_path=pages.family_path, chart=pages.scores_svg([run]))

    def item_pages(self, run: Run) -> None:
        ordered = pages.ordered_traces(run)
        for i, t in enumerate(ordered):
            path = pages.item_path(run, t.record)
            p = pages.item_page(run, t, self.index, self.families)
            root = pages.relpath_root(path)
            p.prev = root + pages.item_path(run, ordered[i - 1].record) if i else None
            p.next = root + pages.item_path(run, ordered[i + 1].record) if i + 1 < len(ordered) else None
            self.page("item.html.j2", path, [run], f"{t.record.item} · {run.model}", p=p, rec=t.record,
                      run_path=pages.run_path, family_path=pages.family_path, row_label=pages.row_label)

    def family_pages(self) -> None:
        self.page("families.html.j2", "families/index.html", [], "SparkTrace families", families=self.families,
                  family_path=pages.family_path, slip_gpus=sorted({s.gpu for f in self.families for s in f.slips}))
        for fv in self.families:
            path = pages.family_path(fv.name)
            root = pages.relpath_root(path)
            using = [r for r in self.runs if any(t.record.family == fv.name for t in r.traces)]
            gpus = sorted({k.gpu for k in fv.keys} | {s.gpu for s in fv.slips}) or [pages.default_key(self.index.families_root)]
            self.page("family.html.j2", path, using, f"{fv.name}: SparkTrace family", fv=fv,
                      CONDITIONS=conditions_of(fv.set) if fv.family else CONDITIONS,
                      panels=pages.key_panels(fv), results=pages.results_for_family(using, fv.name, root),
                      launch_gpu=gpus[0], launch_text=functools.partial(pages.launch_text, families_root=self.index.families_root),
                      run_path=pages.run_path)

    def build(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TEMPLATES / "style.css", self.out / "style.css")
        self.leaderboard()
        self.heatmap()
        self.slip_effect()
        for r in self.runs:
            self.run_page(r)
            self.item_pages(r)
        self.family_pages()
        (self.out / MARKER).write_text("built by python -m plugins.site; replaced whole on each build\n")


def build_site(run_folders: Sequence[Path], out: Path, families_root: Path = Path("families"),
               slips_root: Path = Path("slips"), items: Sequence[Path] = ()) -> Site:
    """Read the runs, build the whole site beside `out`, then swap it in."""
    out = Path(out)
    if out.exists() and not (out / MARKER).is_file() and any(out.iterdir()):
        raise SiteError(f"--out {out}: exists and was not built by this command (no {MARKER}); fix: choose another "
                        "folder or empty it")
    if not Path(families_root).is_dir():
        raise SiteError(f"{families_root}: no such folder; fix: run from the repository root or pass --families")
    skipped: list[str] = []
    runs = read_runs(run_folders, skipped)
    families = load_families(Path(families_root), Path(slips_root))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        site = Site(runs, families, ItemIndex(Path(families_root), Path(slips_root), tuple(items)), tmp)
        site.build()
        old = out.with_name(f".{out.name}.old")
        if old.exists():
            shutil.rmtree(old)
        if out.exists():
            out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    site.out = out
    site.skipped = skipped
    return site


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m plugins.site", description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="run folders (reports/runs/<run>), or a folder of them (reports/runs)")
    ap.add_argument("--out", type=Path, default=Path("reports/site"), help="the site folder (default: reports/site)")
    ap.add_argument("--families", type=Path, default=Path("families"), help="families folder (default: families)")
    ap.add_argument("--slips", type=Path, default=Path("slips"), help="slips folder (default: slips)")
    ap.add_argument("--items", type=Path, action="append", default=[],
                    help="an items JSONL a run was scored on with --items (for its options and runtimes)")
    args = ap.parse_args(argv)
    try:
        site = build_site(expand(args.runs), args.out, args.families, args.slips, args.items)
    except (RunFolderError, SiteError, ValueError) as exc:
        ap.error(str(exc))
    items = sum(len(r.traces) for r in site.runs)
    for note in site.skipped:
        sys.stdout.write(f"note: {note}\n")
    sys.stdout.write(f"wrote {len(site.written)} pages for {len(site.runs)} run(s), {items} item page(s), "
                     f"{len(site.families)} families: open {site.out / 'index.html'}\n")
    return 0
