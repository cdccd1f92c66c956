"""Leaderboard from junit sheets written by real pytester runs of the baselines (no typed-in scores)."""
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from plugins.score.leaderboard import LeaderboardError, collect, expand, leaderboard_lines, main


ROOT = Path(__file__).resolve().parents[2]
ITEMS = Path(__file__).parents[1] / "fixtures" / "scoring" / "synthetic_items.jsonl"  # SYNTHETIC FIXTURE


@pytest.fixture
def sheets(project):
    """Junit files of `--model always-a` and `--model random --passes 2` on the synthetic items."""
    pytester = project
    shutil.copy(ROOT / "tests" / "score" / "test_items_model.py", pytester.path / "tests")
    shutil.copy(ITEMS, pytester.path / "items.jsonl")
    runs = {}
    for model, extra in (("always-a", ()), ("random", ("--passes", "2"))):
        r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--model", model, "--items", "items.jsonl",
                                          "--junitxml", f"sheets/{model}.xml", *extra, timeout=180)
        assert r.ret == 1, r.stdout.str()  # some letters are wrong: tests fail, the sheet is written
        runs[model] = r
    return pytester, runs


def rows(lines, model):
    return [[c.strip() for c in l.split("|")[1:-1]] for l in lines if l.startswith(f"| {model} ")]


def test_leaderboard_merges_runs_and_matches_each_run_table(sheets, tmp_path):
    pytester, runs = sheets
    out = tmp_path / "board"
    r = pytester.run(sys.executable, "-m", "plugins.score.leaderboard", str(pytester.path / "sheets" / "*.xml"),
                     "--out", str(out))
    assert r.ret == 0, r.stderr.str()
    md = (out / "leaderboard.md").read_text().splitlines()
    # every per-run row of the end-of-run tables reappears (model, key, pass, then the same cells)
    for model in ("always-a", "random"):
        run_rows = rows(runs[model].outlines, model)
        board_rows = rows(md, model)
        assert [b[:1] + b[2:] for b in board_rows] == run_rows
        assert all(b[1] == "synthetic-fixture" for b in board_rows)
    assert [b[2] for b in rows(md, "random")] == ["1", "2", "mean"]
    assert len(rows(md, "always-a")) == 1  # one pass: no mean row
    assert md[-1] == "![score by condition](leaderboard.png)"
    assert r.outlines[: len(md) - 2] == md[:-2]  # stdout shows the same table as the file
    png = (out / "leaderboard.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000

    # the same item-pass with two different answers is refused, naming both files
    src = pytester.path / "sheets" / "always-a.xml"
    tree = ET.parse(src)
    tc = next(tree.getroot().iter("testcase"))
    for p in tc.iter("property"):
        if p.get("name") == "chosen":
            p.set("value", "D" if p.get("value") != "D" else "B")
        if p.get("name") == "outcome":
            p.set("value", "wrong" if p.get("value") == "correct" else "correct")
    tree.write(tmp_path / "edited.xml")  # a derived input: one answer flipped
    with pytest.raises(LeaderboardError, match="pass only one of these runs"):
        collect([src, tmp_path / "edited.xml"])
    # the same sheet twice is the same run: no conflict, no double counting
    once, twice = collect([src]), collect([src, src])
    assert list(leaderboard_lines(once)) == list(leaderboard_lines(twice))


def test_bad_inputs_name_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.xml"
    bad.write_text("<testsuites><testsuite>")
    with pytest.raises(SystemExit):
        main([str(bad), "--out", str(tmp_path / "o")])
    assert "bad.xml: not a readable junit XML file" in capsys.readouterr().err
    with pytest.raises(LeaderboardError, match="matches no file"):
        expand([str(tmp_path / "none" / "*.xml")])
    empty = tmp_path / "empty.xml"
    empty.write_text('<testsuites><testsuite><testcase name="t"/></testsuite></testsuites>')
    with pytest.raises(SystemExit):
        main([str(empty), "--out", str(tmp_path / "o")])
    assert "no scored item" in capsys.readouterr().err


def test_one_table_per_family_set(tmp_path):
    """Sheets holding two sets give two tables, each with its own denominators (a SYNTHETIC sheet)."""
    cases = []
    for family_set, fams in (("classic", ("fa", "fb")), ("hard", ("ha",))):
        for fam in fams:
            for cond in ("source", "full", "no-conflicts"):
                for order in ("forward", "mirror"):
                    props = {"model": "m", "item": f"{fam}/{cond}/{order}", "family": fam, "set": family_set,
                             "condition": cond, "order": order, "pass": "1", "expected": "A", "chosen": "A",
                             "strict": "A", "outcome": "correct", "key": "synthetic", "key_measured": "true"}
                    cases.append('<testcase name="t"><properties>' + "".join(
                        f'<property name="{k}" value="{v}"/>' for k, v in props.items()) + "</properties></testcase>")
    sheet = tmp_path / "sheet.xml"
    sheet.write_text('<testsuites><testsuite name="s">' + "".join(cases) + "</testsuite></testsuites>")
    entries = collect([sheet])
    assert [(e.family_set, e.scores[0].total.n) for e in entries] == [("classic", 12), ("hard", 6)]
    lines = list(leaderboard_lines(entries))
    assert lines.index("Set classic:") < lines.index("Set hard:")
    assert [l.split("|")[7].strip() for l in lines if l.startswith("| model")] == ["total/12", "total/6"]


def test_a_condition_with_no_items_is_absent_not_zero(tmp_path):
    """Source-only items (no slip yet): full and no-conflicts are drawn absent, not as 0%."""
    from plugins.score.leaderboard import ABSENT, Entry, bar_values, chart_figure, write_chart
    from plugins.score.tally import Record, score_by_pass

    recs = [Record(f"f{i}/source/{o}", f"f{i}", "source", o, 1, "A", "A" if i % 2 else "B", None,
                   "correct" if i % 2 else "wrong", key="fx") for i in range(4) for o in ("forward", "mirror")]
    e = Entry("m", "one-step", "fx", score_by_pass(recs))
    assert bar_values(e) == [0.5, None, None]
    fig = chart_figure([e])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == [ABSENT, ABSENT]
    drawn = [p for p in ax.patches if p.get_fill()]
    assert [round(p.get_height(), 6) for p in drawn] == [0.5]  # only the source bar is a filled bar
    write_chart([e], tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
