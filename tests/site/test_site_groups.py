"""The report site on a diagnose run: SYNTHETIC items of one made-up data group (fam_a+fam_b, not
families), scored by always-a through the real pipeline; the group tally, the no-cue column and
the ablated pairs on the pages are the ones the run wrote (score.json)."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

from plugins.items.build import Item, KeyInfo, Option, task_name, write_jsonl
from plugins.items.options import LETTERS, ORDERS
from plugins.score.tally import paired_conditions
from plugins.site import pages
from plugins.site.build import build_site
from plugins.site.catalog import slip_markers
from plugins.site.runs import expand

ROOT = Path(__file__).resolve().parents[2]
GROUP = "fam_a+fam_b"
# condition -> member -> the key's letter (always-a is right where it is "A")  -- SYNTHETIC
ANSWERS = {"source": {"fam_a": "A", "fam_b": "B"}, "full": {"fam_a": "A", "fam_b": "A"},
           "no-cue": {"fam_a": "B", "fam_b": "A"}}


def synthetic_items() -> list[Item]:
    out = []
    for cond, by in ANSWERS.items():
        for fam, answer in by.items():
            for order in ORDERS:
                start, end = slip_markers()
                slip = f"\n{start}\n\nSYNTHETIC slip text\n\n{end}\n" if cond != "source" else "\n"
                prompt = f"SYNTHETIC diagnose prompt, {cond} {order}\n{slip}the rest\n"
                out.append(Item(f"{fam}/{cond}/{order}", task_name(cond, order, "diagnose"), fam, cond, order, prompt,
                                hashlib.sha256(prompt.encode()).hexdigest(),
                                tuple(Option(x, f"rw_{x.lower()}", f"option {x}") for x in LETTERS), answer, {},
                                KeyInfo("h200", False, "SYNTHETIC fixture: NOT MEASURED"), set="diagnose", group=GROUP))
    return out


def test_site_shows_the_group_tally_the_run_wrote(project, tmp_path):
    write_jsonl(synthetic_items(), project.path / "items.jsonl")
    shutil.copy(ROOT / "tests" / "score" / "test_items_model.py", project.path / "tests")
    (project.path / "families").mkdir()
    r = project.runpytest_subprocess("-p", "no:cacheprovider", "--model", "always-a", "--items", "items.jsonl",
                                     "--key-intended", "--run-dir=runs/always-a", "--junitxml=runs/always-a/junit.xml",
                                     timeout=300)
    assert "Data groups, set diagnose" in r.stdout.str(), r.stdout.str()[-2000:]
    written = json.loads((project.path / "runs" / "always-a" / "score.json").read_text())["groups"][0]
    assert written["tally"]["full"]["all_right"] == 2 and written["tally"]["source"]["all_right"] == 0

    out = tmp_path / "site"
    site = build_site(expand([str(project.path / "runs")]), out, project.path / "families", project.path / "slips",
                      items=[project.path / "items.jsonl"])
    (run,) = site.runs
    (g,) = run.groups
    assert (g.helped.c, g.helped.pairs) == (written["slip_helped"]["c_second_only"], written["slip_helped"]["pairs"]) == (2, 2)
    assert (g.causal.c, g.misled, g.consistent) == (written["full_minus_ablated"]["c_second_only"],
                                                   written["slip_misled"]["group_orders"],
                                                   written["source_consistency"]["consistent"])
    index = (out / "index.html").read_text()
    assert "Data groups: did the slip help?" in index
    helped = re.search(r'data-question="helped">([^<]+)<', index).group(1)
    assert helped == "+2 of 2"
    assert re.search(r'data-all-right="no-cue">0<', index) and re.search(r'data-all-right="full">2<', index)
    assert ">no-cue" in index and "c-no-cue" in index, "the leaderboard has the diagnose set's third column"
    assert "Data groups" in (out / pages.run_path(run)).read_text()
    # the slip-effect pairs full with the set's own ablated condition, no-cue
    (e,) = pages.effects(site.runs)
    recs = [t.record for t in run.traces]
    assert e.nc_vs_full == paired_conditions(recs, "full", "no-cue") and e.nc_vs_full.pairs == 4
    assert "no-cue − full" in (out / "slip-effect.html").read_text()
    assert 'id="view-no-cue"' in (out / "heatmap.html").read_text()
    item = (out / pages.item_path(run, next(t.record for t in run.traces if t.record.condition == "no-cue"))).read_text()
    assert "the no-cue slip" in item


def test_a_data_group_members_slip_view_strikes_its_cue_rows(tmp_path):
    """The family page marks the lines its own ablated condition deletes: the declared cue rows (a
    SYNTHETIC slip: the layout-only cue fixture re-labelled inside tmp_path), not the bank-conflict rows."""
    import importlib.util

    from plugins.family.manifest import load_family
    from plugins.measure.ncu import FIXTURE_MARKER
    from plugins.site.catalog import _slips

    spec = importlib.util.spec_from_file_location("layout_slips", ROOT / "tests" / "items" / "layout_slips.py")
    layout = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layout)
    fam = load_family(ROOT / "tests" / "fixtures" / "datagroups" / "gather_sorted")
    (tmp_path / "h200").mkdir()
    text = layout.cue_csv(fam.slip).replace(FIXTURE_MARKER, "synthetic-site-test")
    (tmp_path / "h200" / "gather_sorted.csv").write_text(text)
    (view,) = _slips(tmp_path, "gather_sorted", fam)
    struck = [t.strip().split("  ")[0] for t, ablated in view.lines if ablated]
    assert view.error == "" and "L2 Hit Rate" in struck and "lts__t_sectors_srcunit_tex_op_read.sum" in struck
    assert not any("Bank Conflicts" in t for t, ablated in view.lines if ablated)
    (classic,) = _slips(tmp_path, "gather_sorted")
    assert any("Bank Conflicts" in t for t, ablated in classic.lines if ablated)
