"""The work report: counts merged from workers, test seconds grouped by stage."""
from __future__ import annotations

from collections import Counter

from plugins.cache.work import merge, report_lines, stage_of_nodeid, stage_rows


def test_stage_of_a_nodeid_is_its_folder_under_tests():
    assert stage_of_nodeid("tests/gate/test_emulator.py::test_x[a/b]") == "gate"
    assert stage_of_nodeid("tests/test_layering.py::test_y") == "tests"


def test_rows_count_each_test_once_and_sum_its_phases():
    rows = stage_rows([("tests/family/t.py::a", 1.0), ("tests/family/t.py::a", 0.5),
                       ("tests/family/t.py::b", 0.25), ("tests/gate/g.py::c", 3.0)])
    assert [(r.stage, r.tests, r.time_s) for r in rows] == [("gate", 1, 3.0), ("family", 2, 1.75)]


def test_report_lists_done_and_hits_per_kind_and_a_total():
    counts: Counter[str] = Counter()
    merge(counts, {"nvrtc_compile": 3, "hit:nvrtc_compile": 5})
    merge(counts, {"nvrtc_compile": 1, "odd_kind": 2})
    lines = report_lines(counts, stage_rows([("tests/gate/g.py::c", 2.0)]))
    assert "| NVRTC compiles to a cubin | 4 | 5 |" in lines
    assert "| odd_kind | 2 | |" in lines
    assert lines[-1] == "| total | 1 | 2.0 |"
