"""plugins.measure.ncu on layout fixtures (placeholder numbers, see tests/fixtures/ncu/README.md)."""
from __future__ import annotations

from pathlib import Path

import pytest

from plugins.measure.ncu import FIXTURE_MARKER, NcuCsvError, parse_details_csv, parse_number, read_details_csv

FIX = Path(__file__).parents[1] / "fixtures" / "ncu"
OLD = FIX / "layout-old.placeholder.csv"
NEW = FIX / "layout-new.placeholder.csv"
RULES = FIX / "layout-rules-3-kernels.placeholder.csv"
HEADER = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'


@pytest.mark.parametrize(
    "path, layout, kernels",
    [(OLD, "old", ["k0"]), (NEW, "new", ["k0"]), (RULES, "rules", ["k0", "k1", "k2"])],
    ids=["old", "new", "rules"],
)
def test_layouts(path, layout, kernels):
    rep = read_details_csv(path)
    assert rep.layout == layout
    assert [k.kernel for k in rep.kernels] == kernels
    assert rep.is_fixture, "layout fixtures carry the marker"
    k = rep.kernels[0]
    sol = k.section("GPU Speed Of Light Throughput")
    assert [m.name for m in sol.metrics][:3] == ["DRAM Frequency", "SM Frequency", "Elapsed Cycles"]
    elapsed = sol.metrics[2]
    assert (elapsed.unit, elapsed.text, elapsed.value) == ("cycle", "3,333,333", 3333333.0)


def test_new_layout_header_fields_and_noise_before_csv():
    k = read_details_csv(NEW).kernels[0]
    assert (k.grid, k.block, k.device, k.cc) == ("(22222, 1, 1)", "(32, 32, 1)", "0", "9.0")
    assert read_details_csv(OLD).kernels[0].grid == ""  # the oldest layout has no launch columns


def test_sections_keep_ncus_order_and_rules_join_their_section():
    rep = read_details_csv(RULES)
    assert len(rep.kernels) == 3 and [k.id for k in rep.kernels] == ["0", "1", "2"]
    k = rep.kernels[0]
    assert [s.name for s in k.sections] == [
        "GPU Speed Of Light Throughput", "Launch Statistics", "Occupancy", "Memory Workload Analysis",
        "Memory Workload Analysis Tables", "Compute Workload Analysis", "Warp State Statistics",
        "Command line profiler metrics",
    ]
    sol = k.section("GPU Speed Of Light Throughput")
    assert [r.name for r in sol.rules] == ["SOLBottleneck"]  # row said "SpeedOfLight"
    launch = k.section("Launch Statistics")
    r = launch.rules[0]
    assert (r.name, r.type, r.speedup_type, r.speedup) == ("LaunchConfiguration", "OPT", "global", "11.11")
    assert launch.metrics[2].text == "22,222" and launch.metrics[1].value is None  # CachePreferNone
    tables = k.section("Memory Workload Analysis Tables")
    assert [r.name for r in tables.rules] == ["SharedMemoryConflicts", "UncoalescedSharedAccess"]


def test_short_rows_are_padded():
    text = HEADER + ',"Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"\n'
    text += '"0","1","p","h","k0","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Occupancy","Achieved Occupancy","%","50.5",\n'
    m = parse_details_csv(text).kernels[0].section("Occupancy").metrics[0]
    assert (m.name, m.text, m.value) == ("Achieved Occupancy", "50.5", 50.5)


@pytest.mark.parametrize(
    "text, value",
    [("10,240,000", 10240000.0), ("1,215,000,000.50", 1215000000.5), ("21.68", 21.68), ("0", 0.0),
     ("-3", -3.0), ("1e3", 1000.0), ("PolicySpread", None), ("(32, 1, 1)", None), ("1,2", None), ("", None)],
)
def test_parse_number(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize(
    "text, words",
    [
        ("==PROF== nothing profiled\n", ["no ncu CSV header", "fix:"]),
        ('"ID","Kernel Name"\n"0","k0"\n', ["lacks columns", "Section Name", "fix:"]),
        (HEADER + "\n", ["no rows", "fix:"]),
        (HEADER + '\n"","1","p","h","k0","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","S","M","","1"\n', ["field 'ID'", ":2:"]),
        (HEADER + '\n"0","1","p","h","k0"\n', ["row has 5 fields", "fix:"]),
    ],
    ids=["no-header", "missing-columns", "no-rows", "empty-id", "truncated-row"],
)
def test_bad_input_names_file_line_and_fix(text, words):
    with pytest.raises(NcuCsvError) as exc:
        parse_details_csv(text, "slips/h200/x.csv")
    assert "slips/h200/x.csv" in str(exc.value)
    for w in words:
        assert w in str(exc.value)


def test_marker_is_only_in_fixtures():
    row = '"0","1","proc","host","k0","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Occupancy","Achieved Occupancy","%","1"'
    assert not parse_details_csv(HEADER + "\n" + row + "\n").is_fixture
    assert parse_details_csv(HEADER + "\n" + row.replace("proc", FIXTURE_MARKER) + "\n").is_fixture
