"""The slip budget (defects 1 and 5) and the session-level profiler facts (defect 4).

Slip durations are fed in by the tests and time moves on a fake clock; ncu is a
labelled fake runner. Nothing here is a measurement.
"""
from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest

from plugins.family.manifest import load_family
from plugins.measure.budget import FIRST_SLIP_GUESS_S, SAFETY, StepBudget, deadline_from_budget
from plugins.measure.capture import METRICS, REQUIRED_METRICS, NcuLocation, ProfilerState, SlipResult, capture_slip
from plugins.measure.session import MeasureConfig, MeasureSession

pytestmark = pytest.mark.measure

FIXTURES = Path(__file__).parents[1] / "fixtures" / "measure"
CSV = (FIXTURES / "ncu_details_fixture.csv").read_text()


class Clock:
    """A FAKE monotonic clock (test fixture), moved by hand or by fakes."""

    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


# --------------------------------------------------------------------------- the arithmetic


def test_a_slip_starts_only_with_a_safe_multiple_of_the_longest_left():
    clock = Clock()
    b = StepBudget(clock.now + 100.0, clock)
    assert b.planned_s == FIRST_SLIP_GUESS_S == 15.0 and SAFETY == 1.5
    assert b.decide().start  # 100 s left >= 22.5 s
    clock.now += 78.0  # 22 s left < 1.5 x 15 s (the first guess)
    d = b.decide()
    assert not d.start and d.reason.startswith("time budget: 22 s left") and "22 s a slip needs" in d.reason
    b.record(6.0)
    b.record(9.0)  # fed durations: the longest so far, 9 s, is now the plan
    assert b.planned_s == 9.0
    assert b.decide().start  # 22 s >= 13.5 s
    clock.now += 9.0  # 13 s left
    d = b.decide()
    assert not d.start and "1.5 x 9.0 s (the longest slip so far)" in d.reason
    assert b.decide(planned_s=8.0).start, "a step planned at its own length (a repeat) uses that length"


def test_every_timeout_is_bounded_by_the_deadline():
    clock = Clock()
    b = StepBudget(clock.now + 20.0, clock)
    assert b.timeout(60.0, reserve_s=5.0) == 15.0, "60 s asked, 20 s left, 5 s kept for the export"
    assert b.timeout(30.0) == 20.0
    clock.now += 18.0
    assert b.timeout(30.0) is None, "under 3 s left: the subprocess is not started"
    assert StepBudget(None, clock).timeout(60.0) == 60.0


def test_a_budget_of_zero_means_no_slip_and_none_means_no_limit():
    clock = Clock()
    assert deadline_from_budget(None, clock.now) is None
    assert deadline_from_budget(0, clock.now) == clock.now
    zero = StepBudget(deadline_from_budget(0, clock.now), clock)
    assert not zero.decide().start and not zero.decide(planned_s=0.001).start
    assert StepBudget(None, clock).decide().start
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            deadline_from_budget(bad, clock.now)


# --------------------------------------------------------------------------- fifteen families on fed slip durations


class KeyExecutor:
    """A FAKE executor (test fixture): the reference for start and rewrites, a NaN for wrong variants."""

    name = "fake (test fixture)"
    sm_count = 4

    def run(self, fam, cand, shape, buffers):
        import numpy as np

        inputs = {k: v for k, v in buffers.items() if fam.buffer(k).role == "input"}
        out = dict(buffers)
        for name, val in fam.reference_module().reference(inputs, dict(shape)).items():
            arr = np.asarray(val, dtype=fam.buffer(name).dtype).copy()
            if cand.role == "wrong":
                arr[-1] = np.nan
            out[name] = arr
        return out


class ConstTimer:
    """A FAKE timer (test fixture): each candidate always "takes" the fed time below."""

    name = "const-timer (test fixture)"
    flush_bytes = 1 << 20
    copy_bytes = 2 << 20
    throttle_note = "fake"
    max_sm_clock_mhz = None
    FED_MS = {"start": 5.0, "r_one": 1.0, "r_two": 1.3, "r_three": 2.0, "r_four": 2.2}

    def warmup(self, cid, launches):
        pass

    def time_launches(self, cid, launches):
        from plugins.measure.timing import Timed

        return Timed((self.FED_MS[cid],) * launches, None)

    def time_copy(self, launches):
        from plugins.measure.timing import Timed

        return Timed((0.5,) * launches, None)


