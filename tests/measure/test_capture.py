"""CPU tests of the slip capture: the ncu command lines, finding ncu, its version, the CSV check.

No ncu runs here: subprocess calls are answered by a labelled fake, and the
CSV is a hand-written fixture in ncu's documented layout (not a real export).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from plugins.measure.capture import (
    METRICS,
    REQUIRED_METRICS,
    SECTIONS,
    NcuLocation,
    capture_slip,
    csv_summary,
    export_command,
    find_ncu,
    kernel_filter,
    ncu_version,
    profile_command,
)
from plugins.measure.provenance import parse_ncu_version

pytestmark = pytest.mark.measure

FIXTURES = Path(__file__).parents[1] / "fixtures" / "measure"

NCU_VERSION_SAMPLES = [
    ("NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\n"
     "Version 2025.3.1.0 (build 36398880) (public-release)\n", "2025.3.1.0"),
    ("NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2023 NVIDIA Corporation\n"
     "Version 2023.2.0.0 (build 32895467) (public-release)\n", "2023.2.0.0"),
    ("Version 2022.1.1.2 (build 30914944) (public-release)", "2022.1.1.2"),
]


@pytest.mark.parametrize("text, version", NCU_VERSION_SAMPLES)
def test_parse_ncu_version(text, version):
    assert parse_ncu_version(text) == version


@pytest.mark.parametrize("text", ["", "ncu: command not found", "==ERROR== something went wrong"])
def test_parse_ncu_version_rejects_other_output(text):
    with pytest.raises(ValueError, match="Version"):
        parse_ncu_version(text)


def test_profile_command_is_exact():
    cmd = profile_command("/opt/ncu", "clamp_smem", Path("/out/slips/h200/clamp_smem"), ["k0", "k1", "k0"], 3,
                          Path("/repo/families"), seed=11, python="/usr/bin/python3")
    assert cmd[:3] == ["/opt/ncu", "--clock-control", "none"]
    sections = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"]
    assert sections == list(SECTIONS)
    for needed in ("SpeedOfLight", "LaunchStats", "Occupancy", "MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables"):
        assert needed in sections
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert metrics == list(METRICS)
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum" in metrics
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum" in metrics
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:^(k0|k1)$"
    assert cmd[cmd.index("--launch-count") + 1] == "3"
    assert cmd[cmd.index("-o") + 1] == "/out/slips/h200/clamp_smem" and "-f" in cmd
    tail = cmd[cmd.index("/usr/bin/python3"):]
    assert tail == ["/usr/bin/python3", "-m", "plugins.measure.launch_once", "clamp_smem", "--families-root", "/repo/families", "--seed", "11"]


def test_export_command():
    assert export_command("ncu", Path("s/h200/f.ncu-rep")) == [
        "ncu", "--import", "s/h200/f.ncu-rep", "--csv", "--page", "details", "--print-details", "all"]


def test_kernel_filter_takes_only_identifiers():
    assert kernel_filter(["k0"]) == "regex:^(k0)$"
    with pytest.raises(ValueError):
        kernel_filter(["k0|.*"])


def test_find_ncu_prefers_path_then_newest_install():
    assert find_ncu(which=lambda n: "/usr/bin/ncu").path == "/usr/bin/ncu"
    installs = {"/opt/nvidia/nsight-compute/*/ncu": ["/opt/nvidia/nsight-compute/2024.1.0/ncu", "/opt/nvidia/nsight-compute/2025.3.1/ncu"]}
    loc = find_ncu(which=lambda n: None, globber=lambda p: installs.get(p, []), is_exec=lambda p: True)
    assert loc.path == "/opt/nvidia/nsight-compute/2025.3.1/ncu"
    cuda = find_ncu(which=lambda n: None, globber=lambda p: ["/usr/local/cuda/bin/ncu"] if p == "/usr/local/cuda/bin/ncu" else [], is_exec=lambda p: True)
    assert cuda.path == "/usr/local/cuda/bin/ncu"


def test_missing_ncu_skips_with_a_clear_reason(tmp_path):
    loc = find_ncu(which=lambda n: None, globber=lambda p: [], is_exec=lambda p: True)
    assert loc.path is None
    assert "not found" in loc.reason and "/opt/nvidia/nsight-compute" in loc.reason and "PATH" in loc.reason
    res = capture_slip("f", ["k0"], "h200", tmp_path, tmp_path, tmp_path, ncu=loc)
    assert res.status == "skipped" and res.reason == loc.reason
    assert not (tmp_path / "slips").exists(), "a skipped slip writes nothing"
    assert ncu_version(loc).startswith("unavailable: ncu (Nsight Compute CLI) not found")


def test_csv_summary_reads_the_documented_layout():
    s = csv_summary((FIXTURES / "ncu_details_fixture.csv").read_text())
    assert s["kernels"] == ["k0"]
    assert "Rule Name" in s["columns"] and s["rule_rows"] == 1
    assert s["rules"][0]["rule"] == "SharedMemoryConflicts" and "bank conflict" in s["rules"][0]["description"]
    assert s["bank_conflict_metrics"] == sorted(METRICS[:2])
    assert "GPU Speed Of Light Throughput" in s["sections"] and s["rows"] == 8
    with pytest.raises(ValueError, match="no .Section Name. column"):
        csv_summary('"ID","Kernel Name"\n"0","k0"\n')
    with pytest.raises(ValueError, match="empty"):
        csv_summary("==PROF== only\n")


class FakeNcu:
    """A FAKE ncu (test fixture): answers subprocess calls the way ncu's CLI would, writes a stub report."""

    def __init__(self, profile_rc=0, timeout=False, query: str | None = None):
        self.calls = []
        self.profile_rc = profile_rc
        self.timeout = timeout
        self.query = query  # what --query-metrics prints (None: it fails, as on a GPU ncu cannot open)
        self.export = (FIXTURES / "ncu_details_fixture.csv").read_text()

    def __call__(self, cmd, **kw):
        self.calls.append(cmd)
        if cmd[1] == "--version":
            return subprocess.CompletedProcess(cmd, 0, NCU_VERSION_SAMPLES[0][0], "")
        if cmd[1] == "--import":
            return subprocess.CompletedProcess(cmd, 0, self.export, "")
        if cmd[1] == "--query-metrics":
            return subprocess.CompletedProcess(cmd, 0 if self.query is not None else 1, self.query or "", "")
        if self.timeout:
            raise subprocess.TimeoutExpired(cmd, kw["timeout"], output=b"==PROF== partial", stderr=b"")
        out = Path(cmd[cmd.index("-o") + 1])
        if self.profile_rc == 0:
            out.with_suffix(".ncu-rep").write_bytes(b"stub report written by a test fake")
        return subprocess.CompletedProcess(cmd, self.profile_rc, "==PROF== Disconnected", "" if self.profile_rc == 0 else "==ERROR== fake failure")


