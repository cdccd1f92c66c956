"""The block protocol: warm-up, R launches per candidate, five randomized blocks.

Why: candidates of a family are timed interleaved, in a fresh seeded order per
block, so that clock drift and thermal state hit every candidate alike; each
sample is a CUDA-event time (never a host clock around asynchronous work),
with L2 flushed and `zero_before` buffers zeroed outside the event pair. The
schedule and the driver are pure; only `CudaEventTimer` touches the GPU.
"""
from __future__ import annotations

import logging
import math
import random
import statistics
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from plugins.family.dtypes import device_view, np_dtype
from plugins.family.plan import Number, ResolvedLaunch

log = logging.getLogger("sparktrace.timing")

BLOCKS = 5
WARMUP_LAUNCHES = 3
TARGET_BLOCK_MS = 10.0  # each candidate's share of a block
MAX_LAUNCHES = 1000
THROTTLE_THRESHOLD = 0.75  # of the max SM clock
SPIN_UP_MS = 200.0  # host wall time of back-to-back launches before the estimates: clocks leave idle first
MIN_FLUSH_BYTES = 256 * 1024 * 1024
COPY_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class Timed:
    """R timed launches of one plan: one CUDA-event time each, and the SM clock seen meanwhile."""

    times_ms: tuple[float, ...]
    sm_clock_mhz: float | None = None
    clock_note: str = ""


class Timer(Protocol):
    """What the block protocol needs from a device (CUDA events on a GPU, or a test fake)."""

    name: str
    flush_bytes: int
    max_sm_clock_mhz: float | None  # None: throttle detection unavailable
    throttle_note: str  # why detection is unavailable, or how it samples

    def warmup(self, cid: str, launches: int) -> None: ...

    def time_launches(self, cid: str, launches: int) -> Timed: ...

    def time_copy(self, launches: int) -> Timed: ...

    # Optional: `spin_up(cid, ms)` runs cid's plan back to back for about `ms` of
    # host wall time, so an idle GPU's clocks have ramped before R is chosen.

    @property
    def copy_bytes(self) -> int: ...


def block_orders(ids: Sequence[str], blocks: int, seed: int) -> list[list[str]]:
    """A fresh random order of every id for each block, reproducible from `seed`."""
    rng = random.Random(seed)
    orders = []
    for _ in range(blocks):
        order = list(ids)
        rng.shuffle(order)
        orders.append(order)
    return orders


def launches_per_block(estimate_ms: float, target_ms: float = TARGET_BLOCK_MS, cap: int = MAX_LAUNCHES) -> int:
    """R so that R launches hold about `target_ms` of work, and R >= 1."""
    if not estimate_ms > 0 or math.isinf(estimate_ms):
        raise ValueError(f"estimated launch time {estimate_ms} ms is not a positive finite number")
    return max(1, min(cap, round(target_ms / estimate_ms)))


@dataclass(frozen=True)
class Sample:
    """One candidate in one block: the mean time of one launch plan over R launches."""

    block: int
    time_ms: float
    launches: int
    sm_clock_mhz: float | None
    kept: bool
    reason: str = ""

    def as_skipped(self) -> dict:
        return {"block": self.block, "time_ms": self.time_ms, "sm_clock_mhz": self.sm_clock_mhz, "reason": self.reason}


@dataclass(frozen=True)
class BlockRun:
    """Everything the block protocol measured for one family."""

    seed: int
    orders: list[list[str]]
    launches: Mapping[str, int]
    estimates_ms: Mapping[str, float]
    samples: Mapping[str, tuple[Sample, ...]]
    copy_samples_ms: tuple[float, ...]
    copy_bytes: int
    warmup_launches: int
    flush_bytes: int
    throttle_threshold: float
    max_sm_clock_mhz: float | None
    throttle_note: str
    timer: str
    failures: Mapping[str, str] = field(default_factory=dict)
    spin_up_ms: float = 0.0

    def kept(self, cid: str) -> list[float]:
        return [s.time_ms for s in self.samples.get(cid, ()) if s.kept]

    @property
    def copy_bytes_per_s(self) -> float | None:
        if not self.copy_samples_ms:
            return None
        return self.copy_bytes / (statistics.median(self.copy_samples_ms) / 1e3)

    def protocol_record(self) -> dict:
        return {
            "blocks": len(self.orders),
            "block_seed": self.seed,
            "block_orders": self.orders,
            "warmup_launches": self.warmup_launches,
            "spin_up_ms": self.spin_up_ms,
            "flush_bytes": self.flush_bytes,
            "launches_per_block": dict(self.launches),
            "estimate_ms": dict(self.estimates_ms),
            "target_block_ms": TARGET_BLOCK_MS,
            "throttle_threshold": self.throttle_threshold,
            "max_sm_clock_mhz": self.max_sm_clock_mhz,
            "throttle_detection": self.throttle_note,
            "timer": self.timer,
            "copy": {"bytes": self.copy_bytes, "samples_ms": list(self.copy_samples_ms)},
            "failures": dict(self.failures),
        }


