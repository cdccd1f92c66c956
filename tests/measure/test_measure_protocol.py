"""CPU tests of the measure pass: everything that is not the GPU.

All timings here are fed in by the tests (or by clearly labelled fakes); none
of them is a measurement, and every file written goes to tmp_path.
"""
from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from plugins.gate.check import GateResult
from plugins.measure.keyfile import load_key
from plugins.family.manifest import load_family
from plugins.measure.session import FamilyOutcome, MeasureConfig, MeasureSession, MeasureState, gate_problems, summary_rows, timing_buffers
from plugins.family.plan import BufferArg, ResolvedLaunch, ScalarArg
from plugins.measure.ranking import KEEP_RATIO, candidate_stats, median, rank, rank_family, spread, throughput
from plugins.measure.timing import BlockRun, ReplayClock, Timed, block_orders, launches_per_block, run_blocks

pytestmark = pytest.mark.measure

FIXTURES = Path(__file__).parents[1] / "fixtures" / "measure"


# --------------------------------------------------------------------------- block schedule


def test_block_orders_are_seeded_permutations():
    ids = ["start", "a", "b", "c", "d"]
    orders = block_orders(ids, 5, seed=123)
    assert len(orders) == 5
    for order in orders:
        assert sorted(order) == sorted(ids)
    assert orders == block_orders(ids, 5, seed=123), "the same seed must give the same orders"
    assert orders != block_orders(ids, 5, seed=124)
    assert len({tuple(o) for o in orders}) > 1, "each block draws a fresh order"


def test_launches_per_block_targets_ten_ms_and_never_below_one():
    assert launches_per_block(0.1) == 100
    assert launches_per_block(2.5) == 4
    assert launches_per_block(60.0) == 1
    assert launches_per_block(1e-6) == 1000  # capped
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            launches_per_block(bad)


# --------------------------------------------------------------------------- median, spread, ranking


def test_median_and_spread_on_fed_timings():
    assert median([3.0, 1.0, 2.0, 5.0, 4.0]) == 3.0
    assert median([1.0, 2.0, 3.0, 4.0]) == 2.5
    assert spread([0.9, 1.0, 1.1, 1.0, 1.0]) == pytest.approx(0.2)
    with pytest.raises(ValueError):
        median([])
    st = candidate_stats("x", [])
    assert st.time_ms is None and not st.timed


def _stats(times: dict[str, list[float]]):
    return {k: candidate_stats(k, v) for k, v in times.items()}


def test_rank_keeps_a_clear_winner():
    st = _stats({"a": [2.0] * 5, "b": [1.0, 1.0, 1.0, 1.0, 1.0], "c": [1.5] * 5, "d": [3.0] * 5})
    r = rank(["a", "b", "c", "d"], st)
    assert r.order == ("b", "c", "a", "d")
    assert (r.winner, r.runner_up) == ("b", "c")
    assert r.ratio == pytest.approx(1.5)
    assert r.kept and not r.noisy
    assert r.reason.startswith("kept")


def test_rank_drops_below_the_gate_with_reason():
    st = _stats({"a": [1.05] * 5, "b": [1.0] * 5, "c": [2.0] * 5, "d": [3.0] * 5})
    r = rank(["a", "b", "c", "d"], st)
    assert (r.winner, r.runner_up) == ("b", "a")
    assert r.ratio == pytest.approx(1.05)
    assert not r.kept
    assert "1.05" in r.reason and str(KEEP_RATIO) in r.reason


def test_rank_gate_boundary_is_inclusive():
    st = _stats({"a": [1.08] * 5, "b": [1.0] * 5})
    assert rank(["a", "b"], st).kept
    st = _stats({"a": [1.0799] * 5, "b": [1.0] * 5})
    assert not rank(["a", "b"], st).kept


def test_rank_tie_is_dropped_and_ordered_by_option_order():
    st = _stats({"a": [2.0] * 5, "b": [1.0] * 5, "c": [1.0] * 5, "d": [3.0] * 5})
    r = rank(["a", "b", "c", "d"], st)
    assert r.order == ("b", "c", "a", "d")  # b before c: forward option order breaks the tie
    assert r.ratio == 1.0
    assert not r.kept
    assert ("b", "c") in r.ties
    assert "tie" in r.reason


def test_rank_with_only_two_rewrites_passing():
    st = _stats({"a": [1.0] * 5, "c": [1.2] * 5})
    r = rank(["a", "b", "c", "d"], st, not_timed={"b": "gated out: wrong", "d": "gated out: crash"})
    assert r.order == ("a", "c")
    assert r.ratio == pytest.approx(1.2)
    assert r.kept
    assert "ranked 2 of 4" in r.reason and "b: gated out" in r.reason


def test_rank_drops_a_family_with_fewer_than_two_timed():
    st = _stats({"a": [1.0] * 5})
    r = rank(["a", "b", "c", "d"], st, not_timed={"b": "gated out", "c": "gated out", "d": "gated out"})
    assert not r.kept and r.winner == "a" and r.runner_up is None and r.ratio is None
    assert "only 1 rewrite" in r.reason
    r0 = rank(["a", "b"], {}, not_timed={"a": "gated out", "b": "gated out"})
    assert not r0.kept and r0.winner is None and "only 0" in r0.reason


def test_noise_flag_when_margin_is_within_spread():
    # ratio 1.10 is 1.85 % above 1.08; spreads 0.02 + 0.02 = 0.04 cover it
    st = _stats({"a": [0.99, 1.0, 1.01], "b": [1.089, 1.10, 1.111]})
    r = rank(["a", "b"], st)
    assert r.kept and r.noisy and "within" in r.noise_reason
    # same ratio, tight blocks: trustworthy
    st = _stats({"a": [1.0, 1.0, 1.0], "b": [1.10, 1.10, 1.10]})
    r = rank(["a", "b"], st)
    assert r.kept and not r.noisy and r.noise_reason == ""
    # a drop just below the line is flagged as well: a rerun could keep it
    st = _stats({"a": [0.99, 1.0, 1.01], "b": [1.06, 1.07, 1.08]})
    r = rank(["a", "b"], st)
    assert not r.kept and r.noisy


def test_gate_problem_drops_whatever_the_timings():
    st = _stats({"a": [1.0] * 5, "b": [2.0] * 5})
    r = rank(["a", "b"], st, gate_problem="wrong variant 'w' passed the gate")
    assert not r.kept and "wrong variant" in r.reason and r.ratio == pytest.approx(2.0)


def test_rank_family_speedups_and_bandwidth():
    fr = rank_family(
        "start", ["a", "b"], {"start": [4.0] * 5, "a": [1.0] * 5, "b": [2.0] * 5},
        bytes_moved=1_000_000, copy_bytes_per_s=2e9, memory_bound=True,
    )
    assert fr.speedups["a"] == pytest.approx(4.0) and fr.speedups["b"] == pytest.approx(2.0) and fr.speedups["start"] == 1.0
    assert fr.throughputs["a"].bytes_per_s == pytest.approx(1e9)
    assert fr.throughputs["a"].fraction_of_copy == pytest.approx(0.5)
    compute = throughput(1_000_000, 1.0, 2e9, memory_bound=False)
    assert compute.bytes_per_s is None and compute.fraction_of_copy is None
    no_start = rank_family("start", ["a", "b"], {"a": [1.0] * 5, "b": [2.0] * 5})
    assert not no_start.ranking.kept and "starting kernel" in no_start.ranking.reason
    assert no_start.speedups["a"] is None


# --------------------------------------------------------------------------- the block driver on a fake timer


class FakeTimer:
    """A FAKE device for CPU tests: returns the per-candidate times it was given, never measures."""

    name = "fake-timer (test fixture)"
    flush_bytes = 1 << 20
    copy_bytes = 2 << 20
    throttle_note = "fake clock"

    def __init__(self, times_ms: dict[str, float], clocks: dict[tuple[str, int], float] | None = None,
                 crash: set[str] = frozenset(), max_clock: float | None = 2000.0):
        self.times = times_ms
        self.clocks = clocks or {}
        self.crash = crash
        self.max_sm_clock_mhz = max_clock
        self.calls: list[tuple[str, int]] = []
        self.count = {k: 0 for k in times_ms}
        self.warm: dict[str, int] = {}

    def warmup(self, cid, launches):
        self.warm[cid] = launches

    def time_launches(self, cid, launches):
        if cid in self.crash and self.count[cid] >= 1:
            raise RuntimeError("illegal memory access (fake)")
        n = self.count[cid]
        self.count[cid] += 1
        self.calls.append((cid, launches))
        return Timed(tuple([self.times[cid]] * launches), self.clocks.get((cid, n), 1980.0))

    def time_copy(self, launches):
        return Timed(tuple([0.5] * launches), 1980.0)