def test_capture_slip_writes_report_csv_and_record(tmp_path):
    fake = FakeNcu()
    res = capture_slip("fam", ["k0"], "fake-gpu", tmp_path, tmp_path, tmp_path / "families",
                       ncu=NcuLocation("/fake/ncu", "test"), run=fake, python="python3")
    assert res.status == "captured", res.reason
    base = tmp_path / "slips" / "fake-gpu" / "fam"
    assert (base.with_suffix(".csv")).read_text() == (FIXTURES / "ncu_details_fixture.csv").read_text()
    rec = json.loads(base.with_suffix(".json").read_text())
    assert rec["ncu_version"] == "2025.3.1.0" and rec["clock_control"] == "none"
    assert rec["profile_command"][1:3] == ["--clock-control", "none"]
    assert rec["export_command"][1:3] == ["--import", str(base.with_suffix(".ncu-rep"))]
    assert rec["csv"]["kernels"] == ["k0"] and rec["status"] == "captured"
    assert sorted(Path(f).name for f in res.files) == ["fam.csv", "fam.json", "fam.ncu-rep"]


def test_capture_slip_failures_are_recorded(tmp_path):
    loc = NcuLocation("/fake/ncu", "test")
    res = capture_slip("fam", ["k0"], "g", tmp_path, tmp_path, tmp_path, ncu=loc, run=FakeNcu(profile_rc=1))
    assert res.status == "failed" and "exited 1" in res.reason
    rec = json.loads((tmp_path / "slips" / "g" / "fam.json").read_text())
    assert "fake failure" in rec["profile_log_tail"]
    res = capture_slip("fam", ["k0"], "g", tmp_path, tmp_path, tmp_path, ncu=loc, run=FakeNcu(timeout=True), profile_timeout_s=5)
    assert res.status == "failed" and "timed out after 5 s" in res.reason
    res = capture_slip("fam", ["k0", "k1"], "g", tmp_path, tmp_path, tmp_path, ncu=loc, run=FakeNcu())
    assert res.status == "failed" and "k1" in res.reason


