"""The report site in a real browser: headless Chromium (Debian's `chromium`, driven by
Playwright) opens the site built from two real baseline runs of the committed families,
follows its links, and saves a screenshot of each page type under reports/screenshots/.

Skips with the reason when there is no Chromium or no Playwright. Set SPARKTRACE_CHROMIUM to
use another Chromium binary, and SPARKTRACE_SITE_RUNS (run folders, or reports/runs) to check
the site built from real runs instead, e.g. the local model's next to a baseline's.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plugins.site import pages
from plugins.site.build import build_site
from plugins.site.runs import expand

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "reports" / "screenshots"
BASELINES = ("random", "always-a")


def chromium() -> tuple[str | None, str]:
    """(the browser, or None and why not)."""
    if env := os.environ.get("SPARKTRACE_CHROMIUM"):
        return (env, "") if Path(env).is_file() else (None, f"SPARKTRACE_CHROMIUM={env}: no such file")
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    return (path, "") if path else (None, "no Chromium on this machine (apt-get install chromium, or set SPARKTRACE_CHROMIUM)")


@pytest.fixture(scope="module")
def browser():
    exe, why = chromium()
    if exe is None:
        pytest.skip(why)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed (pip install -r requirements.txt -c constraints.txt)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The two baselines scored on the committed families (intended key: nothing is measured yet),
    then the site built from their run folders; or the site of SPARKTRACE_SITE_RUNS."""
    tmp = tmp_path_factory.mktemp("site")
    if os.environ.get("SPARKTRACE_SITE_RUNS"):
        folders = expand(os.environ["SPARKTRACE_SITE_RUNS"].split())
        return build_site(folders, tmp / "site", ROOT / "families", ROOT / "slips")
    for model in BASELINES:
        run = tmp / "runs" / model
        r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--model", model,
                            "--key-intended", f"--run-dir={run}", f"--junitxml={run / 'junit.xml'}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert r.returncode in (0, 1) and (run / "junit.xml").is_file(), r.stdout[-3000:] + r.stderr[-3000:]
    # and a run on the SYNTHETIC FIXTURE items with every outcome: truncated, too long, no letter, reasoning
    from test_site import ITEMS, outcomes_run

    outcomes_run(tmp / "runs" / "fake-outcomes")
    return build_site([*(tmp / "runs" / m for m in BASELINES), tmp / "runs" / "fake-outcomes"], tmp / "site",
                      ROOT / "families", ROOT / "slips", items=[ITEMS])


class Page:
    """One browser tab that records every console error, page error and failed request."""

    def __init__(self, browser):
        self.tab = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.tab.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text} ({self.tab.url})")
                    if m.type == "error" else None)
        self.tab.on("pageerror", lambda e: self.errors.append(f"page error: {e} ({self.tab.url})"))
        self.tab.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))

    def open(self, path: Path) -> None:
        self.tab.goto(path.as_uri())

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.tab.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def banner(self, expected: bool = True) -> str:
        """The not-measured banner: visible when the page uses a run on an intended key, absent otherwise."""
        b = self.tab.locator('[data-banner="unmeasured"]')
        if not expected:
            assert b.count() == 0, f"{self.tab.url}: a not-measured banner, but every run here is measured"
            return ""
        assert b.first.is_visible(), f"{self.tab.url}: no visible not-measured banner"
        return b.first.inner_text()