def _throttled(clock: float | None, max_clock: float | None, threshold: float) -> bool:
    return clock is not None and max_clock is not None and clock < threshold * max_clock


def run_blocks(
    timer: Timer,
    ids: Sequence[str],
    seed: int,
    blocks: int = BLOCKS,
    warmup: int = WARMUP_LAUNCHES,
    target_ms: float = TARGET_BLOCK_MS,
    threshold: float = THROTTLE_THRESHOLD,
    spin_up_ms: float = SPIN_UP_MS,
) -> BlockRun:
    """Warm up, choose R per candidate, then run `blocks` blocks in seeded random orders.

    A candidate that crashes while timed is dropped from the remaining blocks
    with its error recorded; the others go on.
    """
    failures: dict[str, str] = {}
    estimates: dict[str, float] = {}
    launches: dict[str, int] = {}
    for cid in ids:
        try:
            timer.warmup(cid, warmup)
        except Exception as exc:  # a candidate's crash is recorded, never fatal to the family
            failures[cid] = f"warm-up: {type(exc).__name__}: {exc}"
            log.warning("%s failed during warm-up: %s", cid, failures[cid])
    spin = getattr(timer, "spin_up", None)
    first = next((c for c in ids if c not in failures), None)
    spun = 0.0
    if spin is not None and first is not None and spin_up_ms > 0:
        try:
            spin(first, spin_up_ms)
            spun = spin_up_ms
        except Exception as exc:
            failures[first] = f"spin-up: {type(exc).__name__}: {exc}"
            log.warning("%s failed during spin-up: %s", first, failures[first])
    for cid in ids:
        if cid in failures:
            continue
        try:
            est = timer.time_launches(cid, max(1, warmup))
            estimates[cid] = statistics.median(est.times_ms)
            launches[cid] = launches_per_block(estimates[cid], target_ms)
        except Exception as exc:  # a candidate's crash is recorded, never fatal to the family
            failures[cid] = f"estimate: {type(exc).__name__}: {exc}"
            log.warning("%s failed while its launch time was estimated: %s", cid, failures[cid])
    live = [c for c in ids if c not in failures]
    orders = block_orders(live, blocks, seed)
    samples: dict[str, list[Sample]] = {c: [] for c in live}
    for b, order in enumerate(orders):
        for cid in order:
            if cid in failures:
                continue
            try:
                t = timer.time_launches(cid, launches[cid])
            except Exception as exc:
                failures[cid] = f"block {b}: {type(exc).__name__}: {exc}"
                log.warning("%s failed in block %d: %s", cid, b, failures[cid])
                continue
            mean = float(np.mean(t.times_ms))
            if _throttled(t.sm_clock_mhz, timer.max_sm_clock_mhz, threshold):
                reason = f"throttled: SM clock {t.sm_clock_mhz} MHz < {threshold} x max {timer.max_sm_clock_mhz} MHz"
                reason += f" ({t.clock_note})" if t.clock_note else ""
                samples[cid].append(Sample(b, mean, launches[cid], t.sm_clock_mhz, False, reason))
            else:
                samples[cid].append(Sample(b, mean, launches[cid], t.sm_clock_mhz, True))
    copy: tuple[float, ...] = ()
    try:
        est = timer.time_copy(1)
        r = launches_per_block(float(np.mean(est.times_ms)), target_ms)
        copy = tuple(float(np.mean(timer.time_copy(r).times_ms)) for _ in range(blocks))
    except Exception as exc:
        failures["@copy"] = f"{type(exc).__name__}: {exc}"
    return BlockRun(
        seed=seed, orders=orders, launches=launches, estimates_ms=estimates,
        samples={c: tuple(s) for c, s in samples.items()}, copy_samples_ms=copy, copy_bytes=timer.copy_bytes,
        warmup_launches=warmup, flush_bytes=timer.flush_bytes, throttle_threshold=threshold, spin_up_ms=spun,
        max_sm_clock_mhz=timer.max_sm_clock_mhz, throttle_note=timer.throttle_note, timer=timer.name,
        failures=failures,
    )


