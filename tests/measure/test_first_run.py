"""Issue 19, "no first run lost": a fault or hang never stalls the pass, the rerun keeps the
user's arguments, a partial archive exists after the first key, the NEXT: line always appears.

Everything GPU-shaped is a labelled fake (a CuPy-shaped event stub, fake timers and
executors, a fake `python` for the script); nothing here is a measurement.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from plugins.measure import gpu_run, timing
from plugins.measure.archive import PARTIAL
from plugins.measure.gpu_run import HUNG, TESTS_FAILED, finish, rerun_families
from plugins.measure.session import MeasureConfig
from plugins.measure.timing import CudaEventTimer, LaunchFault, LaunchHung, event_ready, wait_bound_s, wait_event
from tests.measure.test_measure_protocol import FIXTURES, FakeExecutor, FakeTimer, _session

pytestmark = pytest.mark.measure


@pytest.fixture(scope="module")
def scale_fixture():
    from plugins.family.manifest import load_family

    return load_family(FIXTURES / "scale_fixture")

ROOT = Path(__file__).resolve().parents[2]


class StubRuntime:
    """CuPy-shaped `cupy.cuda.runtime` whose eventQuery answers a fixed status (test fixture)."""

    def __init__(self, status: int):
        self.status = status
        self.queries = 0

    def eventQuery(self, ptr):
        self.queries += 1
        return self.status


class StubEvent:
    ptr = 1234

    def record(self, stream=None):
        pass


def test_event_status_is_read_not_just_compared_with_zero():
    assert event_ready(StubRuntime(0), StubEvent()) is True
    assert event_ready(StubRuntime(600), StubEvent()) is False
    with pytest.raises(LaunchFault, match="cudaEventQuery returned 700"):  # cudaErrorIllegalAddress
        event_ready(StubRuntime(700), StubEvent())


def test_a_wait_on_an_event_that_never_completes_ends_inside_its_bound():
    now = [0.0]
    rt = StubRuntime(600)
    with pytest.raises(LaunchHung, match="within 2.0 s"):
        wait_event(rt, StubEvent(), 2.0, "r_one: 3 timed launch(es)", clock=lambda: now[0],
                   sleep=lambda s: now.__setitem__(0, now[0] + 0.25))
    assert 2.0 < now[0] <= 2.5 and rt.queries <= 11


def test_the_bound_comes_from_the_candidates_own_time():
    assert wait_bound_s(3, None) == timing.FIRST_WAIT_S
    assert wait_bound_s(1000, 0.01) == timing.MIN_WAIT_S
    assert wait_bound_s(100, 10.0) == pytest.approx(timing.WAIT_FACTOR * 1.0)


class _StubCuda:
    """CuPy-shaped `cupy.cuda` for CudaEventTimer._timed: events never complete (a hung kernel)."""

    Event = StubEvent

    def __init__(self, status):
        self.runtime = StubRuntime(status)
        self.synchronized = 0
        outer = self

        class Device:
            def synchronize(self):
                outer.synchronized += 1
                raise AssertionError("a synchronize after a hang would wait for ever")

        self.Device = Device


def _stub_timer(status):
    t = CudaEventTimer.__new__(CudaEventTimer)  # no device: only the wait logic is exercised
    t.cp = type("cp", (), {"cuda": _StubCuda(status)})()
    t.clock, t.slowest_ms, t.zero, t.bound = None, {}, {}, {"r_one": ()}
    t._flush_read = lambda: None
    t.ex = type("ex", (), {"launch_bound": staticmethod(lambda bound: None)})()
    return t


def test_the_timer_raises_on_a_hung_launch_within_its_bound(monkeypatch):
    monkeypatch.setattr(timing, "FIRST_WAIT_S", 0.3)
    t = _stub_timer(600)
    t0 = time.monotonic()
    with pytest.raises(LaunchHung):
        t.time_launches("r_one", 3)
    with pytest.raises(LaunchHung):
        t.warmup("r_one", 3)
    assert time.monotonic() - t0 < 3.0 and t.cp.cuda.synchronized == 0


def test_the_timer_raises_on_a_faulted_launch():
    with pytest.raises(LaunchFault):
        _stub_timer(700).time_launches("r_one", 2)


class HangingTimer(FakeTimer):
    def time_launches(self, cid, launches):
        if cid == "r_two":
            raise LaunchHung("r_two: 1 timed launch(es) did not finish within 0.3 s (fake)")
        return super().time_launches(cid, launches)


def _hang_session(tmp_path, scale_fixture, **cfg):
    s = _session(tmp_path)
    s.config = MeasureConfig(**{**vars(s.config), **cfg})
    exits: list[int] = []
    s.exit = exits.append
    return s, exits


def test_a_hung_launch_records_the_family_as_hung_and_exits_with_hung(tmp_path, scale_fixture):
    s, exits = _hang_session(tmp_path, scale_fixture)
    s.timer_factory = lambda fam, shape, host, cands: HangingTimer({c.id: 1.0 for c in cands})
    out = s.measure(scale_fixture)
    assert out.error.startswith("hung: ") and "r_two" in out.error and exits == [HUNG]
    summary = json.loads((tmp_path / "reports" / "measure" / "fake-test-gpu" / "scale_fixture.json").read_text())
    assert summary["reason"].startswith("hung: ")
    again = s.measure(gpu_family_renamed(scale_fixture, "other_fixture"))
    assert again.error.startswith("context: not measured"), "nothing after a hang runs in this process"


def gpu_family_renamed(fam, name):
    from dataclasses import replace

    return replace(fam, name=name)


class BlockingExecutor(FakeExecutor):
    """The gate of `start` blocks (a hang no event wait sees: the gate's synchronize)."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()

    def run(self, fam, cand, shape, buffers):
        if cand.id == "start":
            self.release.wait(20)
        return super().run(fam, cand, shape, buffers)


def test_the_watchdog_records_a_hung_family_and_exits(tmp_path, scale_fixture):
    s, exits = _hang_session(tmp_path, scale_fixture, watchdog_s=0.3)
    ex = BlockingExecutor()
    s.executor = ex
    s.exit = lambda code: (exits.append(code), ex.release.set())
    t0 = time.monotonic()
    out = s.measure(scale_fixture)
    assert time.monotonic() - t0 < 10, "released by the watchdog, not by the executor's own 20 s"
    assert exits == [HUNG] and out.error.startswith("hung: ") and "watchdog of 0.3 s" in out.error
    summary = json.loads((tmp_path / "reports" / "measure" / "fake-test-gpu" / "scale_fixture.json").read_text())
    assert summary["reason"].startswith("hung: scale_fixture was still running after its watchdog")


def test_the_rerun_covers_the_families_a_hang_left(tmp_path):
    rep = tmp_path / "reports" / "measure"
    (rep / "g").mkdir(parents=True)
    (rep / "selected.json").write_text(json.dumps({"families": ["a", "b", "c", "d"]}))
    (rep / "g" / "a.json").write_text(json.dumps({"family": "a", "reason": "", "key": "x"}))
    (rep / "g" / "b.json").write_text(json.dumps({"family": "b", "reason": "hung: b was still running"}))
    (rep / "g" / "c.json").write_text(json.dumps({"family": "c", "reason": "context: not measured, ..."}))
    assert rerun_families(tmp_path) == ["c", "d"]


def test_the_partial_archive_exists_after_the_first_key(tmp_path, scale_fixture):
    s, _ = _hang_session(tmp_path, scale_fixture, partial_archive=True)
    s.measure(scale_fixture)
    with tarfile.open(tmp_path / PARTIAL) as tar:
        names = tar.getnames()
    assert "families/scale_fixture/measurements/fake-test-gpu.json" in names
    assert "reports/measure/fake-test-gpu/scale_fixture.json" in names


def test_the_next_line_appears_whatever_the_exit_status(tmp_path):
    rep = tmp_path / "out" / "reports" / "measure" / "g"
    rep.mkdir(parents=True)
    (rep / "a.json").write_text(json.dumps({"family": "a", "key": "k", "slip": "skipped",
                                            "slip_reason": "time budget: 3 s left before the deadline"}))
    lines: list[str] = []
    code = finish(tmp_path / "out", tmp_path / "repo", 1, emit=lines.append, pass_args=["--set", "all"])
    assert code == TESTS_FAILED
    nxt = [line for line in "\n".join(lines).splitlines() if line.startswith("NEXT: ")]
    assert len(nxt) == 1 and 'scripts/measure-gpu.sh --slips-only "$OUT" --set all' in nxt[0] and "a" in nxt[0]
    assert "NEXT: " in (tmp_path / "out" / "summary.txt").read_text()


FAKE_PY = r'''#!{python}
"""A FAKE python for scripts/measure-gpu.sh (test fixture): pytest and the preflight are faked."""
import json, os, sys
from pathlib import Path
a = sys.argv[1:]
if a[:2] == ["-m", "pytest"]:
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(json.dumps(a) + "\n")
    out = Path(a[a.index("--measure-out") + 1])
    rep = out / "reports" / "measure"
    (rep / "g").mkdir(parents=True, exist_ok=True)
    if not (rep / "selected.json").exists():
        (rep / "selected.json").write_text(json.dumps({{"families": ["a", "b", "c"]}}))
        (rep / "g" / "a.json").write_text(json.dumps({{"family": "a", "reason": "", "key": "k", "slip": "skipped"}}))
        (rep / "g" / "b.json").write_text(json.dumps({{"family": "b", "reason": "hung: b (fake)", "slip": "skipped"}}))
        sys.exit(10)
    for name in a[a.index("--measure-families") + 1].split(","):
        (rep / "g" / f"{{name}}.json").write_text(json.dumps({{"family": name, "reason": "", "key": "k", "slip": "skipped"}}))
    sys.exit(0)
if a[:3] == ["-m", "plugins.measure.gpu_run", "preflight"]:
    Path(a[3], "preflight.json").write_text(json.dumps({{"status": 0, "ncu": {{"unusable": "", "metrics": "all"}}}}))
    sys.exit(0)
os.execv({python!r}, [{python!r}, *a])
'''


def test_the_crash_rerun_forwards_the_users_arguments(tmp_path):
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "pytest-calls.jsonl"
    out = tmp_path / "out"
    p = subprocess.run(["bash", str(ROOT / "scripts" / "measure-gpu.sh"), str(out), "--set", "all", "--no-ncu",
                        "--measure-blocks", "2"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHON": str(fake), "FAKE_LOG": str(log), "MEASURE_STATE_DIR": str(tmp_path / "st"),
                            "PATH": os.environ["PATH"]})
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 2, p.stdout + p.stderr
    rerun = calls[1]
    for arg in ("--set", "all", "--no-ncu", "--measure-blocks", "2"):
        assert arg in rerun, (arg, rerun)
    assert rerun[rerun.index("--measure-families") + 1] == "c", "the hung family is not rerun; the one never reached is"
    assert "--measure-rerun" in rerun and "--measure-rerun" not in calls[0], "only the rerun carries the gate's crashes"
    assert p.returncode == HUNG, p.stdout + p.stderr
