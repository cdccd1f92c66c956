"""The report's lines: seed-form table, intervals, paired test, per family, banners, files."""
import json

from plugins.score.report import RunReport, no_items_lines, report_lines, unmeasured_banner, write_report
from plugins.score.tally import CONDITIONS, Record, score_by_pass, score_json, score_pass

FAMILIES = [f"fam{i:02d}" for i in range(15)]  # SYNTHETIC FIXTURE names


def records(pass_index=1, measured=True, drop=(), wrong=lambda fam, cond, order: False):
    out = []
    for fam in FAMILIES:
        for cond in CONDITIONS:
            for order in ("forward", "mirror"):
                if (fam, cond, order) in drop:
                    continue
                bad = wrong(fam, cond, order)
                out.append(Record(f"{fam}/{cond}/{order}", fam, cond, order, pass_index, "C",
                                  "D" if bad else "C", "D" if bad else "C", "wrong" if bad else "correct",
                                  key_measured=measured, key="fx"))
    return out


def test_seed_form_table_with_denominators_in_headers():
    s = score_pass(records(wrong=lambda f, c, o: c == "full" and f in ("fam00", "fam01") and o == "mirror"))
    lines = list(report_lines(RunReport("m1", "fx", "one-step", (s,))))
    assert lines[0] == "SparkTrace score: model m1, set classic, key fx (measured), one-step, 1 pass"
    header = next(l for l in lines if l.startswith("| model"))
    cols = [c.strip() for c in header.split("|")[1:-1]]
    assert cols == ["model", "pass", "source/30", "full/30", "no-conflicts/30", "total/90", "full-source",
                    "no-letter", "truncated", "omitted: context", "omitted: no answer", "strict total/90"]
    row = [c.strip() for c in next(l for l in lines if l.startswith("| m1")).split("|")[1:-1]]
    assert row == ["m1", "1", "30", "28", "30", "88", "-2", "0", "0", "0", "0", "88"]
    paired = [c.strip() for c in next(l for l in lines if l.startswith("| 1 ") and l.count("|") == 6).split("|")[1:-1]]
    assert paired[:4] == ["1", "30", "2", "0"] and float(paired[4]) == 0.5  # 2 * (1/2)^2
    fam01 = [c.strip() for c in next(l for l in lines if l.startswith("| fam01")).split("|")[1:-1]]
    assert fam01[:5] == ["fam01", "2/2", "1/2", "2/2", "5/6"]


def test_omitted_shrinks_the_denominator_and_mixed_denominators_show_in_cells():
    full = score_pass(records())
    rs = records(pass_index=2, drop={("fam03", "source", "forward")})
    rs.append(Record("fam03/source/forward", "fam03", "source", "forward", 2, "C", None, None, "omitted", key="fx"))
    part = score_pass(rs)
    lines = list(report_lines(RunReport("m1", "fx", "one-step", (full, part))))
    header = [c.strip() for c in next(l for l in lines if l.startswith("| model")).split("|")[1:-1]]
    assert header[2] == "source" and header[3] == "full/30"
    row2 = [c.strip() for c in next(l for l in lines if l.startswith("| m1") and "| 2 " in l).split("|")[1:-1]]
    assert row2[2] == "29/29" and row2[10] == "1" and row2[9] == "0"  # omitted, with no answer
    mean = [c.strip() for c in next(l for l in lines if "| mean" in l).split("|")[1:-1]]
    assert mean[2] == "29.5" and mean[10] == "0.5"


def test_truncated_context_and_misses_are_three_counts():
    """A reply cut off by its budget, a prompt too long for the window and a miss without a letter
    each land in their own column, in the run table and the per-family table."""
    rs = records(drop={("fam00", "source", "forward"), ("fam01", "source", "forward"), ("fam02", "source", "forward"),
                       ("fam03", "source", "forward")})
    rs += [Record("fam00/source/forward", "fam00", "source", "forward", 1, "C", None, None, "truncated", key="fx"),
           Record("fam01/source/forward", "fam01", "source", "forward", 1, "C", None, None, "omitted", key="fx",
                  omitted_for="context"),
           Record("fam02/source/forward", "fam02", "source", "forward", 1, "C", None, None, "no-letter", key="fx"),
           Record("fam03/source/forward", "fam03", "source", "forward", 1, "C", None, None, "omitted", key="fx")]
    s = score_pass(rs)
    assert (s.total.truncated, s.total.omitted_context, s.total.omitted_no_answer, s.total.no_letter) == (1, 1, 1, 1)
    assert s.conditions["source"].n == 28  # truncated counts in the denominator, both omitted do not
    lines = list(report_lines(RunReport("m1", "fx", "one-step", (s,))))
    header = [c.strip() for c in next(l for l in lines if l.startswith("| model")).split("|")[1:-1]]
    row = dict(zip(header, [c.strip() for c in next(l for l in lines if l.startswith("| m1")).split("|")[1:-1]]))
    assert (row["no-letter"], row["truncated"], row["omitted: context"], row["omitted: no answer"]) == ("1", "1", "1", "1")
    assert row["source/28"] == "26"
    fam_header = [c.strip() for c in next(l for l in lines if l.startswith("| family")).split("|")[1:-1]]
    fam00 = dict(zip(fam_header, [c.strip() for c in next(l for l in lines if l.startswith("| fam00")).split("|")[1:-1]]))
    fam01 = dict(zip(fam_header, [c.strip() for c in next(l for l in lines if l.startswith("| fam01")).split("|")[1:-1]]))
    assert fam00["truncated"] == "1" and fam00["omitted: context"] == "0"
    assert fam01["omitted: context"] == "1" and fam01["truncated"] == "0"
    js = score_json(s)["total"]
    assert (js["truncated"], js["omitted_context"], js["omitted"], js["no_letter"]) == (1, 1, 2, 1)


