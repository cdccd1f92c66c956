"""The block protocol: warm-up, R launches per candidate, five randomized blocks.

Why: candidates of a family are timed interleaved, in a fresh seeded order per
block, so that clock drift and thermal state hit every candidate alike; each
sample is a CUDA-event time (never a host clock around asynchronous work),
with `zero_before` buffers zeroed and then L2 flushed outside the event pair.
The flush reads a buffer twice the L2's size that was written once at set-up,
so L2 holds only clean lines when a timed plan starts: a memset would leave it
full of dirty lines whose write-back the timed kernel would pay for (about
14 us for an H200's L2 (estimated), enough to pull a ratio near 1.08 towards 1).
The flush size comes from the device's own cudaDevAttrL2CacheSize.
The SM clock and NVML's clock-event reasons are read at each block's start
and end. The schedule and the driver are pure; only `CudaEventTimer` touches
the GPU.
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
CLOCK_OUTLIER_FRACTION = 0.03  # a block whose SM clock is more than 3% from the median block is flagged
# NVML clock-event reasons (nvml.h, nvmlClocksEventReason*) that mean the clocks were held down.
# Not here: GpuIdle 0x1 (read between blocks, the GPU may be idle), ApplicationsClocksSetting 0x2,
# SyncBoost 0x10 (multi-GPU), DisplayClockSetting 0x100.
THROTTLE_REASONS = {0x4: "SwPowerCap", 0x8: "HwSlowdown", 0x20: "SwThermalSlowdown", 0x40: "HwThermalSlowdown",
                    0x80: "HwPowerBrakeSlowdown"}
FLUSH_METHOD = ("zero_before memsets first, then a read-only kernel over a flush buffer of flush_bytes "
                "(>= 2x L2) that was written once at set-up: L2 holds only clean lines when the timed plan starts")
FLUSH_KERNEL = "sparktrace_l2_flush_read"
FLUSH_SOURCE = r"""
extern "C" __global__ void sparktrace_l2_flush_read(const uint4* __restrict__ p, unsigned long long n, unsigned int* sink)
{
    unsigned int acc = 0u;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x5a17c0deu) sink[0] = acc;  /* never true (the buffer is all zeros); it keeps the loads */
}
"""
PERSISTING_L2_LIMIT = 0x06  # cudaLimitPersistingL2CacheSize
# cudaEventQuery's statuses (driver_types.h). CuPy's Event.done is `eventQuery == 0`, so after an
# illegal address it stays False for ever; every wait here reads the status itself.
CUDA_SUCCESS = 0
CUDA_ERROR_NOT_READY = 600
# Bounds on every host wait for the GPU (estimates, not measurements): before a candidate has a
# time of its own, FIRST_WAIT_S per wait; after, WAIT_FACTOR x its slowest launch seen x the
# launches waited for, and at least MIN_WAIT_S (host scheduling, NVML reads).
FIRST_WAIT_S = 30.0
WAIT_FACTOR = 50.0
MIN_WAIT_S = 5.0
POLL_S = 0.0005


class LaunchFault(RuntimeError):
    """cudaEventQuery returned an error (an illegal address, a trap): the context is gone."""


class LaunchHung(RuntimeError):
    """A timed launch did not finish within its bound: the GPU is still busy with it."""


def event_ready(runtime: Any, event: Any) -> bool:
    """True once `event` has completed, False while not ready; any other status raises LaunchFault."""
    status = int(runtime.eventQuery(event.ptr))
    if status == CUDA_SUCCESS:
        return True
    if status == CUDA_ERROR_NOT_READY:
        return False
    raise LaunchFault(f"cudaEventQuery returned {status} (neither cudaSuccess nor cudaErrorNotReady): "
                      "a launch faulted and the CUDA context is lost")


def wait_bound_s(launches: int, slowest_ms: float | None) -> float:
    """How long to wait for `launches` launches of a plan whose slowest launch took `slowest_ms`."""
    if slowest_ms is None or not slowest_ms > 0 or math.isinf(slowest_ms):
        return FIRST_WAIT_S
    return max(MIN_WAIT_S, WAIT_FACTOR * launches * slowest_ms / 1e3)


def wait_event(runtime: Any, event: Any, bound_s: float, what: str, during: Any = None,
               clock: Any = time.monotonic, sleep: Any = time.sleep) -> None:
    """Poll `event` until it completes; `during()` runs between polls (the clock sampling).
    Raises LaunchFault on an error status and LaunchHung past `bound_s`."""
    end = clock() + bound_s
    while not event_ready(runtime, event):
        if clock() > end:
            raise LaunchHung(f"{what} did not finish within {bound_s:.1f} s (its bound from the family's own "
                             "estimate); the GPU is still running it")
        if during is not None:
            during()
        sleep(POLL_S)


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
    # host wall time, so an idle GPU's clocks have ramped before R is chosen;
    # `clock_state()` reads the clock at each block's start and end;
    # `flush_method` and `persisting_l2` say how L2 was prepared.

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
class ClockState:
    """The SM clock and NVML's clock-event reasons at one instant (a block's start or end)."""

    sm_clock_mhz: float | None
    reasons: int | None  # NVML's bitmask; None where it could not be read
    note: str = ""

    @property
    def throttled(self) -> list[str]:
        return [name for bit, name in THROTTLE_REASONS.items() if self.reasons is not None and self.reasons & bit]

    def as_record(self) -> dict:
        return {"sm_clock_mhz": self.sm_clock_mhz, "reasons": None if self.reasons is None else f"0x{self.reasons:x}",
                "throttle_reasons": self.throttled, "note": self.note}


@dataclass(frozen=True)
class BlockClock:
    block: int
    start: ClockState | None
    end: ClockState | None

    @property
    def sm_clock_mhz(self) -> float | None:
        """The mean of the start and end readings that exist."""
        vals = [c.sm_clock_mhz for c in (self.start, self.end) if c is not None and c.sm_clock_mhz is not None]
        return statistics.fmean(vals) if vals else None

    def as_record(self) -> dict:
        return {"block": self.block, "start": self.start.as_record() if self.start else None,
                "end": self.end.as_record() if self.end else None, "sm_clock_mhz": self.sm_clock_mhz}


def clock_flags(clocks: Sequence[BlockClock], outlier_fraction: float = CLOCK_OUTLIER_FRACTION,
                median_mhz: float | None = None) -> list[dict]:
    """Blocks taken while NVML reported a throttle reason, or with a clock more than
    `outlier_fraction` from the median block (of these blocks, or `median_mhz` when given)."""
    flags = []
    seen = [c.sm_clock_mhz for c in clocks if c.sm_clock_mhz is not None]
    median = median_mhz if median_mhz is not None else (statistics.median(seen) if seen else None)
    for c in clocks:
        for when, st in (("start", c.start), ("end", c.end)):
            if st is not None and st.throttled:
                flags.append({"block": c.block, "kind": "throttled",
                              "detail": f"at the block's {when}: {', '.join(st.throttled)} (reasons 0x{st.reasons:x})"})
        mhz = c.sm_clock_mhz
        if median and mhz is not None and abs(mhz / median - 1.0) > outlier_fraction:
            flags.append({"block": c.block, "kind": "clock-outlier",
                          "detail": f"SM clock {mhz:.0f} MHz is {100 * (mhz / median - 1.0):+.1f}% from the median {median:.0f} MHz "
                                    f"(limit {100 * outlier_fraction:.0f}%)"})
    return flags


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
    block_clocks: tuple[BlockClock, ...] = ()
    flush_method: str = ""
    persisting_l2: str = ""

    def kept(self, cid: str) -> list[float]:
        return [s.time_ms for s in self.samples.get(cid, ()) if s.kept]

    def kept_by_block(self, cid: str) -> dict[int, float]:
        return {s.block: s.time_ms for s in self.samples.get(cid, ()) if s.kept}

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
            "flush_method": self.flush_method or "not reported by the timer",
            "persisting_l2": self.persisting_l2 or "not reported by the timer",
            "launches_per_block": dict(self.launches),
            "estimate_ms": dict(self.estimates_ms),
            "target_block_ms": TARGET_BLOCK_MS,
            "throttle_threshold": self.throttle_threshold,
            "max_sm_clock_mhz": self.max_sm_clock_mhz,
            "throttle_detection": self.throttle_note,
            "timer": self.timer,
            "copy": {"bytes": self.copy_bytes, "samples_ms": list(self.copy_samples_ms)},
            "failures": dict(self.failures),
            "block_clocks": [c.as_record() for c in self.block_clocks],
            "clock_outlier_fraction": CLOCK_OUTLIER_FRACTION,
            "clock_flags": clock_flags(self.block_clocks),
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
    with its error recorded; the others go on. A launch that hangs or faults
    (LaunchHung, LaunchFault) ends the family: the GPU is busy or the context gone.
    """
    failures: dict[str, str] = {}
    estimates: dict[str, float] = {}
    launches: dict[str, int] = {}
    for cid in ids:
        try:
            timer.warmup(cid, warmup)
        except (LaunchHung, LaunchFault):
            raise
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
        except (LaunchHung, LaunchFault):
            raise
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
        except (LaunchHung, LaunchFault):
            raise
        except Exception as exc:  # a candidate's crash is recorded, never fatal to the family
            failures[cid] = f"estimate: {type(exc).__name__}: {exc}"
            log.warning("%s failed while its launch time was estimated: %s", cid, failures[cid])
    live = [c for c in ids if c not in failures]
    orders = block_orders(live, blocks, seed)
    samples: dict[str, list[Sample]] = {c: [] for c in live}
    clocks: list[BlockClock] = []
    for b, order in enumerate(orders):
        start = _clock_state(timer)
        for cid in order:
            if cid in failures:
                continue
            try:
                t = timer.time_launches(cid, launches[cid])
            except (LaunchHung, LaunchFault):
                raise
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
        clocks.append(BlockClock(b, start, _clock_state(timer)))
    copy: tuple[float, ...] = ()
    try:
        est = timer.time_copy(1)
        r = launches_per_block(float(np.mean(est.times_ms)), target_ms)
        copy = tuple(float(np.mean(timer.time_copy(r).times_ms)) for _ in range(blocks))
    except (LaunchHung, LaunchFault):
        raise
    except Exception as exc:
        failures["@copy"] = f"{type(exc).__name__}: {exc}"
    return BlockRun(
        seed=seed, orders=orders, launches=launches, estimates_ms=estimates,
        samples={c: tuple(s) for c, s in samples.items()}, copy_samples_ms=copy, copy_bytes=timer.copy_bytes,
        warmup_launches=warmup, flush_bytes=timer.flush_bytes, throttle_threshold=threshold, spin_up_ms=spun,
        max_sm_clock_mhz=timer.max_sm_clock_mhz, throttle_note=timer.throttle_note, timer=timer.name,
        failures=failures, block_clocks=tuple(clocks), flush_method=getattr(timer, "flush_method", ""),
        persisting_l2=getattr(timer, "persisting_l2", ""),
    )