def test_run_blocks_follows_the_protocol():
    t = FakeTimer({"start": 8.0, "a": 0.1, "b": 0.2})
    br = run_blocks(t, ["start", "a", "b"], seed=7, blocks=5)
    assert br.launches == {"start": 1, "a": 100, "b": 50}
    assert all(v == 3 for v in t.warm.values())
    assert br.orders == block_orders(["start", "a", "b"], 5, 7)
    # after the estimates, the calls follow the recorded orders exactly
    timed_calls = [c for c, _ in t.calls[3:]]
    assert timed_calls == list(itertools.chain.from_iterable(br.orders))
    for cid in ("start", "a", "b"):
        assert [s.block for s in br.samples[cid]] == [0, 1, 2, 3, 4]
        assert br.kept(cid) == pytest.approx([t.times[cid]] * 5)
    assert br.copy_bytes_per_s == pytest.approx((2 << 20) / 0.5e-3)
    rec = br.protocol_record()
    assert rec["blocks"] == 5 and rec["block_seed"] == 7 and rec["launches_per_block"]["a"] == 100


def test_run_blocks_skips_and_records_throttled_samples():
    t = FakeTimer({"a": 1.0, "b": 2.0}, clocks={("a", 3): 600.0})  # call 0 is the estimate; 3 is block 2
    br = run_blocks(t, ["a", "b"], seed=1, blocks=5)
    skipped = [s for s in br.samples["a"] if not s.kept]
    assert len(skipped) == 1 and skipped[0].block == 2 and skipped[0].sm_clock_mhz == 600.0
    assert "throttled" in skipped[0].reason
    assert len(br.kept("a")) == 4 and len(br.kept("b")) == 5


def test_run_blocks_without_nvml_keeps_every_sample():
    t = FakeTimer({"a": 1.0}, clocks={("a", 1): 10.0}, max_clock=None)
    br = run_blocks(t, ["a"], seed=1, blocks=3)
    assert len(br.kept("a")) == 3 and br.max_sm_clock_mhz is None


def test_run_blocks_records_a_crash_and_goes_on():
    t = FakeTimer({"a": 1.0, "b": 2.0}, crash={"b"})
    br = run_blocks(t, ["a", "b"], seed=3, blocks=5)
    assert "b" in br.failures and "illegal memory access" in br.failures["b"]
    assert len(br.kept("a")) == 5


# --------------------------------------------------------------------------- pytest-benchmark replay


def test_replay_clock_feeds_pytest_benchmark_the_recorded_samples():
    """pytest-benchmark's own round runner, with the replay clock, yields exactly the samples."""
    from pytest_benchmark.fixture import BenchmarkFixture

    samples_ms = [1.25, 1.5, 1.0]
    clock = ReplayClock(samples_ms)
    fx = object.__new__(BenchmarkFixture)  # only the runner is exercised; no session needed
    fx._disable_gc = False
    fx._timer = clock
    runner = fx._make_runner(clock.advance, (), {})
    got = [runner(None)[0] for _ in samples_ms]
    assert got == pytest.approx([s / 1e3 for s in samples_ms])
    with pytest.raises(RuntimeError):
        clock.advance()
    with pytest.raises(ValueError):
        ReplayClock([])


# --------------------------------------------------------------------------- device helpers (no GPU needed)


def test_scalar_args_use_the_declared_c_types():
    from plugins.measure.device import kernel_args, scalar

    assert scalar(ScalarArg("n", "int", 5)).dtype == np.int32
    assert scalar(ScalarArg("n", "long long", 2**40)).dtype == np.int64
    assert scalar(ScalarArg("n", "unsigned int", 7)).dtype == np.uint32
    v = scalar(ScalarArg("a", "float", 0.5))
    assert v.dtype == np.float32 and v == np.float32(0.5)
    with pytest.raises(TypeError, match="not an integer"):
        scalar(ScalarArg("n", "int", 2.5))
    with pytest.raises(OverflowError):
        scalar(ScalarArg("n", "int", 2**31))
    with pytest.raises(TypeError, match="no NumPy equivalent"):
        scalar(ScalarArg("h", "half", 1.0))
    launch = ResolvedLaunch("k0", (1, 1, 1), (32, 1, 1), 0, (BufferArg("x"), ScalarArg("n", "int", 3)))
    args = kernel_args(launch, {"x": "DEVICE-X"})
    assert args[0] == "DEVICE-X" and args[1].dtype == np.int32
    with pytest.raises(KeyError, match="not allocated"):
        kernel_args(launch, {})


@pytest.mark.parametrize(
    "behaviour, kind, words",
    [
        ("import", "cupy", "cupy is not importable"),
        ("nodevice", "no-device", "finds none"),
        ("zero", "no-device", "0 devices"),
        ("driver", "driver", "CUDA driver error"),
    ],
)
def test_probe_reasons_are_precise(behaviour, kind, words):
    from plugins.measure.device import probe

    class CUDARuntimeError(RuntimeError):
        pass

    class FakeRuntime:
        def getDeviceCount(self):
            if behaviour == "nodevice":
                raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
            if behaviour == "driver":
                raise CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
            return 0

    class FakeCupy:
        class cuda:
            runtime = FakeRuntime()

    def importer():
        if behaviour == "import":
            raise ModuleNotFoundError("No module named 'cupy'")
        return FakeCupy

    st = probe(0, importer)
    assert not st.available and st.kind == kind
    assert st.reason.startswith("no CUDA device: ") and words in st.reason


# --------------------------------------------------------------------------- provenance with fakes


class FakeProbe:
    """A FAKE device probe (test fixture): fixed answers, nothing read from hardware."""

    def properties(self):
        return {"name": b"FAKE GPU (test fixture)", "major": 9, "minor": 0, "multiProcessorCount": 7,
                "l2CacheSize": 1 << 20, "totalGlobalMem": 1 << 30, "clockRate": 1_500_000, "memoryClockRate": 1_000_000}

    def driver_api_version(self):
        return 13000

    def runtime_version(self):
        return 12080

    def cupy_version(self):
        return "0.0.0-fake"

    def nvrtc_version(self):
        return "13.0"

    def nvml(self):
        return {"driver": "000.00-fake", "sm_clock_mhz": 1000, "sm_clock_max_mhz": 1500, "mem_clock_mhz": 900, "mem_clock_max_mhz": 1000}


class BrokenProbe:
    """A FAKE probe on which every read fails, as on a machine missing each piece."""

    def properties(self):
        raise RuntimeError("cudaErrorNoDevice")

    def driver_api_version(self):
        raise OSError("libcuda.so not found")

    runtime_version = driver_api_version

    def cupy_version(self):
        raise ModuleNotFoundError("No module named 'cupy'")

    nvrtc_version = cupy_version

    def nvml(self):
        raise ModuleNotFoundError("No module named 'pynvml'")


def _fake_git(responses):
    def run(cmd, **kw):
        key = cmd[3]
        rc, out = responses[key]
        return subprocess.CompletedProcess(cmd, rc, out, "fatal: not a git repository" if rc else "")
    return run