def _timer(fam, shape, host, cands):
    return ConstTimer()


def _families(n: int):
    import dataclasses

    base = load_family(FIXTURES / "scale_fixture")
    return [dataclasses.replace(base, name=f"fam_{i:02d}") for i in range(n)]


def test_fifteen_slips_on_fed_durations_skip_what_does_not_fit_and_never_overrun(tmp_path):
    clock = Clock()
    durations = iter([7.0, 12.0, 6.0, 15.0, 9.0, 8.0, 11.0, 14.0, 6.5, 10.0, 13.0, 7.5, 9.5, 12.5, 8.5])
    spans: list[tuple[float, float]] = []

    def capture(fam, gpu, budget=None, name=None, inputs=None):  # a FAKE slip: takes the next fed duration of the fake clock
        t0 = clock.now
        clock.now += next(durations)
        spans.append((t0, clock.now))
        return SlipResult("captured", "", [f"slips/{gpu}/{fam.name}.csv"])

    deadline = clock.now + 120.0
    cfg = MeasureConfig(out_root=Path("/nonexistent-out (test)"), repo=Path("."), families_root=FIXTURES, command="t", deadline=deadline,
                        inputs_root=tmp_path)  # the timing inputs' files: the only thing written
    s = MeasureSession(cfg, KeyExecutor(), _timer, gpu={"slug": "fake-test-gpu"}, provenance={}, capture=capture,
                       seeds=lambda n: (1,), new_seed=itertools.count(1).__next__, clock=clock)
    s._write_summary = lambda out: None  # nothing is written for this arithmetic
    import plugins.measure.session as session_mod

    real_write_key = session_mod.write_key
    session_mod.write_key = lambda *a, **k: Path("/nonexistent-key (test)")
    try:
        fams = _families(15)
        for f in fams:
            s.measure(f)
        results = [s.slip_slot(i, fams) for i in range(15)]
    finally:
        session_mod.write_key = real_write_key
    taken = [r for r in results if r.slip["status"] == "captured"]
    skipped = [r for r in results if r.slip["status"] == "skipped"]
    assert len(taken) + len(skipped) == 15 and not [r for r in results if r.slip["status"] == "failed"]
    assert all(r.slip["reason"].startswith("time budget") for r in skipped), "a slip that does not fit is skipped, with that reason"
    assert all(end <= deadline for _, end in spans), "no slip ran past the deadline on these durations"
    # each slip started only with 1.5 x (the longest before it, or 15 s before the first) left
    for i, (start, _) in enumerate(spans):
        longest = max((e - b for b, e in spans[:i]), default=FIRST_SLIP_GUESS_S)
        assert deadline - start >= SAFETY * longest
    # 7+12+6+15+9+8+11+14 = 82 s in eight slips; the ninth starts with 38 s left (>= 1.5 x 15), the
    # tenth with 31.5 s left; after it 21.5 s are left, under 22.5 s: the last five are skipped
    assert len(taken) == 10 and clock.now == pytest.approx(1000.0 + 82.0 + 6.5 + 10.0)
    assert [r.family for r in skipped] == [f"fam_{i:02d}" for i in range(10, 15)]


# --------------------------------------------------------------------------- the profiler, learnt once per session