def _short_rows_export(launches: list[str]) -> str:
    """A layout FIXTURE (not an ncu run): metric rows that stop after "Metric Value",
    as ncu writes them when a row has no rule, for several profiled launches."""
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
            '"Rule Description","Estimated Speedup Type","Estimated Speedup"')
    from plugins.measure.ncu import FIXTURE_MARKER

    rows = [f'"{i}","1","{FIXTURE_MARKER}","fixture-host","{k}","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0",'
            f'"GPU Speed Of Light Throughput","Duration","us","1.00"' for i, k in enumerate(launches)]
    return "\n".join(["==PROF== fixture", head, *rows]) + "\n"


def test_csv_summary_keeps_rows_without_rule_fields_and_counts_launches():
    s = csv_summary(_short_rows_export(["k0"] * 8 + ["k1"]))
    assert s["rows"] == 9 and s["kernels"] == ["k0", "k1"]
    assert s["launches"] == ["k0"] * 8 + ["k1"], "one entry per profiled launch, in order: what plugins.items.build compares"
    assert csv_summary(_short_rows_export(["k0(float const*, float*, int)"]))["launches"] == ["k0"]


def test_capture_checks_every_planned_launch_was_profiled(tmp_path):
    loc = NcuLocation("/fake/ncu", "test")

    class Export(FakeNcu):
        def __init__(self, text):
            super().__init__()
            self.text = text

        def __call__(self, cmd, **kw):
            if cmd[1] == "--import":
                return subprocess.CompletedProcess(cmd, 0, self.text, "")
            return super().__call__(cmd, **kw)

    plan = ["k0"] * 8  # launch_chain's start: eight launches of one entry
    fake = Export(_short_rows_export(plan))
    res = capture_slip("chain", plan, "g", tmp_path, tmp_path, tmp_path, ncu=loc, run=fake)
    assert res.status == "captured", res.reason
    profile = next(c for c in fake.calls if "-o" in c)
    assert profile[profile.index("--launch-count") + 1] == "8" and profile[profile.index("--kernel-name") + 1] == "regex:^(k0)$"
    res = capture_slip("chain", plan, "g", tmp_path, tmp_path, tmp_path, ncu=loc, run=Export(_short_rows_export(["k0"] * 7)))
    assert res.status == "failed" and "launches" in res.reason


def test_capture_retries_with_the_required_metrics_when_ncu_rejects_one(tmp_path):
    class PickyNcu(FakeNcu):
        """A FAKE ncu (test fixture) that refuses any metric list longer than the required two."""

        def __call__(self, cmd, **kw):
            if "-o" in cmd and cmd[cmd.index("--metrics") + 1] != ",".join(REQUIRED_METRICS):
                self.calls.append(cmd)
                return subprocess.CompletedProcess(cmd, 1, "", "==ERROR== Failed to find metric l1tex__x (fake)")
            return super().__call__(cmd, **kw)

    fake = PickyNcu()
    res = capture_slip("fam", ["k0"], "g", tmp_path, tmp_path, tmp_path, ncu=NcuLocation("/fake/ncu", "t"), run=fake)
    assert res.status == "captured", res.reason
    rec = json.loads((tmp_path / "slips" / "g" / "fam.json").read_text())
    assert rec["metrics"] == list(REQUIRED_METRICS) and "Failed to find metric" in rec["first_profile"]["log_tail"]
    assert rec["profile_command"][rec["profile_command"].index("--metrics") + 1] == ",".join(REQUIRED_METRICS)


# -- a data group's slip: its own extra metrics, refusals dropped one by one, its cue rows checked ---------


GOOD, BAD1, BAD2 = "sm__cycles_active.max", "sm__no_such_counter_one.sum", "sm__no_such_counter_two.sum"