def test_provenance_from_a_fake_probe():
    from datetime import datetime, timezone

    from plugins.measure.provenance import gpu_record, software_record

    gpu = gpu_record(FakeProbe())
    assert gpu["name"] == "FAKE GPU (test fixture)" and gpu["slug"] == "fake-gpu-test-fixture"
    assert gpu["compute_capability"] == "9.0" and gpu["sm_count"] == 7 and gpu["l2_bytes"] == 1 << 20
    assert gpu["sm_clock_mhz"] == 1000 and gpu["sm_clock_max_mhz"] == 1500
    run = _fake_git({"rev-parse": (0, "abc123\n"), "status": (0, " M plugins/x.py\n")})
    prov = software_record(FakeProbe(), Path("."), ["pytest", "-m", "measure"], "2025.3.1.0", ["--std=c++17"], run=run,
                           now=lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
    assert prov["date"] == "2026-01-02T03:04:05Z"
    assert prov["git_commit"] == "abc123" and prov["git_dirty"] is True
    assert prov["command"] == "pytest -m measure"
    assert prov["driver"] == "000.00-fake" and prov["cuda_driver_api"] == "13.0" and prov["cuda_runtime"] == "12.8"
    assert prov["cupy"] == "0.0.0-fake" and prov["ncu"] == "2025.3.1.0" and prov["compile_options"] == ["--std=c++17"]
    assert prov["numpy"] == np.__version__


def test_provenance_degrades_field_by_field():
    from plugins.measure.provenance import gpu_record, is_unavailable, software_record

    gpu = gpu_record(BrokenProbe())
    for key in ("name", "compute_capability", "sm_count", "l2_bytes", "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz"):
        assert is_unavailable(gpu[key]), (key, gpu[key])
    assert "cudaErrorNoDevice" in gpu["sm_count"]
    assert gpu["slug"] == "unknown-gpu"
    run = _fake_git({"rev-parse": (128, ""), "status": (128, "")})
    prov = software_record(BrokenProbe(), Path("."), "pytest -m measure", "unavailable: ncu not found", run=run,
                           allow_unknown_commit=True, env={})
    assert prov["overrides"] and "--measure-allow-unknown-commit" in prov["overrides"][0]
    for key in ("git_commit", "git_dirty", "driver", "cuda_driver_api", "cuda_runtime", "cupy", "nvrtc", "ncu"):
        assert is_unavailable(prov[key]), (key, prov[key])
    assert "pynvml" in prov["driver"] and "libcuda" in prov["cuda_runtime"] and "exited 128" in prov["git_commit"]
    assert prov["python"] and prov["date"].endswith("Z")


# --------------------------------------------------------------------------- the whole flow, on fakes


class FakeExecutor:
    """A FAKE executor (test fixture): answers with the reference for the start and rewrites,
    and with a corrupted output for wrong variants, so the gate's bookkeeping can be tested."""

    name = "fake-executor (test fixture)"
    sm_count = 4

    def __init__(self, wrong_passes: bool = False, crash: str = ""):
        self.wrong_passes = wrong_passes
        self.crash = crash

    def run(self, fam, cand, shape, buffers):
        if cand.id == self.crash:
            raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED (fake)")
        inputs = {k: v for k, v in buffers.items() if fam.buffer(k).role == "input"}
        out = dict(buffers)
        for name, val in fam.reference_module().reference(inputs, dict(shape)).items():
            arr = np.asarray(val, dtype=fam.buffer(name).dtype).copy()
            if cand.role == "wrong" and not self.wrong_passes:
                arr[-1] = np.nan
            out[name] = arr
        return out


FAKE_TIMES_MS = {"start": 5.0, "r_one": 1.0, "r_two": 1.3, "r_three": 2.0, "r_four": 2.2}


def _session(tmp_path, executor=None, times=None, replace=False):
    cfg = MeasureConfig(out_root=tmp_path, repo=Path("."), families_root=FIXTURES, command="pytest -m measure (test)", replace=replace)

    def timer_factory(fam, shape, host, cands):
        assert set(host) == {b.name for b in fam.buffers}
        return FakeTimer({c.id: (times or FAKE_TIMES_MS)[c.id] for c in cands})

    seeds = itertools.count(1000)
    return MeasureSession(cfg, executor or FakeExecutor(), timer_factory,
                          gpu={"name": "FAKE GPU (test fixture)", "slug": "fake-test-gpu"},
                          provenance={"git_commit": "fixture", "date": "fixture"},
                          seeds=lambda n: tuple(range(1, n + 1)), new_seed=lambda: next(seeds))


@pytest.fixture(scope="module")
def scale_fixture():
    return load_family(FIXTURES / "scale_fixture")


def test_measure_flow_writes_a_key_that_load_key_reads(tmp_path, scale_fixture):
    s = _session(tmp_path)
    out = s.measure(scale_fixture)
    assert out.error == "", out.error
    assert out.gate_problems == []
    assert out.gate["w_tail"].passed is False and "NaN" in out.gate["w_tail"].reason
    assert out.key_path == tmp_path / "families" / "scale_fixture" / "measurements" / "fake-test-gpu.json"
    key = load_key(tmp_path / "families" / "scale_fixture", "fake-test-gpu")
    assert key is not None
    assert key.kept and key.winner == "r_one" and key.runner_up == "r_two"
    assert key.ratio == pytest.approx(1.3)
    assert key.times_ms == pytest.approx(FAKE_TIMES_MS)
    rec = key.record
    assert rec["gate"]["w_tail"]["role"] == "wrong" and rec["gate"]["w_tail"]["seeds"] == [1, 2, 3]
    assert "w_tail" not in rec["candidates"], "wrong variants are never timed"
    assert rec["candidates"]["r_one"]["speedup_vs_start"] == pytest.approx(5.0)
    assert len(rec["candidates"]["r_one"]["samples_ms"]) == 5
    assert rec["protocol"]["blocks"] == 5 and len(rec["protocol"]["block_orders"]) == 5
    assert rec["candidates"]["r_one"]["bytes_moved"] == 2 * 4096 * 4
    assert rec["candidates"]["r_one"]["fraction_of_copy"] is not None
    assert s.measure(scale_fixture) is out, "a family is measured once per session"
    summary = json.loads((tmp_path / "reports" / "measure" / "fake-test-gpu" / "scale_fixture.json").read_text())
    assert summary["winner"] == "r_one" and summary["kept"] is True
    rows = summary_rows([summary])
    assert rows == [["scale_fixture", "classic", "r_one", "1.300", "1.300-1.300", "yes", "yes", "0.000", "skipped"]]
    assert rec["ranking"]["fragile"] is False and rec["ranking"]["confidence"]["block_ratios"] == pytest.approx([1.3] * 5)
    assert rec["set"] == "classic" and not key.fragile


def test_second_run_writes_beside_unless_replace(tmp_path, scale_fixture):
    first = _session(tmp_path).measure(scale_fixture).key_path
    second = _session(tmp_path).measure(scale_fixture).key_path
    assert first.name == "fake-test-gpu.json" and second != first and second.name.startswith("fake-test-gpu.")
    third = _session(tmp_path, replace=True).measure(scale_fixture).key_path
    assert third == first


def test_a_wrong_variant_that_passes_fails_the_family(tmp_path, scale_fixture):
    out = _session(tmp_path, executor=FakeExecutor(wrong_passes=True)).measure(scale_fixture)
    assert any("w_tail" in p and "passed the gate" in p for p in out.gate_problems)
    key = load_key(tmp_path / "families" / "scale_fixture", "fake-test-gpu")
    assert not key.kept and "wrong variant" in key.reason


def test_a_rewrite_that_fails_the_gate_is_not_timed(tmp_path, scale_fixture):
    out = _session(tmp_path, executor=FakeExecutor(crash="r_one")).measure(scale_fixture)
    assert out.error == ""
    rec = out.record
    assert rec["candidates"]["r_one"]["time_ms"] is None and "gated out" in rec["candidates"]["r_one"]["not_timed"]
    assert rec["ranking"]["winner"] == "r_two" and "ranked 3 of 4" in rec["ranking"]["reason"]


def test_a_crash_in_one_step_is_recorded_not_raised(tmp_path, scale_fixture):
    s = _session(tmp_path)
    s.timer_factory = lambda *a: (_ for _ in ()).throw(MemoryError("out of device memory (fake)"))
    out = s.measure(scale_fixture)
    assert out.error.startswith("timing: MemoryError") and out.key_path is None
    assert summary_rows([out.summary()])[0][6] == "error"


def test_timing_buffers_poison_outputs(scale_fixture):
    bufs = timing_buffers(scale_fixture, scale_fixture.shapes("timing")[0], seed=5)
    assert bufs["x"].dtype == np.float32 and bufs["x"].size == 4096
    assert np.isnan(bufs["out"]).all()


def test_gate_problems_name_each_candidate():
    res = {
        "start": GateResult("f", "start", "start", False, "boom", (1,), (), "x"),
        "w": GateResult("f", "w", "wrong", True, "", (1, 2, 3), (), "x"),
        "r": GateResult("f", "r", "rewrite", True, "", (1,), (), "x"),
    }
    probs = gate_problems(res)
    assert len(probs) == 2 and "start 'start' failed the gate: boom" in probs[0] and "'w' passed" in probs[1]


def test_measure_state_only_runs_when_asked(tmp_path):
    cfg = MeasureConfig(out_root=tmp_path, repo=tmp_path, families_root=tmp_path, command="pytest")
    session, reason = MeasureState(cfg, None, "", False).session()
    assert session is None and "pytest -m measure" in reason
    worker = MeasureState(cfg, None, "measure", True)
    worker._executor = object()  # a stand-in: this checks the xdist refusal, not a device
    session, reason = worker.session()
    assert session is None and "without -n" in reason
    st = MeasureState(cfg, ("a", "b"), "measure", False)
    assert st.wants("a") and not st.wants("c") and st.selected
    assert FamilyOutcome("x").summary()["kept"] is False


def test_block_run_without_copy_has_no_bandwidth():
    br = BlockRun(1, [], {}, {}, {}, (), 0, 3, 0, 0.75, None, "", "fake")
    assert br.copy_bytes_per_s is None and br.kept("x") == []


# --------------------------------------------------------------------------- the GPU code paths on a fake CuPy


class _FakeMem:
    def __init__(self, arr):
        self.arr = arr

    def memset_async(self, value, size, stream=None):
        _FakeCupy.calls.append(("memset", self.arr.nbytes))
        self.arr.reshape(-1).view(np.uint8)[:size] = value

    def copy_from_device_async(self, src, size, stream=None):
        _FakeCupy.clock_ms += size / 1e9  # a made-up cost, so event pairs differ from zero
        self.arr.reshape(-1).view(np.uint8)[:size] = src.arr.reshape(-1).view(np.uint8)[:size]


class _FakeArray(np.ndarray):
    @property
    def data(self):  # noqa: D401 - CuPy's ndarray.data is a MemoryPointer
        return _FakeMem(self)


class _FakeEvent:
    def __init__(self):
        self.t = None
        self.ptr = id(self)

    def record(self, stream=None):
        self.t = _FakeCupy.clock_ms
        _FakeCupy.calls.append("event")

    @property
    def done(self):
        return True

    def synchronize(self):
        pass


class _FakeKernel:
    """Emulates only scale_fixture's kernels (out = a * x over i < n, or i < n - 1 for the wrong one),
    the timer's L2 flush (it only reads) and the preflight's one-line kernel (p[0] = 42)."""

    def __init__(self, code, name, cooperative):
        self.code, self.name, self.cooperative = code, name, cooperative

    def __call__(self, grid, block, args, shared_mem=0):
        if self.name == "sparktrace_l2_flush_read":
            flush, n, sink = args
            assert type(n) is np.uint64 and int(n) * 16 == flush.nbytes, "the flush reads the whole buffer as uint4"
            _FakeCupy.calls.append("flush-read")
            return
        if self.name == "sparktrace_preflight":
            args[0][0] = 42
            _FakeCupy.calls.append(self.name)
            return
        x, out, n, a = args
        assert isinstance(x, _FakeArray) and isinstance(out, _FakeArray)
        assert type(n) is np.int64 and type(a) is np.float32, "scalars must carry the kernel's C types"
        assert len(grid) == 3 and len(block) == 3 and shared_mem == 0
        limit = int(n) - 1 if "n - 1" in self.code else int(n)
        out[:limit] = a * x[:limit]
        _FakeCupy.calls.append(self.name)
        _FakeCupy.clock_ms += 0.001 * len(self.code)  # a made-up cost per source, never a measurement


class _FakeModule:
    """RawModule(code=...) (the pass's own kernels) or RawModule(path=<cubin>) (candidates): a loaded
    cubin is recorded byte for byte and emulated by the source compile_source built it from."""

    def __init__(self, code=None, path=None, options=(), backend="nvrtc", enable_cooperative_groups=False):
        if path is not None:
            import hashlib

            data = Path(path).read_bytes()
            _FakeCupy.loaded.append(data)
            code = _FakeCupy.built.get(hashlib.sha256(data).hexdigest())
            assert code is not None, f"{path} is no cubin compile_source built in this test"
        else:
            assert isinstance(options, tuple) and backend == "nvrtc"
            _FakeCupy.compiled.append((code, options))
        self.code, self.coop = code, enable_cooperative_groups

    def get_function(self, name):
        return _FakeKernel(self.code, name, self.coop)


class _FakeCupy:
    """A FAKE `cupy` module (test fixture): the API surface SparkTrace calls, answered on the host.

    It proves the GPU code paths are wired together (types, order, bookkeeping);
    it says nothing about CuPy itself and nothing it produces is a timing.
    """

    __version__ = "0.0.0-fake"
    uint8 = np.uint8
    uint32 = np.uint32
    int32 = np.int32
    limits: dict = {}
    clock_ms = 0.0
    calls: list = []
    compiled: list = []
    loaded: list = []  # the cubin bytes RawModule(path=...) loaded
    built: dict = {}  # sha256 of each cubin compile_source built -> its source
    sticky_error = ""  # set by a test: every later synchronize fails, as after an illegal address
    RawModule = _FakeModule

    @staticmethod
    def asarray(v):
        return np.array(v, copy=True).view(_FakeArray)

    @staticmethod
    def asnumpy(v):
        return np.array(v, copy=True).view(np.ndarray)

    @staticmethod
    def empty(n, dtype):
        return np.empty(n, dtype=dtype).view(_FakeArray)

    @staticmethod
    def zeros(n, dtype):
        return np.zeros(n, dtype=dtype).view(_FakeArray)

    class _Pool:
        def free_all_blocks(self):
            pass

    @classmethod
    def get_default_memory_pool(cls):
        return cls._Pool()

    class cuda:
        Event = _FakeEvent

        @staticmethod
        def get_elapsed_time(a, b):
            return b.t - a.t

        class Device:
            def __init__(self, i=0):
                pass

            def use(self):
                pass

            def synchronize(self):
                pass

        class runtime:
            @staticmethod
            def getDeviceCount():
                return 1

            @staticmethod
            def getDeviceProperties(i):
                return {"name": b"FAKE GPU (test fixture)", "major": 9, "minor": 0, "multiProcessorCount": 4,
                        "l2CacheSize": 1 << 20, "totalGlobalMem": 1 << 30}

            @staticmethod
            def driverGetVersion():
                return 13000

            @staticmethod
            def runtimeGetVersion():
                return 13000

            @staticmethod
            def deviceGetLimit(limit):
                return _FakeCupy.limits.get(limit, 12345)

            @staticmethod
            def deviceSetLimit(limit, value):
                _FakeCupy.limits[limit] = value

            @staticmethod
            def eventQuery(ptr):
                return 0  # cudaSuccess: the fake's launches finish when enqueued

            @staticmethod
            def deviceSynchronize():
                if _FakeCupy.sticky_error:
                    raise RuntimeError(f"cudaErrorIllegalAddress: {_FakeCupy.sticky_error} (fake sticky error)")

        class nvrtc:
            @staticmethod
            def getVersion():
                return (13, 0)


@pytest.fixture
def fake_cupy(monkeypatch, tmp_path_factory):
    import sys

    import plugins.measure.timing as timing

    monkeypatch.setitem(sys.modules, "cupy", _FakeCupy)
    monkeypatch.setattr(timing, "MIN_FLUSH_BYTES", 1 << 16)
    monkeypatch.setattr(timing, "COPY_BYTES", 1 << 16)
    monkeypatch.setattr(timing, "open_nvml", lambda i=0: (None, "unavailable: fake (test fixture)"))
    _FakeCupy.calls, _FakeCupy.compiled, _FakeCupy.clock_ms, _FakeCupy.sticky_error, _FakeCupy.limits = [], [], 0.0, "", {}
    _FakeCupy.loaded, _FakeCupy.built = [], {}
    import hashlib

    import plugins.measure.device as device
    from plugins.family.compile import compile_source

    def recorded(source, arch, name="kernel.cu"):  # the real compile (NVRTC on the CPU), remembered for the fake kernels
        res = compile_source(source, arch, name)
        _FakeCupy.built[hashlib.sha256(res.cubin).hexdigest()] = source
        return res

    monkeypatch.setattr(device, "compile_source", recorded)
    monkeypatch.setattr(device, "CUBIN_DIR", tmp_path_factory.mktemp("cubins"))
    return _FakeCupy


def test_gpu_code_paths_on_a_fake_cupy(fake_cupy, tmp_path, scale_fixture, monkeypatch):
    """CupyExecutor, CudaEventTimer, gpu_session and launch_once wired end to end, on the FAKE cupy."""
    from plugins.measure import launch_once
    from plugins.family.compile import NVRTC_OPTIONS
    from plugins.measure.device import CupyExecutor
    from plugins.gate.check import gate_candidate
    from plugins.measure.session import gpu_session

    ex = CupyExecutor()
    assert ex.sm_count == 4 and ex.device_name == "FAKE GPU (test fixture)" and ex.compute_capability == "9.0"
    verdicts = {c.id: gate_candidate(scale_fixture, c, ex, (1, 2, 3)) for c in scale_fixture.all_candidates}
    assert all(v.passed for k, v in verdicts.items() if k != "w_tail")
    assert not verdicts["w_tail"].passed and "NaN" in verdicts["w_tail"].reason
    assert fake_cupy.compiled == [], "CuPy compiles no candidate: it loads compile_source's cubins"
    assert len(fake_cupy.loaded) == len({c.source for c in scale_fixture.all_candidates}), "each source loads once"
    fake_cupy.calls.clear()

    monkeypatch.setattr("plugins.measure.capture.find_ncu", lambda: __import__("plugins.measure.capture", fromlist=["x"]).NcuLocation(None, "ncu not found (fake)"))
    cfg = MeasureConfig(out_root=tmp_path, repo=Path("."), families_root=FIXTURES, command="pytest -m measure (fake cupy)")
    session = gpu_session(cfg, ex)
    out = session.measure(scale_fixture)
    assert out.error == "", out.error
    assert out.slip["status"] == "pending", "slips are taken after every family's key"
    out = session.slip(scale_fixture)
    assert out.slip == {"status": "skipped", "reason": "ncu not found (fake)", "files": []}
    rec = out.record
    assert json.loads(out.key_path.read_text())["slip"] == out.slip, "the key records the slip's outcome"
    assert rec["gpu"]["slug"] == "fake-gpu-test-fixture" and rec["provenance"]["cupy"] == "0.0.0-fake"
    assert rec["provenance"]["compile_options"] == list(ex.options)
    import hashlib

    from plugins.family.compile import compile_source

    for c in scale_fixture.candidates:  # what the GPU loaded is CI's cubin, byte for byte, and the key names it
        ci = compile_source(c.source, "sm_90", c.path.name).cubin
        assert ci and ci in fake_cupy.loaded, c.id
        assert rec["candidates"][c.id]["cubin_sha256"] == hashlib.sha256(ci).hexdigest() and rec["candidates"][c.id]["cubin_arch"] == "sm_90"
    assert rec["provenance"]["candidate_compile"]["arch"] == "sm_90"
    assert rec["provenance"]["candidate_compile"]["options"][: len(NVRTC_OPTIONS)] == list(NVRTC_OPTIONS)
    full = rec["provenance"]["compile_options_full"]
    assert full["ours"] == list(ex.options) and full["assembled_by"].startswith("unavailable: CuPy's option assembly")
    assert full["cupy_added"][0].startswith("unavailable: could not read cupy.cuda.compiler")
    flush = [c for c in fake_cupy.calls if c == "flush-read"]
    assert flush and all(c != ("memset", rec["protocol"]["flush_bytes"]) for c in fake_cupy.calls[fake_cupy.calls.index("flush-read") + 1:]), \
        "the flush buffer is written once, at set-up, before its first read; never again"
    assert fake_cupy.calls.count(("memset", rec["protocol"]["flush_bytes"])) == 1
    assert rec["protocol"]["flush_method"].startswith("zero_before memsets first, then a read-only kernel")
    assert "cudaLimitPersistingL2CacheSize was 12345 B, set to 0" in rec["protocol"]["persisting_l2"]
    assert fake_cupy.limits == {0x06: 0}
    assert rec["protocol"]["throttle_detection"].startswith("unavailable")
    for cid in ("start", "r_one", "r_two", "r_three", "r_four"):
        c = rec["candidates"][cid]
        assert len(c["samples_ms"]) == 5 and c["time_ms"] > 0 and c["launches_per_block"] >= 1
    assert rec["copy_bytes_per_s"] > 0
    assert load_key(tmp_path / "families" / "scale_fixture", "fake-gpu-test-fixture") is not None

    fake_cupy.calls.clear()
    written = []
    monkeypatch.setattr("sys.stdout.write", written.append)
    assert launch_once.main(["scale_fixture", "--families-root", str(FIXTURES), "--seed", "9"]) == 0
    assert fake_cupy.calls == ["k0"], "launch_once runs the starting plan exactly once (and no CuPy kernel of its own)"
    assert json.loads(written[-1])["launches"][0]["kernel"] == "k0"


def test_state_from_options(tmp_path):
    import argparse

    from plugins.measure.session import budget_seconds, positive_int, state_from_options

    opts = {"measure_out": None, "measure_families": "a, b", "families_root": "families", "measure_replace": False,
            "measure_blocks": 5, "no_ncu": True, "markexpr": "measure", "measure_budget_s": None,
            "measure_slips_only": False, "measure_previous": None, "measure_repeat": True, "measure_ncu_unusable": "",
            "measure_ncu_metrics": "all", "measure_allow_unknown_commit": False, "measure_watchdog_s": None, "measure_rerun": False}
    st = state_from_options(tmp_path, opts.__getitem__, ["/venv/lib/pytest/__main__.py", "-m", "measure", "--no-ncu"], False)
    assert st.config.out_root == tmp_path and st.config.families_root == (tmp_path / "families").resolve()
    assert st.config.command.startswith("python3 -m pytest -m measure --no-ncu")
    assert st.families == ("a", "b") and st.config.ncu is False and st.selected and st.config.repeat
    assert st.config.also_check == (), "writing into the repository itself: nothing else to check"
    assert st.config.watchdog_s == 60.0 and not st.config.partial_archive, "no archive is ever written into the repository"
    assert not st.config.rerun
    assert state_from_options(tmp_path, {**opts, "measure_rerun": True}.__getitem__, ["pytest"], False).config.rerun
    opts["measure_out"] = str(tmp_path / "out")
    elsewhere = state_from_options(tmp_path, opts.__getitem__, ["pytest"], False).config
    assert not elsewhere.partial_archive, "an output folder inside the repository gets no archive"
    assert state_from_options(tmp_path / "repo", opts.__getitem__, ["pytest"], False).config.partial_archive
    assert elsewhere.out_root == tmp_path / "out" and elsewhere.also_check == (tmp_path.resolve(),), \
        "a pass writing elsewhere must not overwrite what the repository holds"
    assert st.config.deadline is None
    opts["measure_budget_s"] = 240.0
    st = state_from_options(tmp_path, opts.__getitem__, ["pytest"], False, now=lambda: 1000.0)
    assert st.config.deadline == 1240.0
    opts["measure_budget_s"] = 0.0  # defect 5: 0 was read as "no limit"
    st = state_from_options(tmp_path, opts.__getitem__, ["pytest"], False, now=lambda: 1000.0)
    assert st.config.deadline == 1000.0, "a budget of 0 is a deadline of now: no slip, no repeat"
    assert positive_int("3") == 3 and budget_seconds("0") == 0.0 and budget_seconds("12.5") == 12.5
    for bad in ("0", "-1", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive_int(bad)
    for bad in ("-1", "x", "inf", "nan"):
        with pytest.raises(argparse.ArgumentTypeError):
            budget_seconds(bad)


def test_cupy_added_options_are_read_from_its_compiler_source(tmp_path):
    import importlib.util
    from types import SimpleNamespace

    from plugins.measure.device import cupy_added_options

    def read(name, text):
        src = tmp_path / f"{name}.py"  # a FAKE stand-in for cupy/cuda/compiler.py (test fixture)
        src.write_text(text)
        spec = importlib.util.spec_from_file_location(name, src)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return cupy_added_options(SimpleNamespace(cuda=SimpleNamespace(compiler=mod)))

    older = ("def build(options, enable_cooperative_groups):\n    options += ('-ftz=true',)\n"
             "    if enable_cooperative_groups:\n        options += ('--device-c',)\n    return options\n")
    assert read("older", older) == ["-ftz=true (appended by CuPy)", "--device-c (appended by CuPy, cooperative plans only)"]
    # CuPy 14.2's shape: the rdc flags are named (to link cudadevrt when a caller
    # passes them) but nothing adds them for cooperative modules.
    like_14_2 = ("_rdc_flags = ('--device-c', '-dc', '-rdc=true', '--relocatable-device-code=true')\n"
                 "def build(options, enable_cooperative_groups, is_hip=False):\n"
                 "    if enable_cooperative_groups:\n        if is_hip:\n            raise ValueError('no')\n"
                 "    options += ('-ftz=true',)\n    options += ('--device-as-default-execution-space',)\n    return options\n")
    assert read("like_14_2", like_14_2) == ["-ftz=true (appended by CuPy)", "--device-as-default-execution-space (appended by CuPy)"]


def test_a_lost_cuda_context_stops_the_pass_and_names_the_culprit(fake_cupy, tmp_path, scale_fixture, monkeypatch):
    """After a sticky CUDA error every later verdict would lie: the family is not keyed, later ones are not measured."""
    from plugins.measure.device import CupyExecutor
    from plugins.measure.session import gpu_session

    monkeypatch.setattr("plugins.measure.capture.find_ncu", lambda: __import__("plugins.measure.capture", fromlist=["x"]).NcuLocation(None, "ncu not found (fake)"))
    ex = CupyExecutor()
    real_run = ex.run

    def run(fam, cand, shape, buffers):  # the FAKE wrong variant kills the (fake) context
        if cand.id == "w_tail":
            fake_cupy.sticky_error = "w_tail wrote out of bounds"
            raise RuntimeError("cudaErrorIllegalAddress (fake)")
        return real_run(fam, cand, shape, buffers)

    monkeypatch.setattr(ex, "run", run)
    session = gpu_session(MeasureConfig(out_root=tmp_path, repo=Path("."), families_root=FIXTURES, command="t"), ex)
    out = session.measure(scale_fixture)
    assert out.error.startswith("context: ") and "scale_fixture/w_tail" in out.error and "w_tail wrote out of bounds" in out.error
    assert out.key_path is None and not (tmp_path / "families").exists(), "no key from a dead context"
    assert summary_rows([out.summary()])[0][6] == "error"
    later = session.measure(_renamed(scale_fixture, "other_family"))
    assert later.error.startswith("context: not measured") and "rerun" in later.error
    assert session.slip(scale_fixture).slip["status"] == "skipped", "no key, so no slip for the culprit"


def _renamed(fam, name):
    import dataclasses

    return dataclasses.replace(fam, name=name)


class _Clock:
    """A FAKE monotonic clock (test fixture) that a test moves by hand."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_slips_come_after_keys_and_respect_the_budget(tmp_path, scale_fixture):
    clock = _Clock()
    taken = []

    def capture(fam, gpu, budget=None, name=None, inputs=None):
        from plugins.measure.capture import SlipResult

        taken.append((fam.name, budget.left()))
        clock.now += 12.0  # this FAKE slip "takes" 12 s of the fake clock
        return SlipResult("captured", "", [str(tmp_path / "slips" / gpu / f"{fam.name}.csv")])

    cfg = MeasureConfig(out_root=tmp_path, repo=Path("."), families_root=FIXTURES, command="t", deadline=clock.now + 100.0)
    s = MeasureSession(cfg, FakeExecutor(), lambda fam, shape, host, cands: FakeTimer({c.id: FAKE_TIMES_MS[c.id] for c in cands}),
                       gpu={"name": "FAKE GPU (test fixture)", "slug": "fake-test-gpu"}, provenance={}, capture=capture,
                       seeds=lambda n: tuple(range(1, n + 1)), new_seed=lambda: 7, clock=clock)
    out = s.measure(scale_fixture)
    assert taken == [] and out.slip["status"] == "pending" and json.loads(out.key_path.read_text())["slip"]["status"] == "pending"
    clock.now += 30.0
    out = s.slip(scale_fixture)
    assert taken == [("scale_fixture", 70.0)] and out.slip["status"] == "captured"
    assert s.slip_budget.durations == [12.0], "the slip's duration is what later slips are planned with"
    assert json.loads(out.key_path.read_text())["slip"]["status"] == "captured"
    assert json.loads((tmp_path / "reports" / "measure" / "fake-test-gpu" / "scale_fixture.json").read_text())["slip"] == "captured"
    assert s.slip(scale_fixture) is out and len(taken) == 1, "one slip per family"

    other = _renamed(scale_fixture, "late_family")
    s.measure(other)
    clock.now += 41.0  # 17 s left: under 1.5 x the 12 s slip seen
    late = s.slip(other)
    assert late.slip["status"] == "skipped" and late.slip["reason"].startswith("time budget: 17 s left")
    assert "1.5 x 12.0 s" in late.slip["reason"] and "--slips-only" in late.slip["reason"] and "late_family" in late.slip["reason"]
    assert len(taken) == 1


def test_run_blocks_spins_the_gpu_up_before_the_estimates():
    class SpinningTimer(FakeTimer):
        def spin_up(self, cid, ms):
            self.calls.append((f"spin:{cid}", int(ms)))

    t = SpinningTimer({"a": 1.0, "b": 2.0})
    br = run_blocks(t, ["a", "b"], seed=1, blocks=2, spin_up_ms=150)
    assert t.calls[0] == ("spin:a", 150) and [c for c, _ in t.calls[1:3]] == ["a", "b"], "spin-up first, then the estimates"
    assert br.protocol_record()["spin_up_ms"] == 150 and br.spin_up_ms == 150
    assert run_blocks(FakeTimer({"a": 1.0}), ["a"], seed=1, blocks=1).spin_up_ms == 0.0, "a timer without spin_up records none"


def test_provenance_without_git_takes_the_given_commit_and_hashes_the_sources(tmp_path):
    from plugins.measure.provenance import ProvenanceRefused, git_state, is_unavailable, source_digest

    run = _fake_git({"rev-parse": (128, ""), "status": (128, "")})
    st = git_state(tmp_path, run, env={"SPARKTRACE_GIT_COMMIT": "0123abc"})
    assert st["git_commit"] == "0123abc" and is_unavailable(st["git_dirty"]) and "SPARKTRACE_GIT_COMMIT" in st["git_commit_source"]
    with pytest.raises(ProvenanceRefused, match="SPARKTRACE_GIT_COMMIT"):
        git_state(tmp_path, run, env={})
    assert is_unavailable(git_state(tmp_path, run, env={}, allow_unknown_commit=True)["git_commit"])
    (tmp_path / "families" / "f").mkdir(parents=True)
    (tmp_path / "families" / "f" / "kernel.cu").write_text("// one\n")
    a = source_digest(tmp_path)
    (tmp_path / "families" / "f" / "measurements").mkdir()
    (tmp_path / "families" / "f" / "measurements" / "h200.json").write_text("{}")
    assert source_digest(tmp_path) == a, "written keys do not change the digest of the code"
    (tmp_path / "families" / "f" / "kernel.cu").write_text("// two\n")
    assert source_digest(tmp_path)["source_sha256"] != a["source_sha256"] and a["source_files"] == 1


def test_compile_options_fall_back_to_cupys_cuda_path(tmp_path, monkeypatch):
    from plugins.family.compile import NVRTC_OPTIONS
    from plugins.measure.device import compile_options

    monkeypatch.setattr("plugins.measure.device.include_options", lambda: ())
    assert compile_options(None) == NVRTC_OPTIONS and compile_options(str(tmp_path)) == NVRTC_OPTIONS
    (tmp_path / "include" / "cccl").mkdir(parents=True)
    (tmp_path / "include" / "cooperative_groups.h").write_text("// a FAKE header (test fixture)\n")
    assert compile_options(str(tmp_path)) == (*NVRTC_OPTIONS, f"-I{tmp_path / 'include'}", f"-I{tmp_path / 'include' / 'cccl'}")
    monkeypatch.setattr("plugins.measure.device.include_options", lambda: ("-I/usr/local/cuda/include",))
    assert compile_options(str(tmp_path)) == (*NVRTC_OPTIONS, "-I/usr/local/cuda/include"), "the CPU stage's headers win"


def test_slips_are_still_taken_for_families_keyed_before_the_context_died(tmp_path, scale_fixture):
    from plugins.measure.capture import SlipResult

    state = {"dead": ""}
    taken = []

    def capture(fam, gpu, budget=None, name=None, inputs=None):
        taken.append(fam.name)
        return SlipResult("captured", "", [])

    s = MeasureSession(MeasureConfig(out_root=tmp_path, repo=Path("."), families_root=FIXTURES, command="t"),
                       FakeExecutor(crash="r_two"), lambda fam, shape, host, cands: FakeTimer({c.id: FAKE_TIMES_MS[c.id] for c in cands}),
                       gpu={"name": "FAKE GPU (test fixture)", "slug": "fake-test-gpu"}, provenance={}, capture=capture,
                       seeds=lambda n: (1,), new_seed=lambda: 7, health=lambda: state["dead"])
    first = _renamed(scale_fixture, "first")
    assert s.measure(first).key_path is not None, "a rewrite's gate crash with a live context only gates it out"
    state["dead"] = "cudaErrorIllegalAddress (fake)"
    second = s.measure(scale_fixture)
    assert second.error.startswith("context: CUDA context lost at scale_fixture/r_two in the gate")
    assert s.measure(_renamed(scale_fixture, "third")).error.startswith("context: not measured")
    for fam in (first, scale_fixture, _renamed(scale_fixture, "third")):
        s.slip(fam)
    assert taken == ["first"], "ncu runs in its own process, so the keyed family still gets its slip"


def test_throttled_samples_carry_nvmls_reasons_and_old_nvml_degrades():
    from types import SimpleNamespace

    from plugins.measure.timing import NvmlClock

    class NoteTimer(FakeTimer):
        def time_launches(self, cid, launches):
            t = super().time_launches(cid, launches)
            return Timed(t.times_ms, t.sm_clock_mhz, "NVML clock event reasons 0x4")

    br = run_blocks(NoteTimer({"a": 1.0}, clocks={("a", 2): 500.0}), ["a"], seed=1, blocks=3)
    assert [s.reason for s in br.samples["a"] if not s.kept] == [
        "throttled: SM clock 500.0 MHz < 0.75 x max 2000.0 MHz (NVML clock event reasons 0x4)"]
    new = SimpleNamespace(nvmlDeviceGetCurrentClocksEventReasons=lambda h: 0x4)  # FAKE nvidia-ml-py modules (test fixtures)
    old = SimpleNamespace(nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: 0x20)
    assert NvmlClock("h", new, 1980.0).event_reasons() == "NVML clock event reasons 0x4"
    assert NvmlClock("h", old, 1980.0).event_reasons() == "NVML clock event reasons 0x20"
    assert NvmlClock("h", SimpleNamespace(), 1980.0).event_reasons() == ""


# --------------------------------------------------------------------------- defect 2: the L2 flush leaves clean lines


def test_the_timer_zeroes_then_flushes_by_reading_outside_the_events(fake_cupy, scale_fixture):
    import dataclasses

    from plugins.measure.device import CupyExecutor
    from plugins.measure.timing import FLUSH_METHOD, CudaEventTimer

    ex = CupyExecutor()
    cand = dataclasses.replace(scale_fixture.rewrites[0], zero_before=("out",))
    shape = scale_fixture.shapes("timing")[0]
    timer = CudaEventTimer(ex, scale_fixture, shape, timing_buffers(scale_fixture, shape, 1), [cand])
    setup = list(fake_cupy.calls)
    flush_set = ("memset", timer.flush_bytes)
    assert setup.count(flush_set) == 1 and setup.index(flush_set) < setup.index("flush-read"), \
        "the flush buffer is written once at set-up and read at once, so its own dirty lines leave then"
    assert timer.flush_bytes >= 2 * ex.l2_bytes and timer.flush_method == FLUSH_METHOD
    fake_cupy.calls.clear()
    timer.time_launches(cand.id, 3)
    out_bytes = timer.dev["out"].nbytes
    assert fake_cupy.calls == [("memset", out_bytes), "flush-read", "event", "k0", "event"] * 3, \
        "per launch: zero, then the read-only flush, then the event pair around the plan alone"
    assert flush_set not in fake_cupy.calls, "never a memset of the flush buffer between timed launches"


def _flush_ptx() -> str:
    from cuda.bindings import nvrtc

    from plugins.measure.timing import FLUSH_SOURCE

    err, prog = nvrtc.nvrtcCreateProgram(FLUSH_SOURCE.encode(), b"flush.cu", 0, [], [])
    try:
        opts = [b"--std=c++17", b"-arch=compute_90"]
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        assert res == nvrtc.nvrtcResult.NVRTC_SUCCESS
        _, n = nvrtc.nvrtcGetPTXSize(prog)
        buf = b" " * n
        nvrtc.nvrtcGetPTX(prog, buf)
        return buf.decode(errors="replace")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def test_the_flush_kernel_compiles_and_only_reads(tmp_path):
    """The flush writes nothing while it reads: its loads are 128-bit global reads, and its one
    store sits behind a condition the all-zero buffer never meets. PTX here (NVRTC); SASS too
    where cuobjdump is installed."""
    import re
    import shutil

    from plugins.family.compile import compile_source
    from plugins.measure.timing import FLUSH_KERNEL, FLUSH_SOURCE

    for arch in ("sm_90", "sm_100"):
        res = compile_source(FLUSH_SOURCE, arch)
        assert res.ok, res.log
        assert [r.kernel for r in res.resources] == [FLUSH_KERNEL] and res.resources[0].spill_store_bytes == 0
    mem = [ln.split()[0] for ln in _flush_ptx().splitlines() if re.search(r"\b(ld|st)\.global", ln)]
    assert mem == ["ld.global.nc.v4.u32", "st.global.u32"], mem


@pytest.mark.parametrize("arch", ["sm_90", "sm_100", "sm_121"])
def test_the_flush_kernels_sass_reads_128_bits_and_has_one_store(arch):
    """The binary, not only the PTX: every global load of the flush is 128 bits wide and one store
    remains (NVRTC cubin read with the pinned nvdisasm wheel)."""
    from plugins.family.binary import profile_source
    from plugins.measure.timing import FLUSH_KERNEL, FLUSH_SOURCE

    (prof,) = [p for p in profile_source(FLUSH_SOURCE, arch) if p.kernel == FLUSH_KERNEL]
    c = prof.counts
    assert c["global_loads_128"] >= 1 and c["global_loads"] == c["global_loads_128"], c.as_dict()
    assert c["global_stores"] == 1, c.as_dict()


# --------------------------------------------------------------------------- clocks and throttle reasons per block


def test_block_clocks_are_read_at_each_blocks_start_and_end_and_flagged():
    from plugins.measure.timing import ClockState

    class ClockTimer(FakeTimer):
        """A FAKE timer (test fixture) with fed clock readings: block 2 starts throttled, block 3 runs slow."""

        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.readings = iter([ClockState(1980.0, 0x0), ClockState(1980.0, 0x1), ClockState(1980.0, 0x0), ClockState(1975.0, 0x0),
                                  ClockState(1960.0, 0x20), ClockState(1950.0, 0x0), ClockState(1700.0, 0x0), ClockState(1710.0, 0x0),
                                  ClockState(1980.0, 0x0), ClockState(1980.0, 0x0)])

        def clock_state(self):
            return next(self.readings)

    br = run_blocks(ClockTimer({"a": 1.0, "b": 2.0}), ["a", "b"], seed=1, blocks=5)
    rec = br.protocol_record()
    assert [c["block"] for c in rec["block_clocks"]] == [0, 1, 2, 3, 4]
    assert rec["block_clocks"][2]["start"] == {"sm_clock_mhz": 1960.0, "reasons": "0x20", "throttle_reasons": ["SwThermalSlowdown"], "note": ""}
    assert rec["block_clocks"][0]["end"]["throttle_reasons"] == [], "GpuIdle (0x1) between blocks is not a throttle"
    flags = rec["clock_flags"]
    assert [(f["block"], f["kind"]) for f in flags] == [(2, "throttled"), (3, "clock-outlier")]
    assert "-13.8% from the median 1978 MHz" in flags[1]["detail"]  # blocks: 1980, 1977.5, 1955, 1705, 1980
    plain = run_blocks(FakeTimer({"a": 1.0}), ["a"], seed=1, blocks=2).protocol_record()
    assert plain["block_clocks"] == [{"block": 0, "start": None, "end": None, "sm_clock_mhz": None},
                                     {"block": 1, "start": None, "end": None, "sm_clock_mhz": None}] and plain["clock_flags"] == []


def test_nvml_state_reads_clock_and_reasons():
    from types import SimpleNamespace

    from plugins.measure.timing import NvmlClock

    nvml = SimpleNamespace(NVML_CLOCK_SM=0, nvmlDeviceGetClockInfo=lambda h, c: 1980,  # a FAKE nvidia-ml-py (test fixture)
                           nvmlDeviceGetCurrentClocksEventReasons=lambda h: 0x24)
    st = NvmlClock("h", nvml, 1980.0).state()
    assert st.sm_clock_mhz == 1980.0 and st.reasons == 0x24 and st.throttled == ["SwPowerCap", "SwThermalSlowdown"]
    old = SimpleNamespace(NVML_CLOCK_SM=0, nvmlDeviceGetClockInfo=lambda h, c: 1500)
    st = NvmlClock("h", old, 1980.0).state()
    assert st.reasons is None and "no clock-event reasons call" in st.note


# --------------------------------------------------------------------------- slip priority, the repeat, slips-only


class FeedTimers:
    """FAKE timer factory (test fixture): per family, the times of each pass (first, repeat)."""

    def __init__(self, feeds):
        self.feeds = feeds
        self.passes: dict[str, int] = {}

    def __call__(self, fam, shape, host, cands):
        n = self.passes.get(fam.name, 0)
        self.passes[fam.name] = n + 1
        feed = self.feeds[fam.name]
        if feed == "crash":
            raise MemoryError("out of device memory (fake)")
        times = feed[min(n, len(feed) - 1)]
        return FakeTimer({c.id: times[c.id] for c in cands})


def _times(r_two: float, r_one: float = 1.0) -> dict:
    return {"start": 5.0, "r_one": r_one, "r_two": r_two, "r_three": 2.0, "r_four": 2.2}


def _pass_session(tmp_path, feeds, families_cfg=None, **cfg):
    seeds = itertools.count(1)
    config = MeasureConfig(out_root=tmp_path / "out", repo=tmp_path / "repo", families_root=FIXTURES, command="t", **cfg)
    taken = []

    def capture(fam, gpu, budget=None, name=None, inputs=None):
        from plugins.measure.capture import SlipResult

        taken.append((fam.name, name))
        return SlipResult("captured", "", [str(tmp_path / "out" / "slips" / gpu / f"{name or fam.name}.csv")])

    s = MeasureSession(config, FakeExecutor(), FeedTimers(feeds), gpu={"slug": "fake-test-gpu"}, provenance={},
                       capture=capture, seeds=lambda n: (1, 2, 3), new_seed=lambda: next(seeds))
    return s, taken


def test_slips_follow_priority_kept_first_then_near_the_gate_then_the_rest(tmp_path, scale_fixture):
    import dataclasses

    fams = [_renamed(scale_fixture, n) for n in ("a_broken", "b_dropped", "c_near_gate", "d_kept_hard", "e_kept")]
    fams[3] = dataclasses.replace(fams[3], set="hard")
    feeds = {"a_broken": "crash", "b_dropped": [_times(1.01)], "c_near_gate": [_times(1.07)],
             "d_kept_hard": [_times(1.3)], "e_kept": [_times(1.5)]}
    s, taken = _pass_session(tmp_path, feeds)
    for f in fams:
        s.measure(f)
    # near_gate: 1.07 is 0.93% under 1.08: the constant fake times have no spread, so it is not noisy; give it some
    s.outcomes["c_near_gate"].ranking = dataclasses.replace(
        s.outcomes["c_near_gate"].ranking, ranking=dataclasses.replace(s.outcomes["c_near_gate"].ranking.ranking, noisy=True))
    assert s.slip_order(fams) == ["e_kept", "d_kept_hard", "c_near_gate", "b_dropped", "a_broken"]
    for i in range(len(fams)):
        s.slip_slot(i, fams)
    assert [n for n, _ in taken] == ["e_kept", "d_kept_hard", "c_near_gate", "b_dropped"], "no slip for a family with no key"
    assert s.outcomes["a_broken"].slip == {"status": "skipped", "reason": "no key: the pass failed at timing"}


def test_the_repeat_times_again_in_a_new_order_and_says_which_winners_differ(tmp_path, scale_fixture):
    fams = [_renamed(scale_fixture, n) for n in ("f_same", "f_flips", "f_more")]
    feeds = {"f_same": [_times(1.3)], "f_flips": [_times(1.2), _times(r_two=0.9)], "f_more": [_times(1.5)]}
    s, _ = _pass_session(tmp_path, feeds, repeat=True)
    for f in fams:
        s.measure(f)
    order = s.repeat_order(fams)
    assert sorted(order) == sorted(f.name for f in fams)
    import random

    expect = [f.name for f in fams]
    random.Random(s.repeat_seed).shuffle(expect)
    assert order == expect, "a new random order, from the recorded seed"
    res = {r["family"]: r for r in (s.repeat_slot(i, fams) for i in range(3))}
    assert res["f_same"]["status"] == "measured" and not res["f_same"]["differs"]
    assert res["f_flips"]["differs"] and res["f_flips"]["first_winner"] == "r_one" and res["f_flips"]["winner"] == "r_two"
    rep = json.loads((tmp_path / "out" / "families" / "f_flips" / "measurements" / "fake-test-gpu.repeat.json").read_text())
    assert rep["pass"] == "repeat" and rep["repeat_of"] == "families/f_flips/measurements/fake-test-gpu.json"
    assert rep["ranking"]["winner"] == "r_two" and rep["repeat_seed"] == s.repeat_seed and rep["repeat_order"] == order
    assert rep["protocol"]["block_seed"] != s.outcomes["f_flips"].record["protocol"]["block_seed"]
    first = json.loads((tmp_path / "out" / "families" / "f_flips" / "measurements" / "fake-test-gpu.json").read_text())
    assert first["ranking"]["winner"] == "r_one", "the repeat never overwrites the first pass"
    summary = json.loads((tmp_path / "out" / "reports" / "measure" / "fake-test-gpu" / "repeat" / "f_flips.json").read_text())
    assert summary["differs"] is True


def test_the_repeat_only_when_asked_and_only_while_it_fits(tmp_path, scale_fixture):
    fam = _renamed(scale_fixture, "f")
    s, _ = _pass_session(tmp_path, {"f": [_times(1.3)]})
    s.measure(fam)
    assert s.repeat(fam)["reason"].startswith("no repeat was asked for")
    clock = _Clock()
    s, _ = _pass_session(tmp_path / "b", {"f": [_times(1.3)]}, repeat=True, deadline=clock.now)
    s.clock = clock
    s.repeat_budget.clock = clock
    s.measure(fam)
    res = s.repeat(fam)
    assert res["status"] == "skipped" and res["reason"].startswith("time budget"), "a budget of 0 leaves no time for a repeat"


def test_slips_only_takes_missing_slips_without_measuring_keys(tmp_path, scale_fixture):
    fams = [_renamed(scale_fixture, n) for n in ("done_before", "missing", "in_repo", "in_repo_named")]
    repo = tmp_path / "repo"
    for n in ("in_repo", "in_repo_named"):
        (repo / "slips" / "fake-test-gpu").mkdir(parents=True, exist_ok=True)
        (repo / "slips" / "fake-test-gpu" / f"{n}.csv").write_text("a committed slip (fixture)\n")
    prev = tmp_path / "prev" / "reports" / "measure" / "fake-test-gpu"
    prev.mkdir(parents=True)
    (prev / "done_before.json").write_text(json.dumps({"family": "done_before", "slip": "captured", "kept": True, "winner": "r_one"}))
    (prev / "missing.json").write_text(json.dumps({"family": "missing", "slip": "skipped", "kept": True, "winner": "r_one"}))
    s, taken = _pass_session(tmp_path, {n.name: [_times(1.3)] for n in fams}, slips_only=True, also_check=(repo,),
                             previous=tmp_path / "prev", named=("in_repo_named",))
    outs = [s.slip_slot(i, fams) for i in range(len(fams))]
    by = {o.family: o for o in outs}
    assert not (tmp_path / "out" / "families").exists(), "slips-only measures no key"
    assert by["done_before"].slip["reason"].startswith("already captured by the earlier pass")
    assert "already in" in by["in_repo"].slip["reason"] and "--measure-families" in by["in_repo"].slip["reason"]
    assert [n for n, _ in taken] == ["missing", "in_repo_named"]
    assert dict(taken)["in_repo_named"].startswith("in_repo_named.") and dict(taken)["missing"] is None, \
        "a slip the repository has is taken again only when named, and then beside it"
    assert all(o.not_measured.startswith("slips-only") for o in outs)


def test_a_missing_commit_refuses_the_session_instead_of_skipping(fake_cupy, tmp_path, monkeypatch):
    from plugins.measure.device import CupyExecutor
    from plugins.measure.session import REFUSED

    monkeypatch.delenv("SPARKTRACE_GIT_COMMIT", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setattr("plugins.measure.capture.find_ncu", lambda: __import__("plugins.measure.capture", fromlist=["x"]).NcuLocation(None, "no ncu (fake)"))
    cfg = MeasureConfig(out_root=tmp_path / "out", repo=tmp_path, families_root=FIXTURES, command="t")
    st = MeasureState(cfg, None, "measure", False)
    st._executor = CupyExecutor()
    session, reason = st.session()
    assert session is None and reason.startswith(REFUSED) and "SPARKTRACE_GIT_COMMIT" in reason
    allowed = MeasureState(MeasureConfig(**{**vars(cfg), "allow_unknown_commit": True}), None, "measure", False)
    allowed._executor = st._executor
    session, reason = allowed.session()
    assert session is not None and "--measure-allow-unknown-commit" in session.provenance["overrides"][0]


def test_full_compile_options_include_the_paths_cupy_adds(tmp_path):
    import importlib.util
    from types import SimpleNamespace

    from plugins.measure.device import full_compile_options

    src = tmp_path / "compiler_like_14_2.py"  # a FAKE stand-in for cupy/cuda/compiler.py (test fixture)
    src.write_text("def build(options, enable_cooperative_groups):\n    options += ('-ftz=true',)\n"
                   "    options += ('--device-as-default-execution-space',)\n    return options\n"
                   "def _get_arch_for_options_for_nvrtc(arch=None):\n    return '-arch=sm_90', 'cubin'\n_use_pch = False\n")
    spec = importlib.util.spec_from_file_location("compiler_like_14_2", src)
    comp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(comp)

    def assemble(options):  # what CuPy 14.2's assemble_cupy_compiler_options does, with FAKE paths
        cccl = ("-I/fake/cupy/_core/include/cupy/_cccl/cub", "-I/fake/cupy/_core/include/cupy/_cccl/thrust",
                "-I/fake/cupy/_core/include/cupy/_cccl/libcudacxx")
        return cccl + options + ("-I/fake/cupy/_core/include", "-I/fake/nvidia/cuda_runtime/include")

    fake = SimpleNamespace(_core=SimpleNamespace(core=SimpleNamespace(assemble_cupy_compiler_options=assemble)),
                           cuda=SimpleNamespace(compiler=comp))
    rec = full_compile_options(fake, ("--std=c++17",))
    assert rec["options"] == ["-I/fake/cupy/_core/include/cupy/_cccl/cub", "-I/fake/cupy/_core/include/cupy/_cccl/thrust",
                              "-I/fake/cupy/_core/include/cupy/_cccl/libcudacxx", "--std=c++17", "-I/fake/cupy/_core/include",
                              "-I/fake/nvidia/cuda_runtime/include", "-ftz=true", "-arch=sm_90", "--device-as-default-execution-space"]
    assert rec["assembled_by"].startswith("cupy._core.core.assemble_cupy_compiler_options")


def test_the_targets_hook_judges_by_the_family_s_need(scale_fixture):
    from plugins.measure.session import target_mismatch

    assert target_mismatch(scale_fixture, {"name": "NVIDIA H200", "compute_capability": "9.0"}) == ""
    assert target_mismatch(scale_fixture, {"name": "NVIDIA A100", "compute_capability": "8.0"}) == ""
    assert target_mismatch(scale_fixture, {"name": "test fixture"}) == ""
    assert target_mismatch(scale_fixture, {"name": "Tesla T4", "compute_capability": "7.5"}).endswith(
        "needs compute capability 8.0; this GPU is Tesla T4, 7.5")