def _clock_state(timer: Timer) -> ClockState | None:
    """The timer's clock reading (`clock_state()`, optional), or None; a failed read is recorded, never raised."""
    read = getattr(timer, "clock_state", None)
    if read is None:
        return None
    try:
        return read()
    except Exception as exc:
        return ClockState(None, None, f"clock read failed: {type(exc).__name__}: {exc}")


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

    def state(self) -> ClockState:
        """The SM clock and the clock-event reasons bitmask, read now (host time, between launches)."""
        read = (getattr(self.nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                or getattr(self.nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
        mhz, reasons, notes = None, None, []
        try:
            mhz = self.sm_clock_mhz()
        except Exception as exc:
            notes.append(f"SM clock unreadable ({type(exc).__name__})")
        if read is None:
            notes.append("this nvidia-ml-py has no clock-event reasons call")
        else:
            try:
                reasons = int(read(self.handle))
            except Exception as exc:
                notes.append(f"clock-event reasons unreadable ({type(exc).__name__})")
        return ClockState(mhz, reasons, "; ".join(notes))

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

    Per launch: zeroing of the candidate's `zero_before` buffers, then the L2
    flush (FLUSH_METHOD), then the event pair around the whole plan. The host
    never synchronizes inside a plan.
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
        self.slowest_ms: dict[str, float] = {}  # each plan's slowest launch so far: the bound of its next wait
        for c in candidates:
            self.plans[c.id] = fam.resolve(c, shape, executor.sm_count)
            self.zero[c.id] = tuple(c.zero_before)
        self.dev = {k: cupy.asarray(device_view(v)) for k, v in host_buffers.items()}
        self.bound = {c.id: executor.bind(c, self.plans[c.id], self.dev) for c in candidates}
        self.flush_bytes = max(MIN_FLUSH_BYTES, 2 * int(executor.l2_bytes))
        self.flush_bytes -= self.flush_bytes % 16  # read as uint4
        self.flush_method = FLUSH_METHOD
        self.flush = cupy.empty(self.flush_bytes, dtype=cupy.uint8)
        self._flush_sink = cupy.empty(1, dtype=cupy.uint32)
        self._flush_kernel = cupy.RawModule(code=FLUSH_SOURCE, options=("--std=c++17",), backend="nvrtc").get_function(FLUSH_KERNEL)
        self._flush_args = (self.flush, np.uint64(self.flush_bytes // 16), self._flush_sink)
        self._flush_grid = (max(1, int(executor.sm_count)) * 8, 1, 1)
        self._copy_src = cupy.empty(COPY_BYTES // 2, dtype=cupy.uint8)
        self._copy_dst = cupy.empty(COPY_BYTES // 2, dtype=cupy.uint8)
        self._copy_src.data.memset_async(1, self._copy_src.nbytes)
        self.persisting_l2 = reset_persisting_l2(cupy)
        self.flush.data.memset_async(0, self.flush_bytes)  # the only write to it: its dirty lines leave in the read below
        self._flush_read()
        self.clock, self.throttle_note = open_nvml(executor.device_index)
        self.max_sm_clock_mhz = self.clock.max_mhz if self.clock else None
        cupy.cuda.Device().synchronize()

    @property
    def copy_bytes(self) -> int:
        """Bytes read plus bytes written by one device-to-device copy."""
        return 2 * self._copy_src.nbytes

    def _flush_read(self) -> None:
        self._flush_kernel(self._flush_grid, (256, 1, 1), self._flush_args)

    def _prepare(self, cid: str) -> None:
        """Zero first, then flush: the zeroed lines are written back during the flush, not in the timed plan."""
        for z in self.zero.get(cid, ()):
            self.dev[z].data.memset_async(0, self.dev[z].nbytes)
        self._flush_read()

    def clock_state(self) -> ClockState | None:
        """Read at a block's start and end, between synchronized launches."""
        return self.clock.state() if self.clock is not None else None

    def _bound(self, cid: str, launches: int) -> float:
        return wait_bound_s(launches, self.slowest_ms.get(cid))

    def warmup(self, cid: str, launches: int) -> None:
        for _ in range(launches):
            self._prepare(cid)
            self.ex.launch_bound(self.bound[cid])
        done = self.cp.cuda.Event()
        done.record()
        wait_event(self.cp.cuda.runtime, done, self._bound(cid, launches), f"{cid}: {launches} warm-up launch(es)")
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
        state = {"note": "", "sampling": self.clock is not None}

        def sample() -> None:
            if not state["sampling"]:
                return
            try:
                clocks.append(self.clock.sm_clock_mhz())
                if len(clocks) == 1:  # once, while the launches are in flight
                    state["note"] = self.clock.event_reasons()
            except Exception as exc:  # NVML hiccup: record it, keep the sample, stop sampling
                state["note"] = f"NVML read failed: {type(exc).__name__}: {exc}"
                state["sampling"] = False

        wait_event(cp.cuda.runtime, last, self._bound(cid, launches), f"{cid}: {launches} timed launch(es)", during=sample)
        note = state["note"]
        if self.clock is not None and not clocks and not note:
            note = "the launches finished before the first clock sample"
        cp.cuda.Device().synchronize()  # the last event completed, so every event pair has
        times = tuple(float(cp.cuda.get_elapsed_time(a, b)) for a, b in pairs)
        if times:
            self.slowest_ms[cid] = max(self.slowest_ms.get(cid, 0.0), max(times))
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
        del self.flush, self._flush_sink, self._flush_args, self._copy_src, self._copy_dst
        self.cp.get_default_memory_pool().free_all_blocks()


def reset_persisting_l2(cp: Any) -> str:
    """Set the persisting-L2 limit to 0 and reset persisting lines, so no earlier
    process's access-policy window keeps lines resident; says what was done."""
    notes = []
    try:
        before = int(cp.cuda.runtime.deviceGetLimit(PERSISTING_L2_LIMIT))
        cp.cuda.runtime.deviceSetLimit(PERSISTING_L2_LIMIT, 0)
        notes.append(f"cudaLimitPersistingL2CacheSize was {before} B, set to 0")
    except Exception as exc:
        notes.append(f"cudaLimitPersistingL2CacheSize not set ({type(exc).__name__}: {exc})")
    try:
        from cuda.bindings import runtime as cudart  # cuda-bindings: CuPy 14 has no binding for this call

        res = cudart.cudaCtxResetPersistingL2Cache()
        err = res[0] if isinstance(res, tuple) else res
        notes.append(f"cudaCtxResetPersistingL2Cache: {getattr(err, 'name', err)}")
    except Exception as exc:
        notes.append(f"cudaCtxResetPersistingL2Cache not called ({type(exc).__name__}: {exc})")
    notes.append("no access-policy window is set on the timing stream (CuPy's default stream)")
    return "; ".join(notes)


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