def _export(names: list[str]) -> str:
    """A layout FIXTURE export (not an ncu run): Duration, then one raw-counter row per name."""
    from plugins.measure.ncu import FIXTURE_MARKER

    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
    pre = f'"0","1","{FIXTURE_MARKER}","fixture-host","k0","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0"'
    rows = [f'{pre},"GPU Speed Of Light Throughput","Duration","us","1.00"']
    rows += [f'{pre},"Command line profiler metrics","{n}","","1"' for n in names]
    return "\n".join(["==PROF== fixture", head, *rows]) + "\n"


class RefusingNcu(FakeNcu):
    """A FAKE ncu (test fixture) that refuses every list holding one of `refuse`, naming the first it meets
    (or, with named=False, naming none), and exports a row for each metric it profiled."""

    def __init__(self, refuse=(BAD1, BAD2), named=True, **kw):
        super().__init__(**kw)
        self.refuse, self.named, self.profiled = refuse, named, []

    def __call__(self, cmd, **kw):
        if "-o" in cmd:
            asked = cmd[cmd.index("--metrics") + 1].split(",")
            bad = [m for m in asked if m in self.refuse]
            if bad:
                self.calls.append(cmd)
                what = bad[0] if self.named else "regex:.* (fake)"
                return subprocess.CompletedProcess(cmd, 1, "", f"==ERROR== Failed to find metric {what}\n")
            self.profiled = asked
            self.export = _export(asked)
        return super().__call__(cmd, **kw)

    def lists(self) -> list[list[str]]:
        return [c[c.index("--metrics") + 1].split(",") for c in self.calls if "-o" in c]


def _slip(tmp_path, fake, family="fam", state=None, **kw):
    from plugins.measure.capture import ProfilerState

    state = state if state is not None else ProfilerState()
    res = capture_slip(family, ["k0"], "g", tmp_path, tmp_path, tmp_path, ncu=NcuLocation("/fake/ncu", "t"), run=fake,
                       state=state, **kw)
    return res, json.loads((tmp_path / "slips" / "g" / f"{family}.json").read_text()), state


def test_extra_metrics_join_only_their_familys_list(tmp_path):
    fake = RefusingNcu(refuse=())
    res, rec, state = _slip(tmp_path, fake, extra_metrics=[GOOD], cue_metrics=[r"^sm__cycles_active\.max$"],
                            data={"generator": "hubs", "hub_rows": 32})
    assert res.status == "captured", res.reason
    assert fake.lists()[0] == [*METRICS, GOOD]
    assert rec["extra_metrics"] == [GOOD] and rec["data"] == {"generator": "hubs", "hub_rows": 32}
    res, rec, _ = _slip(tmp_path, fake, family="classic_fam", state=state)
    assert res.status == "captured" and fake.lists()[1] == list(METRICS), "a classic slip asks for the global list only"
    assert "extra_metrics" not in rec and rec["metrics_dropped"] == []


def test_refused_names_are_dropped_one_by_one_and_learnt(tmp_path):
    fake = RefusingNcu()
    res, rec, state = _slip(tmp_path, fake, extra_metrics=[GOOD, BAD1, BAD2], cue_metrics=[r"^sm__cycles_active\."])
    assert res.status == "captured", res.reason
    assert fake.lists() == [[*METRICS, GOOD, BAD1, BAD2], [*METRICS, GOOD, BAD2], [*METRICS, GOOD]]
    assert [d["metric"] for d in rec["metrics_dropped"]] == [BAD1, BAD2] and rec["profiles"] == 3
    assert all("Failed to find metric" in d["reason"] for d in rec["metrics_dropped"])
    assert rec["metrics"] == [*METRICS, GOOD] and rec["metrics_requested"] == [*METRICS, GOOD, BAD1, BAD2]
    assert set(state.refused) == {BAD1, BAD2} and not any(c[1] == "--query-metrics" for c in fake.calls)
    res, rec, _ = _slip(tmp_path, fake, family="next", state=state, extra_metrics=[GOOD, BAD1])
    assert fake.lists()[-1] == [*METRICS, GOOD], "a later slip never asks for a name refused earlier"
    assert rec["metrics_dropped"] == [{"metric": BAD1, "reason": f"refused earlier in this session: {state.refused[BAD1]}"}]