def test_site_in_chromium(browser, site):
    out = site.out
    page = Page(browser)
    tab = page.tab
    unmeasured = any(not r.key_measured for r in site.runs)
    by_name = {r.name: r for r in site.runs}

    # leaderboard: one row per run and pass, the banner, sortable
    page.open(out / "index.html")
    if unmeasured:
        assert "NOT A MEASURED SCORE" in page.banner().upper()
    else:
        page.banner(False)
    assert tab.locator("#leaderboard tbody tr").count() == sum(len(r.scores) for r in site.runs)
    total = tab.locator("#leaderboard th", has_text="total").first
    total.click()
    total.click()
    assert tab.locator("#leaderboard th[aria-sort=descending]").count() == 1
    totals = [float(x) for x in tab.locator("#leaderboard tbody tr td:nth-child(7)").evaluate_all(
        "cells => cells.map(c => c.getAttribute('data-sort'))")]
    assert totals == sorted(totals, reverse=True)
    page.shot("leaderboard")

    # leaderboard -> model page -> item page -> back to the leaderboard
    run_link = tab.locator('a[data-link="run"]').first
    run = by_name[run_link.locator("xpath=ancestor::tr").get_attribute("data-run")]
    run_link.click()
    assert tab.url.endswith(f"/runs/{run.name}/index.html")
    page.banner(not run.key_measured)
    page.shot("run")
    tab.locator("a[data-item-link]").first.click()
    assert f"/runs/{run.name}/pass" in tab.url
    page.banner(not run.key_measured)
    assert tab.locator('[data-trace]').first.inner_text().strip()
    assert tab.locator('[data-section="key"]').is_visible()
    page.shot("item")
    tab.locator('.crumbs a[data-link="leaderboard"]').click()
    assert tab.url == (out / "index.html").as_uri()
    assert tab.locator("h1").inner_text() == "Leaderboard"

    # heatmap: one cell per model and family; every item reached from it shows its trace and key
    page.open(out / "heatmap.html")
    page.banner(unmeasured)
    families = sorted({t.record.family for r in site.runs for t in r.traces})
    cells = tab.locator('td.hm[data-view="all"]')
    assert cells.count() == len(site.runs) * len(families)
    assert sorted(cells.evaluate_all("cs => cs.map(c => c.dataset.cell)")) == sorted(
        f"{r.name}|{f}" for r in site.runs for f in families)
    page.shot("heatmap")
    tab.locator('label[data-view-label="source"]').click()
    assert tab.locator('table[data-view="source"]').is_visible()
    assert not tab.locator('table[data-view="all"]').is_visible()
    hrefs = tab.locator('table[data-view="all"] a.mark').evaluate_all("as => as.map(a => a.href)")
    assert len(hrefs) == sum(len(r.traces) for r in site.runs)
    for href in hrefs:
        tab.goto(href)
        run = by_name[href.split("/runs/")[1].split("/")[0]]
        trace = tab.locator('pre[data-trace="turn-1"]')
        if trace.count() == 0:  # an omitted item (no model turn) or a lost transcript says which
            assert tab.locator('[data-trace="missing"]').inner_text().strip(), href
        else:
            assert trace.inner_text().strip(), href
        assert tab.locator('[data-letter="key"]').inner_text().strip() in "ABCD", href
        assert tab.locator('[data-section="provenance"]').count() == 1, href
        page.banner(not run.key_measured)

    # slip effect, families, one family page
    page.open(out / "slip-effect.html")
    page.banner(unmeasured)
    page.shot("slip-effect")
    page.open(out / "families" / "index.html")
    assert tab.locator("#families tbody tr").count() == len(site.families)
    page.shot("families")
    fam = "clamp_smem" if "clamp_smem" in families else families[0]  # the family the seed walks through
    tab.locator(f'#families tr[data-family="{fam}"] a').click()
    assert tab.url.endswith(f"/families/{fam}.html")
    page.banner(any(not r.key_measured for r in site.runs if any(t.record.family == fam for t in r.traces)))
    page.shot("family")

    # the new outcomes: three counts on the leaderboard, a truncated item's page with its stop reason
    # (the fixture's run; a site of SPARKTRACE_SITE_RUNS has whatever its runs had)
    if "fake-outcomes" in by_name:
        page.open(out / "index.html")
        row = tab.locator('#leaderboard tr[data-run="fake-outcomes"]')
        assert [row.locator(f'[data-count="{k}"]').inner_text()
                for k in ("no-letter", "truncated", "omitted-context")] == ["1", "1", "1"]
        fake = by_name["fake-outcomes"]
        cut = next(t for t in fake.traces if t.record.outcome == "truncated")
        page.open(out / pages.item_path(fake, cut.record))
        assert tab.locator('[data-outcome="truncated"]').inner_text().startswith("truncated")
        assert tab.locator('[data-stop-reason="turn-1"]').inner_text() == "length"
        tab.locator('[data-reasoning="turn-1"] summary').click()
        assert "still weighing B" in tab.locator('[data-reasoning="turn-1"] pre').inner_text()
        page.shot("item-truncated")

    assert not page.errors, "\n".join(page.errors)
