"""The report site from real pipeline runs: baselines on the synthetic items (every condition,
two passes, two-step) and on a made-up key of one real family. Every number on a page is
compared with what the run itself wrote (score.json), never with a typed-in value."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plugins.family.manifest import load_family
from plugins.items.keys import load_stand_in
from plugins.items.prompt import render_prompt
from plugins.items.options import CONDITIONS
from plugins.score.tally import paired_conditions
from plugins.site import pages
from plugins.site.build import MARKER, SiteError, build_site, main
from plugins.site.catalog import load_families, split_prompt
from plugins.site.runs import RunFolderError, expand, read_runs

ROOT = Path(__file__).resolve().parents[2]
ITEMS = ROOT / "tests" / "fixtures" / "scoring" / "synthetic_items.jsonl"  # SYNTHETIC FIXTURE


def scratch_project(where: Path) -> Path:
    """conftest.py, pytest.ini, models.toml and plugins/ copied (as tests/conftest.py's `project`
    does), with the item test module; module-scoped, so several tests share its runs."""
    for name in ("conftest.py", "pytest.ini", "models.toml"):
        shutil.copy(ROOT / name, where / name)
    shutil.copytree(ROOT / "plugins", where / "plugins", ignore=shutil.ignore_patterns("__pycache__"))
    (where / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "score" / "test_items_model.py", where / "tests")
    return where


def score(where: Path, *args: str) -> None:
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=where,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stdout + r.stderr  # 1: some letters are wrong; the sheet is written


@pytest.fixture(scope="module")
def synthetic_runs(tmp_path_factory):
    """Three runs on the synthetic items: always-a, random over two passes, random two-step."""
    where = scratch_project(tmp_path_factory.mktemp("project"))
    shutil.copy(ITEMS, where / "items.jsonl")
    for name, extra in (("always-a", ("--model", "always-a")), ("random", ("--model", "random", "--passes", "2")),
                        ("random-2step", ("--model", "random", "--two-step"))):
        score(where, *extra, "--items", "items.jsonl", f"--run-dir=runs/{name}", f"--junitxml=runs/{name}/junit.xml")
    return where


def _page(site_dir: Path, rel: str) -> str:
    return (site_dir / rel).read_text()


def test_pages_show_the_numbers_each_run_wrote(synthetic_runs, tmp_path):
    root = synthetic_runs
    out = tmp_path / "site"
    site = build_site(expand([str(root / "runs")]), out, ROOT / "families", ROOT / "slips", items=[root / "items.jsonl"])
    runs = {r.name: r for r in site.runs}
    assert sorted(runs) == ["always-a", "random", "random-2step"]
    for run in runs.values():
        written = json.loads((run.folder / "score.json").read_text())["passes"]
        assert [s.pass_index for s in run.scores] == [p["pass"] for p in written]
        for s, p in zip(run.scores, written):
            for c in CONDITIONS:
                got, want = s.conditions[c], p["conditions"][c]
                assert (got.correct, got.n, got.strict_correct, got.no_letter, got.omitted) == (
                    want["correct"], want["n"], want["strict_correct"], want["no_letter"], want["omitted"])
                assert got.interval.low == pytest.approx(want["wilson95_low"])
            pf = p["paired_full_vs_source"]
            assert (s.paired.b, s.paired.c, s.paired.p) == (pf["b_source_only"], pf["c_full_only"], pf["p_exact_mcnemar"])
    # the leaderboard has one row per run and pass, and prints those counts with their intervals
    html = _page(out, "index.html")
    rows = re.findall(r'<tr class="(?:baseline|model)" data-run="([^"]+)"', html)
    assert rows == ["always-a", "random", "random", "random-2step"]
    board = pages.board_rows(site.runs)
    for row in board:
        assert f"{row.total.low:.2f}–{row.total.high:.2f}" in html
    # the slip-effect page pairs full with source and no-conflicts with full, as tally does
    effects = pages.effects(site.runs)
    for e in effects:
        recs = [t.record for t in e.run.traces if t.record.pass_index == e.pass_index]
        assert e.nc_vs_full == paired_conditions(recs, "full", "no-conflicts")
        assert e.full_vs_source == paired_conditions(recs, "source", "full")
        items = [json.loads(ln) for ln in (root / "items.jsonl").read_text().splitlines()]
        fam_orders = {(i["family"], i["order"]) for i in items}
        assert e.full_vs_source.pairs == len(fam_orders)  # every family and order has a source and a full item
    assert "<svg" in _page(out, "slip-effect.html")
    # one heatmap cell per model and family in each view, plus the full-minus-source view
    heat = _page(out, "heatmap.html")
    cells = re.findall(r'data-cell="([^"]+)" data-view="all"', heat)
    fams = sorted({t.record.family for r in site.runs for t in r.traces})
    assert sorted(cells) == sorted(f"{r}|{f}" for r in runs for f in fams)
    assert heat.count('data-view="diff" data-family=') == len(runs) * len(fams)
    # made-up items are called what they are, on every page that uses them
    for rel in ("index.html", "heatmap.html", "slip-effect.html", "runs/random/index.html"):
        assert 'data-banner="synthetic"' in _page(out, rel)
    assert (out / MARKER).is_file()


def test_item_pages_show_prompt_trace_letters_and_key(synthetic_runs, tmp_path):
    root = synthetic_runs
    out = tmp_path / "site"
    site = build_site(expand([str(root / "runs" / "*")]), out, ROOT / "families", ROOT / "slips",
                      items=[root / "items.jsonl"])
    two = next(r for r in site.runs if r.name == "random-2step")
    t = next(t for t in two.traces if t.transcript and len(t.transcript["turns"]) == 2)
    html = _page(out, pages.item_path(two, t.record))
    turns = t.transcript["turns"]
    import html as h
    assert h.escape(turns[0]["request"][0]["content"], quote=False) in html  # the prompt as the model saw it
    assert h.escape(turns[1]["request"][-1]["content"], quote=False) in html  # the two-step follow-up
    assert 'data-letter="first">' + t.transcript["first_choice"] in html
    assert 'data-letter="key">' + t.record.expected in html
    assert 'data-match="verified"' in html  # options and runtimes from the items file, same prompt sha256
    for letter, ms in json.loads((root / "items.jsonl").read_text().splitlines()[0])["runtimes_ms"].items():
        assert f'data-letter="{letter}"' in html
    assert "Runner-up ratio" in html and "<svg" in html
    # the strict regex's match is marked in the trace
    assert '<mark class="strict"' in html


def test_measured_key_shows_runtimes_provenance_and_fragile(tmp_path):
    """A made-up key (labelled SYNTHETIC) on one real family: the measured path end to end."""
    proj = scratch_project(tmp_path)
    shutil.copytree(ROOT / "prompts", proj / "prompts")
    shutil.copytree(ROOT / "families" / "clamp_smem", proj / "families" / "clamp_smem",
                    ignore=shutil.ignore_patterns("measurements"))
    fam = load_family(proj / "families" / "clamp_smem")
    ids = [c.id for c in fam.candidates]
    # SYNTHETIC: made-up times, 1.0 ms for the starting kernel and a slower one for each rewrite in turn
    times = {cid: 1.0 + i for i, cid in enumerate(ids)}
    winner, runner = ids[1], ids[2]
    key = {
        "schema": "sparktrace.measurement/1", "family": "clamp_smem",
        "gpu": {"name": "SYNTHETIC TEST GPU", "slug": "synthetic-gpu", "sm_count": 132, "compute_capability": "9.0"},
        "provenance": {"date": "SYNTHETIC", "git_commit": "SYNTHETIC", "command": "SYNTHETIC TEST FIXTURE, not a measurement"},
        "protocol": {}, "gate": {},
        "candidates": {cid: {"time_ms": t, "samples_ms": [t, t], "spread": 0.0} for cid, t in times.items()},
        "ranking": {"winner": winner, "runner_up": runner, "ratio": times[runner] / times[winner], "kept": True,
                    "fragile": True},
    }
    (proj / "families" / "clamp_smem" / "measurements").mkdir()
    (proj / "families" / "clamp_smem" / "measurements" / "synthetic-gpu.json").write_text(json.dumps(key))
    score(proj, "--model", "always-a", "--key", "synthetic-gpu", "--run-dir=runs/a", "--junitxml=runs/a/junit.xml")
    out = tmp_path / "site"
    site = build_site([proj / "runs" / "a"], out, proj / "families", proj / "slips")
    (run,) = site.runs
    assert run.key_measured and len(run.traces) == 2  # no slip: the two source items
    t = run.traces[0]
    html = _page(out, pages.item_path(run, t.record))
    assert 'data-match="verified"' in html
    assert "measured winner" in html and "FRAGILE" in html and "SYNTHETIC TEST GPU" in html
    assert f"{times[runner] / times[winner]:.3f}×" in html
    assert 'data-banner="fragile"' in html and 'data-banner="synthetic"' in html
    assert 'data-banner="unmeasured"' not in html
    fam_html = _page(out, "families/clamp_smem.html")
    assert "SYNTHETIC TEST GPU" in fam_html and "ranking.fragile" in fam_html and "<svg" in fam_html


def test_the_slip_section_is_found_in_a_real_prompt():
    fam = load_family(ROOT / "families" / "clamp_smem")
    stand_in = "STAND-IN SLIP TEXT FOR THE SPLITTER (not an ncu export)\nsecond line"
    prompt = render_prompt(fam, "forward", load_stand_in().gpu, stand_in)
    before, slip, after = split_prompt(prompt)
    assert before + slip + after == prompt
    assert slip.startswith("## Nsight Compute report") and stand_in in slip
    assert after.startswith("## Your answer") and "Answer: A" in after
    assert split_prompt(render_prompt(fam, "forward", load_stand_in().gpu)) == (
        render_prompt(fam, "forward", load_stand_in().gpu), "", "")


@pytest.mark.parametrize("text, tolerant, strict, says", [
    ("Reasoning...\nAnswer: B", "B", "B", "Both read B"),
    ("The fastest option is **C**.", "C", None, "strict regex Answer"),
    ("Answer: A\n...on reflection, the answer is D", "D", "A", "They differ"),
    ("Answer: A or B", None, "A", "no single explicit answer"),
    ("I am not sure.", None, None, "Neither extractor"),
    ("", None, None, "no text"),
])
def test_letters_are_explained(text, tolerant, strict, says):
    assert says in pages.explain_letters(tolerant, strict, text)


def test_the_strict_match_is_marked_only_where_strict_reads():
    segs = pages.trace_segments("thinking <b>\nAnswer: C\nmore")
    assert [s.kind for s in segs] == ["", "strict", ""] and segs[1].text == "Answer: C"
    assert pages.trace_segments("the answer is C") == [pages.Segment("the answer is C")]


def test_bad_inputs_get_one_clear_error(synthetic_runs, tmp_path, capsys):
    root = synthetic_runs
    (tmp_path / "stray.txt").write_text("x")
    with pytest.raises(RunFolderError, match="stray.txt: not a run folder"):
        expand([str(tmp_path / "stray.txt")])
    with pytest.raises(RunFolderError, match="no such folder"):
        expand([str(tmp_path / "nope")])
    with pytest.raises(SystemExit):
        main([str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert "nope: no such folder" in capsys.readouterr().err
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("not a site")
    with pytest.raises(SiteError, match="not built by this command"):
        build_site([root / "runs" / "always-a"], keep, ROOT / "families", ROOT / "slips")
    assert (keep / "notes.txt").read_text() == "not a site"


def test_a_hostile_trace_is_shown_as_text_and_a_missing_one_is_said(synthetic_runs, tmp_path):
    src = synthetic_runs / "runs" / "always-a"
    run_dir = tmp_path / "always-a"
    shutil.copytree(src, run_dir)
    files = sorted((run_dir / "transcripts").rglob("*.json"))
    data = json.loads(files[0].read_text())
    data["turns"][0]["response"] = "<script>alert(1)</script>\nAnswer: A"  # derived input: the trace edited
    files[0].write_text(json.dumps(data))
    files[1].unlink()
    # derived input: a full item's prompt swapped for a real family's prompt with a stand-in slip
    full = next(f for f in files[2:] if json.loads(f.read_text())["condition"] == "full")
    data = json.loads(full.read_text())
    stand_in = "STAND-IN SLIP TEXT (not an ncu export)"
    data["turns"][0]["request"][0]["content"] = render_prompt(load_family(ROOT / "families" / "clamp_smem"), "forward",
                                                              load_stand_in().gpu, stand_in)
    full.write_text(json.dumps(data))
    site = build_site([run_dir], tmp_path / "site", ROOT / "families", ROOT / "slips",
                      items=[synthetic_runs / "items.jsonl"])
    (run,) = site.runs
    edited = next(t for t in run.traces if t.transcript_file == files[0])
    html = _page(tmp_path / "site", pages.item_path(run, edited.record))
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert run.problems and "transcript not found" in run.problems[0]
    swapped = next(t for t in run.traces if t.transcript_file == full)
    page = _page(tmp_path / "site", pages.item_path(run, swapped.record))
    slip = re.search(r'<span class="slip full" data-slip="full">(.*?)</span>\n?## Your answer', page, re.S)
    assert slip and stand_in in slip.group(1) and "## Nsight Compute report" in slip.group(1)
    assert 'data-banner="problem"' in _page(tmp_path / "site", "index.html")


def test_a_folder_without_a_sheet_is_read_from_its_transcripts(synthetic_runs, tmp_path):
    run_dir = tmp_path / "random"
    shutil.copytree(synthetic_runs / "runs" / "random", run_dir)
    (run_dir / "junit.xml").unlink()
    (run,) = read_runs([run_dir])
    with_sheet = read_runs([synthetic_runs / "runs" / "random"])[0]
    assert run.read_from.startswith("transcripts") and run.scores == with_sheet.scores


def test_families_are_read_with_their_keys_and_slips():
    fams = load_families(ROOT / "families", ROOT / "slips")
    assert {f.name for f in fams} == {p.name for p in (ROOT / "families").iterdir() if (p / "family.toml").is_file()}
    assert all(f.family is not None and not f.error for f in fams)


def test_heatmap_columns_group_families_by_set():
    """Classic first, then other sets; a family no longer in families/ takes its set from the task name."""
    from plugins.score.tally import Record
    from plugins.site.runs import Run, Trace

    def trace(family: str, task: str) -> Trace:
        rec = Record(item=f"{family}/full/forward", family=family, condition="full", order="forward", pass_index=1,
                     expected="A", chosen="A", strict="A", outcome="correct")
        return Trace(rec, {"task": task}, None, {})

    run = Run(name="r", folder=Path("r"), model="m", model_id="", base_url="", mode="one-step", key="k",
              traces=(trace("zz_gone", "kernel-compass-hard-full-forward"), trace("aa_gone", "kernel-compass-full-forward"),
                      trace("clamp_smem", "kernel-compass-full-forward")),
              scores=(), notes=(), read_from="test", problems=())
    fams = load_families(ROOT / "families", ROOT / "slips")
    assert pages.family_columns([run], fams) == [("aa_gone", "classic"), ("clamp_smem", "classic"), ("zz_gone", "hard")]


def outcomes_run(run_dir: Path) -> None:
    """A run of the synthetic items written by SparkTrace's own run_case, with a fake model whose
    replies exercise every outcome: cut off by its budget, too long for the window, no letter,
    a reasoning channel beside the answer."""
    from plugins.items.build import read_jsonl
    from plugins.score.modelapi import Completion, ContextOverflowError, GenerateConfig
    from plugins.score.session import Case, ModelInfo, run_case

    items = read_jsonl(ITEMS)
    plan = {items[0].id: Completion(text="", model="fake", stop_reason="length", reasoning="still weighing B"),
            items[1].id: ContextOverflowError("context: the prompt needs 9000 tokens (SYNTHETIC) plus max_tokens 64"),
            items[2].id: Completion(text="I would profile it first.", model="fake", stop_reason="stop")}

    class Fake:
        name = "fake-outcomes"

        def generate(self, messages, config):
            it = next(i for i in items if i.prompt == messages[-1].content)
            got = plan.get(it.id, Completion(text=f"Answer: {it.answer}", model="fake", stop_reason="stop",
                                             reasoning=f"SYNTHETIC reasoning: maybe Answer: {'A' if it.answer != 'A' else 'B'}"))
            if isinstance(got, Exception):
                raise got
            return got

    info = ModelInfo("fake-outcomes", "fake", "http://127.0.0.1:9/v1", GenerateConfig(max_tokens=64), make=Fake)
    for it in items:
        run_case(Case(it, 1, 1), Fake(), info, run_dir)


def test_truncated_context_and_missed_are_three_counts_on_the_site(tmp_path):
    outcomes_run(tmp_path / "runs" / "fake")
    (tmp_path / "runs" / "empty").mkdir()  # what `make run` leaves when no item was built
    (tmp_path / "runs" / "sheetonly").mkdir()
    (tmp_path / "runs" / "sheetonly" / "junit.xml").write_text('<testsuites><testsuite name="pytest"/></testsuites>')
    out = tmp_path / "site"
    site = build_site(expand([str(tmp_path / "runs")]), out, ROOT / "families", ROOT / "slips", items=[ITEMS])
    assert [r.name for r in site.runs] == ["fake"]
    assert len(site.skipped) == 1 and "sheetonly: no scored item" in site.skipped[0]
    (row,) = pages.board_rows(site.runs)
    assert (row.no_letter, row.truncated, row.omitted_context, row.omitted) == (1, 1, 1, 0)
    html = _page(out, "index.html")
    counts = dict(re.findall(r'data-count="([a-z-]+)">(\d+)<', html))
    assert counts == {"no-letter": "1", "truncated": "1", "omitted-context": "1", "omitted": "0"}
    run_html = _page(out, "runs/fake/index.html")
    assert dict(re.findall(r'data-count="([a-z-]+)">(\d+)<', run_html)) == counts
    assert 'data-list="truncated"' in run_html and "stop reason length" in run_html
    assert "omitted: prompt too long" in run_html
    run = site.runs[0]
    truncated = next(t for t in run.traces if t.record.outcome == "truncated")
    page = _page(out, pages.item_path(run, truncated.record))
    assert 'data-outcome="truncated">truncated (token budget)<' in page
    assert 'data-stop-reason="turn-1">length<' in page and "TRUNCATED by the token budget" in page
    assert 'data-reasoning="turn-1"' in page and "still weighing B" in page
    answered = next(t for t in run.traces if t.record.outcome == "correct")
    page = _page(out, pages.item_path(run, answered.record))
    assert "SYNTHETIC reasoning" in page and "never scored" in page  # shown beside the answer, not scored


def test_make_report_skips_empty_run_folders_with_a_note(tmp_path, capsys):
    (tmp_path / "runs" / "local").mkdir(parents=True)
    (tmp_path / "runs" / "local" / "junit.xml").write_text(
        '<testsuites><testsuite name="pytest"><testcase classname="t" name="test_item[no-model]">'
        '<skipped message="no item was built"/></testcase></testsuite></testsuites>')
    assert main([str(tmp_path / "runs"), "--out", str(tmp_path / "site"), "--families", str(ROOT / "families"),
                 "--slips", str(ROOT / "slips")]) == 0
    said = capsys.readouterr().out
    assert "note: " in said and "local: no scored item" in said and "skipped" in said
    assert str(tmp_path / "site" / "index.html") in said
    assert "No run yet" in (tmp_path / "site" / "index.html").read_text()


def test_family_pages_size_launch_plans_for_the_keys_recorded_device(tmp_path):
    """A family page's launch plan uses the device a key file reported (this family's, else any family's
    of that key), the stand-in only for its own key, and says so when nothing names the device."""
    from plugins.measure.keyfile import SCHEMA, write_key

    root = tmp_path / "families"
    shutil.copytree(ROOT / "tests" / "fixtures" / "items" / "synth_scale", root / "synth_scale")
    # a SYNTHETIC fixture record of another family: only its device part is read here
    write_key(root / "elsewhere", "b200", {"schema": SCHEMA, "gpu": {"name": "NVIDIA B200", "sm_count": 148,
                                                                     "compute_capability": "10.0"}})
    fv = next(f for f in load_families(root, tmp_path / "slips") if f.name == "synth_scale")
    cand = next(c for c in fv.family.rewrites if c.id == "rw_grid")  # grid = sm_count * 8
    assert "grid  = sm_count * 8 = 1184\n" in pages.launch_text(fv, cand, "b200", root)  # 148 SMs, from the record
    assert "grid  = sm_count * 8 = 1056\n" in pages.launch_text(fv, cand, "h200", root)  # the stand-in's 132
    assert pages.launch_text(fv, cand, "gb10", root) == "(launch plan not shown: no key file names the device of GPU key 'gb10')"
    assert pages.default_key(root) == "b200"  # the one measured key
    write_key(root / "elsewhere", "gb10", {"schema": SCHEMA, "gpu": {"name": "NVIDIA GB10", "sm_count": 48}})
    assert pages.default_key(root) == load_stand_in().key  # several keys: the stand-in's sizes, labelled by key