def test_a_missing_cue_counter_fails_that_slip_not_the_pass(tmp_path):
    fake = RefusingNcu()
    res, rec, state = _slip(tmp_path, fake, extra_metrics=[GOOD, BAD1], cue_metrics=[r"^sm__no_such_counter_one\.sum$", "^Duration$"])
    assert res.status == "failed"
    assert "lacks the family's declared cue rows ['^sm__no_such_counter_one\\\\.sum$']" in res.reason
    assert f"ncu refused ['{BAD1}']" in res.reason and "the pass goes on" in res.reason
    assert rec["cue_rows_missing"] == [r"^sm__no_such_counter_one\.sum$"] and rec["status"] == "failed"
    assert any(f.endswith("fam.csv") for f in res.files), "the export is kept beside the record, as ncu wrote it"
    res, _, _ = _slip(tmp_path, fake, family="other", state=state, extra_metrics=[GOOD], cue_metrics=["^Duration$"])
    assert res.status == "captured", "the next family's slip is taken as usual"


def test_a_cue_row_the_sections_did_not_print_fails_the_slip(tmp_path):
    res, rec, _ = _slip(tmp_path, RefusingNcu(refuse=()), cue_metrics=[r"^Avg\. Active Threads Per Warp$"])
    assert res.status == "failed" and "lacks the family's declared cue rows" in res.reason
    assert "raw counters" not in res.reason and rec["cue_rows_missing"] == [r"^Avg\. Active Threads Per Warp$"]


def test_an_unnamed_refusal_asks_query_metrics_once(tmp_path):
    offered = ("Device GH100 (fake listing, not ncu output)\n---\nMetric Name   Metric Description\n"
               + "".join(f"{m.split('.')[0]}   placeholder description\n" for m in (*METRICS, GOOD)))
    fake = RefusingNcu(named=False, query=offered)
    res, rec, state = _slip(tmp_path, fake, extra_metrics=[GOOD, BAD1, BAD2])
    assert res.status == "captured", res.reason
    assert fake.lists() == [[*METRICS, GOOD, BAD1, BAD2], [*METRICS, GOOD]]
    assert [d["metric"] for d in rec["metrics_dropped"]] == [BAD1, BAD2]
    assert all("not offered by ncu --query-metrics" in d["reason"] for d in rec["metrics_dropped"])
    _slip(tmp_path, RefusingNcu(named=False, refuse=("sm__other.sum",)), family="f2", state=state,
          extra_metrics=["sm__other.sum"])
    assert sum(c[1] == "--query-metrics" for c in fake.calls) == 1 and state.offered is not None


def test_an_unnamed_refusal_with_no_listing_keeps_the_required_metrics(tmp_path):
    fake = RefusingNcu(named=False)
    res, rec, _ = _slip(tmp_path, fake, extra_metrics=[BAD1])
    assert res.status == "captured" and rec["metrics"] == list(REQUIRED_METRICS)
    assert {d["metric"] for d in rec["metrics_dropped"]} == {*METRICS[2:], BAD1}
    assert "without naming a metric" in rec["metrics_dropped"][0]["reason"]


def test_a_refused_required_metric_fails_and_is_not_learnt(tmp_path):
    fake = RefusingNcu(refuse=(REQUIRED_METRICS[0],))
    res, rec, state = _slip(tmp_path, fake)
    assert res.status == "failed" and "required metric(s)" in res.reason and REQUIRED_METRICS[0] in res.reason
    assert state.refused == {} and len(fake.lists()) == 1


def test_a_data_group_member_adds_its_slip_options():
    from plugins.family.manifest import load_family
    from plugins.measure.session import slip_options

    fam = load_family(Path(__file__).parents[1] / "fixtures" / "datagroups" / "gather_sorted")
    assert slip_options(fam) == {"extra_metrics": ("lts__t_sectors_srcunit_tex_op_read.sum",),
                                 "cue_metrics": ("^L2 Hit Rate$", r"^lts__t_sectors_srcunit_tex_op_read\.sum$"),
                                 "data": {"generator": "sorted"}}
    assert slip_options(load_family(Path(__file__).parents[1] / "fixtures" / "items" / "synth_scale")) == {}