class FakeNcu:
    """A FAKE ncu (test fixture) answering subprocess calls; `mode` picks its failure."""

    def __init__(self, mode: str = "ok"):
        self.mode = mode
        self.calls: list[list[str]] = []

    def __call__(self, cmd, **kw):
        self.calls.append(list(cmd))
        self.timeouts = getattr(self, "timeouts", []) + [kw.get("timeout")]
        if cmd[1] == "--version":
            return subprocess.CompletedProcess(cmd, 0, "Version 2025.3.1.0 (build 1) (fake)\n", "")
        if cmd[1] == "--import":
            return subprocess.CompletedProcess(cmd, 0, CSV, "")
        if self.mode == "perm":
            return subprocess.CompletedProcess(cmd, 1, "==PROF== Connected to process 1\n",
                                               "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                                               "NVIDIA GPU Performance Counters on the target device 0. (fake)\n")
        if self.mode == "picky" and "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum" in cmd[cmd.index("--metrics") + 1]:
            return subprocess.CompletedProcess(cmd, 1, "", "==ERROR== Failed to find metric l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum (fake)\n")
        out = Path(cmd[cmd.index("-o") + 1])
        out.parent.joinpath(out.name + ".ncu-rep").write_bytes(b"stub report written by a test fake")
        return subprocess.CompletedProcess(cmd, 0, "==PROF== Disconnected\n", "")

    def profiles(self) -> list[list[str]]:
        return [c for c in self.calls if "-o" in c]


def _ncu_session(tmp_path, fake, clock=None, deadline=None, state=None):
    state = state or ProfilerState()

    def capture(fam, gpu, budget=None, name=None, inputs=None):
        return capture_slip(fam.name, ["k0"], gpu, tmp_path, tmp_path, FIXTURES, ncu=NcuLocation("/fake/ncu", "test"),
                            run=fake, python="python3", state=state, budget=budget, name=name)

    clock = clock or Clock()
    cfg = MeasureConfig(out_root=tmp_path, repo=tmp_path, families_root=FIXTURES, command="t", deadline=deadline)
    s = MeasureSession(cfg, KeyExecutor(), _timer, gpu={"slug": "fake-test-gpu"}, provenance={}, capture=capture,
                       seeds=lambda n: (1,), new_seed=itertools.count(1).__next__, clock=clock)
    return s, state


def test_a_counter_permission_error_skips_every_later_slip_without_starting_ncu(tmp_path):
    fake = FakeNcu("perm")
    s, state = _ncu_session(tmp_path, fake)
    fams = _families(3)
    for f in fams:
        s.measure(f)
    out = [s.slip_slot(i, fams) for i in range(3)]
    assert out[0].slip["status"] == "failed" and "ERR_NVGPUCTRPERM" in out[0].slip["reason"]
    assert "every later slip of this session is skipped" in out[0].slip["reason"]
    for o in out[1:]:
        assert o.slip["status"] == "skipped" and "ERR_NVGPUCTRPERM" in o.slip["reason"] and o.slip["files"] == []
    assert len(fake.profiles()) == 1 and len(fake.calls) == 2, "one --version and one profile: no second ncu start"
    assert state.unusable.startswith("==ERROR== ERR_NVGPUCTRPERM")
    key = json.loads((tmp_path / "families" / "fam_02" / "measurements" / "fake-test-gpu.json").read_text())
    assert key["slip"]["status"] == "skipped" and "ERR_NVGPUCTRPERM" in key["slip"]["reason"]


def test_a_profiler_known_unusable_from_the_preflight_never_starts_ncu(tmp_path):
    fake = FakeNcu("ok")
    s, _ = _ncu_session(tmp_path, fake, state=ProfilerState(unusable="Failed to initialize the profiler: LibraryNotLoaded (preflight, fake)"))
    fams = _families(2)
    for f in fams:
        s.measure(f)
    out = [s.slip_slot(i, fams) for i in range(2)]
    assert all(o.slip["status"] == "skipped" and "LibraryNotLoaded" in o.slip["reason"] for o in out)
    assert fake.calls == []


def test_a_rejected_optional_metric_is_learnt_once(tmp_path):
    fake = FakeNcu("picky")
    s, state = _ncu_session(tmp_path, fake)
    fams = _families(3)
    for f in fams:
        s.measure(f)
    out = [s.slip_slot(i, fams) for i in range(3)]
    assert all(o.slip["status"] == "captured" for o in out), [o.slip for o in out]
    atom = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum"
    rest = [m for m in METRICS if m != atom]
    metric_lists = [c[c.index("--metrics") + 1] for c in fake.profiles()]
    assert metric_lists == [",".join(METRICS)] + [",".join(rest)] * 3, \
        "the first slip is refused once and retried without the one refused name; every later one leaves it out at once"
    assert list(state.refused) == [atom] and "Failed to find metric" in state.refused[atom]
    first = json.loads((tmp_path / "slips" / "fake-test-gpu" / "fam_00.json").read_text())
    assert first["metrics"] == rest and [d["metric"] for d in first["metrics_dropped"]] == [atom] and first["profiles"] == 2
    later = json.loads((tmp_path / "slips" / "fake-test-gpu" / "fam_02.json").read_text())
    assert later["metrics"] == rest and later["metrics_dropped"][0]["reason"].startswith("refused earlier in this session")
    assert not any(c[1] == "--query-metrics" for c in fake.calls), "ncu named the metric: nothing to query"
    assert len([c for c in fake.calls if c[1] == "--version"]) == 1, "ncu's version is read once per session"


def test_capture_bounds_profile_and_export_timeouts_by_the_deadline(tmp_path):
    clock = Clock()
    fake = FakeNcu("ok")
    budget = StepBudget(clock.now + 25.0, clock)
    res = capture_slip("fam", ["k0"], "g", tmp_path, tmp_path, FIXTURES, ncu=NcuLocation("/fake/ncu", "t"), run=fake,
                       state=ProfilerState(version="fake"), budget=budget)
    assert res.status == "captured"
    assert fake.timeouts == [20.0, 25.0], "profile: 25 s left less the 5 s export reserve; export: 25 s left, not its 30"

    class SlowNcu(FakeNcu):  # the FAKE profile "takes" 23 of the 25 s
        def __call__(self, cmd, **kw):
            if "-o" in cmd:
                clock.now += 23.0
            return super().__call__(cmd, **kw)

    clock.now, slow = 1000.0, SlowNcu("ok")
    res = capture_slip("fam", ["k0"], "g", tmp_path, tmp_path, FIXTURES, ncu=NcuLocation("/fake/ncu", "t"), run=slow,
                       state=ProfilerState(version="fake"), budget=StepBudget(clock.now + 25.0, clock))
    assert res.status == "skipped" and res.reason.startswith("time budget: the report was written but too little time")
    assert "--import" in res.reason
    assert not [c for c in slow.calls if c[1] == "--import"], "no export started with 2 s left"
    clock.now = 1000.0
    res = capture_slip("fam", ["k0"], "g", tmp_path, tmp_path, FIXTURES, ncu=NcuLocation("/fake/ncu", "t"), run=FakeNcu("ok"),
                       state=ProfilerState(version="fake"), budget=StepBudget(clock.now + 7.0, clock))
    assert res.status == "skipped" and res.reason.startswith("time budget"), "2 s for the profile: not started"


def test_the_issue_case_a_slip_with_20_s_left_is_skipped_not_failed(tmp_path):
    """Defect 1: with 20 s left the old pass started a slip with a 15 s timeout, which then failed."""
    clock = Clock()
    fake = FakeNcu("ok")
    s, _ = _ncu_session(tmp_path, fake, clock=clock, deadline=clock.now + 20.0)
    fam = _families(1)[0]
    s.measure(fam)
    out = s.slip(fam)
    assert out.slip["status"] == "skipped" and out.slip["reason"].startswith("time budget: 20 s left") and fake.calls == []


def test_a_second_slip_is_written_beside_the_first(tmp_path):
    fake = FakeNcu("ok")
    repo = tmp_path / "repo"
    (repo / "slips" / "fake-test-gpu").mkdir(parents=True)
    (repo / "slips" / "fake-test-gpu" / "fam_00.csv").write_text("the committed slip (fixture)\n")
    s, _ = _ncu_session(tmp_path / "out", fake)
    s.config = MeasureConfig(**{**vars(s.config), "also_check": (repo,)})
    fam = _families(1)[0]
    s.measure(fam)
    out = s.slip(fam)
    assert out.slip["status"] == "captured"
    names = sorted(Path(f).name for f in out.slip["files"])
    assert all(n.startswith("fam_00.") and n.count(".") == 2 for n in names), names
    assert (repo / "slips" / "fake-test-gpu" / "fam_00.csv").read_text() == "the committed slip (fixture)\n"