# --------------------------------------------------------------------------- NVML


class ClockReader(Protocol):
    def sm_clock_mhz(self) -> float: ...


@dataclass
class NvmlClock:
    """The SM clock through NVML (nvidia-ml-py), for throttle detection."""

    handle: Any
    nvml: Any
    max_mhz: float

    def sm_clock_mhz(self) -> float:
        return float(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))

    def event_reasons(self) -> str:
        """Why the clocks are below max, as NVML's bitmask; "" where this nvidia-ml-py has
        neither name (newer ones call it ...ClocksEventReasons, older ...ClocksThrottleReasons)."""
        read = (getattr(self.nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                or getattr(self.nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
        if read is None:
            return ""
        try:
            return f"NVML clock event reasons 0x{int(read(self.handle)):x}"
        except Exception as exc:
            return f"NVML clock event reasons unavailable ({type(exc).__name__})"


def open_nvml(device_index: int = 0) -> tuple[NvmlClock | None, str]:
    """An NVML clock reader, or None and why throttle detection is unavailable."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pynvml  # lazy: nvidia-ml-py is only on GPU machines
    except Exception as exc:
        return None, f"unavailable: pynvml not importable ({type(exc).__name__}: {exc})"
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        max_mhz = float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
        pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
    except Exception as exc:
        return None, f"unavailable: NVML failed ({type(exc).__name__}: {exc})"
    return NvmlClock(handle, pynvml, max_mhz), "nvml: SM clock sampled while each candidate's launches are in flight; median of the samples"


# --------------------------------------------------------------------------- CUDA events


class CudaEventTimer:
    """Times launch plans with CUDA events on device buffers shared by a family's candidates.

    Per launch: L2 flush (a memset of `flush_bytes`) and zeroing of the
    candidate's `zero_before` buffers, then the event pair around the whole
    plan. The host never synchronizes inside a plan.
    """

    name = "cuda-events"

    def __init__(self, executor: Any, fam: Any, shape: Mapping[str, Number], host_buffers: Mapping[str, np.ndarray], candidates: Sequence[Any]):
        import cupy  # lazy: GPU only

        self.cp = cupy
        self.ex = executor
        self.fam = fam
        self.plans: dict[str, tuple[ResolvedLaunch, ...]] = {}
        self.zero: dict[str, tuple[str, ...]] = {}
        self.cands = {c.id: c for c in candidates}
        for c in candidates:
            self.plans[c.id] = fam.resolve(c, shape, executor.sm_count)
            self.zero[c.id] = tuple(c.zero_before)
        self.dev = {k: cupy.asarray(device_view(v)) for k, v in host_buffers.items()}
        self.bound = {c.id: executor.bind(c, self.plans[c.id], self.dev) for c in candidates}
        self.flush_bytes = max(MIN_FLUSH_BYTES, 2 * int(executor.l2_bytes))
        self.flush = cupy.empty(self.flush_bytes, dtype=cupy.uint8)
        self._copy_src = cupy.empty(COPY_BYTES // 2, dtype=cupy.uint8)
        self._copy_dst = cupy.empty(COPY_BYTES // 2, dtype=cupy.uint8)
        self._copy_src.data.memset_async(1, self._copy_src.nbytes)
        self.clock, self.throttle_note = open_nvml(executor.device_index)
        self.max_sm_clock_mhz = self.clock.max_mhz if self.clock else None
        cupy.cuda.Device().synchronize()

    @property
    def copy_bytes(self) -> int:
        """Bytes read plus bytes written by one device-to-device copy."""
        return 2 * self._copy_src.nbytes

    def _prepare(self, cid: str) -> None:
        self.flush.data.memset_async(0, self.flush_bytes)
        for z in self.zero.get(cid, ()):
            self.dev[z].data.memset_async(0, self.dev[z].nbytes)

    def warmup(self, cid: str, launches: int) -> None:
        for _ in range(launches):
            self._prepare(cid)
            self.ex.launch_bound(self.bound[cid])
        self.cp.cuda.Device().synchronize()

    def spin_up(self, cid: str, ms: float) -> None:
        """Launch cid's plan back to back for `ms` of host time (a duration, never a measurement)."""
        end = time.monotonic() + ms / 1e3
        while time.monotonic() < end:
            self.warmup(cid, 1)

    def _timed(self, cid: str, launches: int, work) -> Timed:
        """Enqueue `launches` x (flush + zero, start event, work, end event); sample the
        SM clock while they run; then read the event pairs."""
        cp = self.cp
        pairs = []
        for _ in range(launches):
            self._prepare(cid)
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            work()
            b.record()
            pairs.append((a, b))
        clocks: list[float] = []
        last = pairs[-1][1]
        note = ""
        if self.clock is not None:
            while not last.done:
                try:
                    clocks.append(self.clock.sm_clock_mhz())
                    if len(clocks) == 1:  # once, while the launches are in flight
                        note = self.clock.event_reasons()
                except Exception as exc:  # NVML hiccup: record it, keep the sample
                    note = f"NVML read failed: {type(exc).__name__}: {exc}"
                    break
                time.sleep(0.0005)
            if not clocks and not note:
                note = "the launches finished before the first clock sample"
        cp.cuda.Device().synchronize()  # cudaDeviceSynchronize: every event pair has completed
        times = tuple(float(cp.cuda.get_elapsed_time(a, b)) for a, b in pairs)
        clock = float(statistics.median(clocks)) if clocks else None
        return Timed(times, clock, note)

    def time_launches(self, cid: str, launches: int) -> Timed:
        bound = self.bound[cid]
        return self._timed(cid, launches, lambda: self.ex.launch_bound(bound))

    def time_copy(self, launches: int) -> Timed:
        n = self._copy_src.nbytes
        return self._timed("@copy", launches, lambda: self._copy_dst.data.copy_from_device_async(self._copy_src.data, n))

    def close(self) -> None:
        self.bound.clear()
        self.dev.clear()
        del self.flush, self._copy_src, self._copy_dst
        self.cp.get_default_memory_pool().free_all_blocks()


def bytes_moved(fam: Any, shape: Mapping[str, Number]) -> int:
    """Minimum DRAM bytes of any correct plan: every input read once, every output written once."""
    counts = fam.buffer_counts(shape)
    return sum(counts[b.name] * np_dtype(b.dtype).itemsize for b in fam.buffers if b.role in ("input", "output"))



# --------------------------------------------------------------------------- pytest-benchmark


class ReplayClock:
    """A clock that moves only when `advance()` replays the next recorded CUDA-event time.

    pytest-benchmark times a target as timer() ... target() ... timer(); with
    this clock as its timer and `advance` as its target, each round's
    duration is exactly one recorded block sample, so its table and JSON
    hold the block protocol's numbers and nothing measured on the host.
    """

    __name__ = "cuda_event_block_replay"

    def __init__(self, samples_ms: Sequence[float]):
        if not samples_ms:
            raise ValueError("no recorded samples to replay")
        self.pending = [float(s) / 1e3 for s in samples_ms]  # pytest-benchmark counts seconds
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self) -> None:
        if not self.pending:
            raise RuntimeError("more rounds than recorded samples")
        self.now += self.pending.pop(0)


def replay_into(benchmark: Any, samples_ms: Sequence[float], group: str, extra_info: Mapping[str, Any]) -> None:
    """Hand recorded block samples to a pytest-benchmark fixture, one round per sample.

    The fixture's timer is private in pytest-benchmark 5.2.3 (`_timer`, read
    when a round's runner is made); if that changes, fail loudly rather than
    let it time the host.
    """
    if not hasattr(benchmark, "_timer"):
        raise RuntimeError("this pytest-benchmark has no BenchmarkFixture._timer; replay_into was written for 5.2.x")
    clock = ReplayClock(samples_ms)
    benchmark._timer = clock
    benchmark.group = group
    benchmark.extra_info.update(extra_info)
    benchmark.pedantic(clock.advance, rounds=len(samples_ms), iterations=1, warmup_rounds=0)