def test_unmeasured_key_banner_is_the_first_line_everywhere(tmp_path):
    s = score_pass(records(measured=False))
    rep = RunReport("m1", "h200", "one-step", (s,))
    lines = list(report_lines(rep))
    assert lines[0] == unmeasured_banner("h200") and "not measured" in lines[0]
    md, js = write_report(rep, tmp_path / "run")
    assert md.read_text().splitlines()[0] == lines[0]
    assert md.read_text() == "\n".join(lines) + "\n"
    data = json.loads(js.read_text())
    assert next(iter(data)) == "warning" and data["warning"] == lines[0]
    assert data["passes"][0]["conditions"]["full"]["correct"] == 30
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["score.json", "score.md"]


def test_empty_condition_has_no_difference():
    rs = [r for r in records() if r.condition == "source"]
    s = score_pass(rs)
    assert s.full_minus_source is None
    row = [c.strip() for c in next(l for l in report_lines(RunReport("m", "fx", "one-step", (s,)))
                                   if l.startswith("| m ")).split("|")[1:-1]]
    assert row[6] == "n/a" and row[3] == "0"


def test_no_items_lines_name_families_and_the_dry_run():
    lines = list(no_items_lines("m", "h200", ["fam00: no measurement for h200 (families/fam00/...)"], built=0))
    assert "no item could be built on key h200" in lines[0]
    assert any(line.startswith("- fam00: no measurement") for line in lines)
    table = [line for line in lines if line.startswith("| m ")]
    assert table and "source/0" in lines[lines.index(table[0]) - 2], "the empty table shows zero denominators"
    assert "| 0 " not in table[0], "nothing scored is never shown as a zero score"
    assert "--key-intended" in lines[-1]
    assert "none ran" in next(no_items_lines("m", "h200", [], built=5))


def test_scores_split_by_pass():
    ss = score_by_pass(records(1) + records(2))
    assert [s.pass_index for s in ss] == [1, 2]
    lines = list(report_lines(RunReport("m", "fx", "two-step", ss)))
    assert "two-step, 2 passes" in lines[0]
    assert sum(l.startswith("Per family, pass") for l in lines) == 2


def test_each_set_is_scored_on_its_own_and_together_only_when_asked(tmp_path):
    """Two sets of 15 families: each table is /30 per condition and /90 in all; the combined one (/60, /180) only on request."""
    from dataclasses import replace

    from plugins.score.report import reports_json, reports_lines
    from plugins.score.tally import score_by_set

    classic = records()
    hard = [replace(r, item="h" + r.item, family="h" + r.family, family_set="hard",
                    chosen="A", strict="A", outcome="wrong") for r in records()]
    by_set = score_by_set(classic + hard)
    assert list(by_set) == ["classic", "hard"]
    assert by_set["classic"][0].total.correct == 90 and by_set["classic"][0].total.n == 90
    assert by_set["hard"][0].total.correct == 0 and by_set["hard"][0].total.n == 90
    both = score_by_set(classic + hard, combine=True)
    assert list(both) == ["classic", "hard", "all"] and both["all"][0].total.n == 180
    assert list(score_by_set(classic, combine=True)) == ["classic"]  # one set: nothing to combine

    reps = [RunReport("m1", "fx", "one-step", scores, family_set=name) for name, scores in both.items()]
    lines = list(reports_lines(reps))
    headers = [l for l in lines if l.startswith("| model")]
    assert [h.split("|")[6].strip() for h in headers] == ["total/90", "total/90", "total/180"]
    assert any(l.startswith("SparkTrace score: model m1, set hard,") for l in lines)
    assert any(l.startswith("SparkTrace score: model m1, every set together,") for l in lines)
    js = reports_json(reps[:2])
    assert set(js["sets"]) == {"classic", "hard"} and "passes" not in js
    assert js["sets"]["hard"]["passes"][0]["total"]["n"] == 90
    assert reports_json(reps[:1])["set"] == "classic" and reports_json(reps[:1])["passes"][0]["total"]["correct"] == 90
    md, _ = write_report(reps[:2], tmp_path / "run")
    assert md.read_text().count("SparkTrace score: model m1, set ") == 2
