"""One family through the measure pass: gate, time, rank, write the key, capture the slip.

Why a pytest-free session object: the order matters (only gated candidates
are timed; the slip is taken after the timing buffers are freed) and every
step must fail soft, so one broken family is recorded and the next one runs.
The GPU parts come in through two seams, an `Executor` (plugins.gate.check) and a
`TimerFactory` (plugins.measure.timing), which CPU tests replace with labelled fakes.
"""
from __future__ import annotations

import logging
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from plugins.gate.check import Executor, GateResult, fresh_seeds, gate_candidate, host_buffers
from plugins.atomicio import write_json_atomic
from plugins.measure.keyfile import SCHEMA, write_key
from plugins.family.manifest import Candidate, Family
from plugins.family.plan import Number
from plugins.measure.ranking import FamilyRanking, rank_family
from plugins.measure.timing import BLOCKS, BlockRun, Timer, bytes_moved, run_blocks

log = logging.getLogger("sparktrace.measure")

GATE_SEEDS = 3


class TimerFactory(Protocol):
    def __call__(self, fam: Family, shape: Mapping[str, Number], host_buffers: Mapping[str, np.ndarray], candidates: Sequence[Candidate]) -> Timer: ...


class SlipCapture(Protocol):
    def __call__(self, fam: Family, gpu: str, seconds_left: float | None = None) -> Any: ...


@dataclass(frozen=True)
class MeasureConfig:
    out_root: Path  # keys go to <out_root>/families/<name>/measurements/, slips to <out_root>/slips/<gpu>/
    repo: Path
    families_root: Path
    command: str
    replace: bool = False
    blocks: int = BLOCKS
    gate_seeds: int = GATE_SEEDS
    ncu: bool = True
    deadline: float | None = None  # time.monotonic() after which no slip is started (the script's budget)


@dataclass
class FamilyOutcome:
    """What happened to one family; `error` is set when a step crashed (recorded, not raised)."""

    family: str
    gate: dict[str, GateResult] = field(default_factory=dict)
    gate_problems: list[str] = field(default_factory=list)
    blocks: BlockRun | None = None
    ranking: FamilyRanking | None = None
    slip: dict = field(default_factory=dict)
    key_path: Path | None = None
    record: dict | None = None
    error: str = ""
    seconds: dict = field(default_factory=dict)
    skipped: str = ""  # why the family is not measured on this GPU at all (its targets exclude it)

    def summary(self) -> dict:
        rk = self.ranking.ranking if self.ranking else None
        spreads = {cid: st.spread for cid, st in self.ranking.stats.items()} if self.ranking else {}
        return {
            "family": self.family,
            "winner": rk.winner if rk else None,
            "runner_up": rk.runner_up if rk else None,
            "ratio": rk.ratio if rk else None,
            "kept": rk.kept if rk else False,
            "noisy": rk.noisy if rk else False,
            "reason": self.error or self.skipped or (rk.reason if rk else ""),
            "max_spread": max((s for s in spreads.values() if s is not None), default=None),
            "gate_problems": self.gate_problems,
            "slip": self.slip.get("status", "not run"),
            "slip_reason": self.slip.get("reason", ""),
            "key": str(self.key_path) if self.key_path else None,
            "seconds": self.seconds,
        }


def timing_buffers(fam: Family, shape: Mapping[str, Number], seed: int) -> dict[str, np.ndarray]:
    """Timing-size host buffers. No reference output is computed at this size:
    the gate already decided correctness on its own shapes and seeds."""
    return host_buffers(fam, shape, seed)


def gate_problems(results: Mapping[str, GateResult]) -> list[str]:
    """Everything that makes the gate itself untrustworthy, or a candidate unusable."""
    out = []
    for r in results.values():
        if r.role == "wrong" and r.passed:
            out.append(f"wrong variant {r.candidate!r} passed the gate (seeds {list(r.seeds)}), so the gate cannot be trusted")
        elif r.role != "wrong" and not r.passed:
            out.append(f"{r.role} {r.candidate!r} failed the gate: {r.reason}")
    return out


def _seed() -> int:
    return int.from_bytes(os.urandom(4), "little")


class ContextLost(RuntimeError):
    """The CUDA context died (a sticky error): nothing later in this process can be trusted."""


SLIP_PENDING = "taken after every family's timing (so a slow ncu never costs a key); see the slip step"
# Measured nowhere: a floor under which a slip is not started, so the pass ends inside its budget.
MIN_SLIP_SECONDS = 20.0


class MeasureSession:
    """Measures families one at a time and remembers each outcome (tests ask for it several times)."""

    def __init__(
        self,
        config: MeasureConfig,
        executor: Executor,
        timer_factory: TimerFactory,
        gpu: Mapping[str, Any],
        provenance: Mapping[str, Any],
        capture: SlipCapture | None = None,
        seeds: Callable[[int], Sequence[int]] = fresh_seeds,
        new_seed: Callable[[], int] = _seed,
        after_family: Callable[[], None] | None = None,
        health: Callable[[], str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.config = config
        self.executor = executor
        self.timer_factory = timer_factory
        self.gpu = dict(gpu)
        self.provenance = dict(provenance)
        self.capture = capture
        self.seeds = seeds
        self.new_seed = new_seed
        self.after_family = after_family
        self.health = health
        self.clock = clock
        self.dead = ""  # set once the CUDA context is lost: later families are not measured
        self.outcomes: dict[str, FamilyOutcome] = {}
        self.slipped: set[str] = set()

    @property
    def slug(self) -> str:
        return str(self.gpu.get("slug") or "unknown-gpu")

    def measure(self, fam: Family) -> FamilyOutcome:
        """Gate, time, rank and write the key; the slip comes later (`slip`)."""
        if fam.name not in self.outcomes:
            cc = str(self.gpu.get("compute_capability") or "")
            if self.dead:
                out = FamilyOutcome(fam.name, error=f"context: not measured, {self.dead}; rerun this family in a new process")
                out.slip = {"status": "skipped", "reason": "the CUDA context was lost earlier in this process"}
            elif cc and not fam.targets_gpu(cc):
                out = FamilyOutcome(fam.name, skipped=f"{fam.name} targets {list(fam.targets)}, not this GPU (compute capability {cc})")
                out.slip = {"status": "skipped", "reason": out.skipped}
            else:
                out = self._measure(fam)
            self.outcomes[fam.name] = out
            self._write_summary(out)
            s = out.summary()
            log.info("%s done in %.1f s: winner %s, ratio %s, kept %s, noisy %s, slip %s%s", fam.name, sum(out.seconds.values()),
                     s["winner"], s["ratio"], s["kept"], s["noisy"], s["slip"], f"; ERROR {out.error}" if out.error else "")
        return self.outcomes[fam.name]

    def _check_context(self, where: str) -> None:
        """Raise ContextLost (and remember it) when the CUDA context no longer works."""
        if self.health is None or self.dead:
            return
        why = self.health()
        if why:
            self.dead = f"CUDA context lost at {where}: {why}"
            raise ContextLost(self.dead)

    def slip(self, fam: Family) -> FamilyOutcome:
        """Take the family's slip after its key, and record the result in the key and summary."""
        out = self.measure(fam)
        if fam.name in self.slipped or out.slip.get("status") != "pending":
            return out
        self.slipped.add(fam.name)
        t0 = self.clock()
        try:
            left = None if self.config.deadline is None else self.config.deadline - t0
            # ncu profiles a new process, so a slip is still taken after this process's context died.
            if left is not None and left < MIN_SLIP_SECONDS:
                out.slip = {"status": "skipped", "reason": f"time budget: {max(left, 0.0):.0f} s left of the pass's budget, "
                            f"under the {MIN_SLIP_SECONDS:.0f} s a slip needs; rerun with -m measure --measure-families {fam.name}"}
            else:
                r = self.capture(fam, self.slug, left)  # type: ignore[misc]
                out.slip = {"status": r.status, "reason": r.reason, "files": [self._rel(f) for f in r.files]}
        except Exception as exc:  # a slip never costs the key
            out.slip = {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"}
            log.error("%s slip failed:\n%s", fam.name, traceback.format_exc())
        finally:
            if self.after_family and not self.dead:
                try:
                    self.after_family()
                except Exception as exc:
                    log.warning("%s: cleanup after the slip failed: %s", fam.name, exc)
        out.seconds["slip"] = self.clock() - t0
        if out.record is not None and out.key_path is not None:
            out.record["slip"] = out.slip
            out.record["seconds"] = out.seconds
            try:
                write_json_atomic(out.key_path, out.record)
            except OSError as exc:
                log.warning("could not record the slip in %s: %s", out.key_path, exc)
        self._write_summary(out)
        log.info("%s slip: %s %s", fam.name, out.slip.get("status"), out.slip.get("reason", ""))
        return out

    # ------------------------------------------------------------------ steps

    def _measure(self, fam: Family) -> FamilyOutcome:
        out = FamilyOutcome(fam.name)
        step = "gate"
        try:
            t0 = time.monotonic()
            seeds = tuple(self.seeds(self.config.gate_seeds))
            for cand in fam.all_candidates:
                out.gate[cand.id] = gate_candidate(fam, cand, self.executor, seeds)
                log.info("%s/%s gate: %s %s", fam.name, cand.id, "pass" if out.gate[cand.id].passed else "FAIL", out.gate[cand.id].reason)
                if not out.gate[cand.id].passed:  # a crash may have killed the context: every later verdict would lie
                    self._check_context(f"{fam.name}/{cand.id} in the gate")
            out.gate_problems = gate_problems(out.gate)
            out.seconds["gate"] = time.monotonic() - t0

            step = "timing"
            t0 = time.monotonic()
            timed = [c for c in fam.candidates if out.gate[c.id].passed]
            shape = fam.shapes("timing")[0]
            input_seed = self.new_seed()
            block_seed = self.new_seed()
            timer = self.timer_factory(fam, shape, timing_buffers(fam, shape, input_seed), timed)
            try:
                out.blocks = run_blocks(timer, [c.id for c in timed], block_seed, blocks=self.config.blocks)
            finally:
                close = getattr(timer, "close", None)
                if close:
                    close()
            if out.blocks.failures:
                self._check_context(f"{fam.name} while timing ({', '.join(sorted(out.blocks.failures))} failed)")
            out.seconds["timing"] = time.monotonic() - t0

            step = "ranking"
            not_timed = {c.id: f"gated out: {out.gate[c.id].reason}" for c in fam.rewrites if not out.gate[c.id].passed}
            not_timed.update({cid: f"crashed while timed: {why}" for cid, why in out.blocks.failures.items() if cid in {r.id for r in fam.rewrites}})
            wrong_passed = [p for p in out.gate_problems if p.startswith("wrong variant")]
            start_failed = [p for p in out.gate_problems if p.startswith("start ")]
            problem = "; ".join(wrong_passed + start_failed)
            out.ranking = rank_family(
                fam.start.id, [r.id for r in fam.rewrites], {c.id: out.blocks.kept(c.id) for c in timed if c.id not in out.blocks.failures},
                not_timed=not_timed, gate_problem=problem, bytes_moved=bytes_moved(fam, shape),
                copy_bytes_per_s=out.blocks.copy_bytes_per_s, memory_bound=fam.bound == "memory",
            )

            if not self.config.ncu:
                out.slip = {"status": "skipped", "reason": "--no-ncu was given"}
            elif self.capture is None:
                out.slip = {"status": "skipped", "reason": "no slip capture configured"}
            else:
                out.slip = {"status": "pending", "reason": SLIP_PENDING}

            step = "key"
            out.record = self.record(fam, out, shape, input_seed)
            out.key_path = write_key(Path(self.config.out_root) / "families" / fam.name, self.slug, out.record, replace=self.config.replace)
        except ContextLost as exc:
            out.error = f"context: {exc}"
            out.slip = {"status": "skipped", "reason": "the CUDA context was lost"}
            log.error("%s: %s; the remaining families are not measured in this process", fam.name, exc)
        except Exception as exc:  # fail soft: the family's error is recorded and the pass moves on
            out.error = f"{step}: {type(exc).__name__}: {exc}"
            log.error("%s failed at %s:\n%s", fam.name, step, traceback.format_exc())
            try:
                self._check_context(f"{fam.name} after the {step} step failed")
            except ContextLost as lost:
                out.error += f"; {lost}"
        finally:
            if self.after_family:
                try:
                    self.after_family()
                except Exception as exc:
                    out.error = out.error or f"cleanup: {type(exc).__name__}: {exc}"
        return out

    def _rel(self, path: str | Path) -> str:
        try:
            return str(Path(path).resolve().relative_to(Path(self.config.out_root).resolve()))
        except ValueError:
            return str(path)

    def record(self, fam: Family, out: FamilyOutcome, shape: Mapping[str, Number], input_seed: int) -> dict:
        """The measurement file (docs/artifacts.md section 2)."""
        assert out.blocks is not None and out.ranking is not None
        br, fr = out.blocks, out.ranking
        cands: dict[str, dict] = {}
        for c in fam.candidates:
            samples = br.samples.get(c.id, ())
            st = fr.stats.get(c.id)
            thr = fr.throughputs.get(c.id)
            entry = {
                "role": c.role,
                "time_ms": st.time_ms if st else None,
                "samples_ms": [s.time_ms for s in samples if s.kept],
                "sample_blocks": [s.block for s in samples if s.kept],
                "sample_sm_clock_mhz": [s.sm_clock_mhz for s in samples if s.kept],
                "skipped_samples": [s.as_skipped() for s in samples if not s.kept],
                "launches_per_block": br.launches.get(c.id),
                "spread": st.spread if st else None,
                "speedup_vs_start": fr.speedups.get(c.id),
                "bytes_moved": thr.bytes_moved if thr else bytes_moved(fam, shape),
                "bytes_per_s": thr.bytes_per_s if thr else None,
                "fraction_of_copy": thr.fraction_of_copy if thr else None,
            }
            if not out.gate[c.id].passed:
                entry["not_timed"] = f"gated out: {out.gate[c.id].reason}"
            elif c.id in br.failures:
                entry["not_timed"] = f"crashed while timed: {br.failures[c.id]}"
            cands[c.id] = entry
        return {
            "schema": SCHEMA,
            "family": fam.name,
            "bound": fam.bound,
            "gpu": self.gpu,
            "provenance": self.provenance,
            "protocol": {**br.protocol_record(), "input_seed": input_seed},
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "sizes": dict(shape),
            "gate": {
                cid: {"role": r.role, "passed": r.passed, "reason": r.reason, "seeds": list(r.seeds),
                      "shapes": [dict(s) for s in r.shapes], "executor": r.executor}
                for cid, r in out.gate.items()
            },
            "gate_problems": out.gate_problems,
            "candidates": cands,
            "copy_bytes_per_s": br.copy_bytes_per_s,
            "ranking": fr.ranking.as_record(),
            "slip": out.slip,
            "seconds": out.seconds,
        }

    def _write_summary(self, out: FamilyOutcome) -> None:
        """One small file per family for the script's closing table (never inside families/)."""
        path = Path(self.config.out_root) / "reports" / "measure" / self.slug / f"{out.family}.json"
        try:
            write_json_atomic(path, out.summary())
        except OSError as exc:
            log.warning("could not write %s: %s", path, exc)


ERROR_PREFIXES = ("gate:", "timing:", "ranking:", "slip:", "key:", "context:")


def summary_rows(summaries: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """family, winner, ratio, kept, spread: the closing table."""
    rows = []
    for s in summaries:
        ratio = s.get("ratio")
        spread = s.get("max_spread")
        kept = "error" if s.get("reason", "").startswith(ERROR_PREFIXES) else ("yes" if s.get("kept") else "no")
        if s.get("noisy"):
            kept += " (noisy)"
        rows.append([s["family"], s.get("winner") or "-", f"{ratio:.3f}" if ratio else "-", kept,
                     f"{spread:.3f}" if spread is not None else "-"])
    return rows


def gpu_session(config: MeasureConfig, executor: Any) -> MeasureSession:
    """The real session: CUDA-event timer, provenance read from the device, ncu slips."""
    from plugins.measure.capture import PROFILE_TIMEOUT_S, capture_slip, find_ncu, ncu_version
    from plugins.measure.device import cupy_added_options
    from plugins.measure.provenance import CupyProbe, gpu_record, software_record
    from plugins.measure.timing import CudaEventTimer

    probe = CupyProbe(executor.device_index)
    ncu = find_ncu()
    gpu = gpu_record(probe)
    options = [*executor.options, *cupy_added_options(executor.cp)]
    prov = software_record(probe, config.repo, config.command, ncu_version(ncu), compile_options=options)

    def timer_factory(fam: Family, shape: Mapping[str, Number], host: Mapping[str, np.ndarray], cands: Sequence[Candidate]) -> Timer:
        return CudaEventTimer(executor, fam, shape, host, cands)

    def capture(fam: Family, gpu_slug: str, seconds_left: float | None = None) -> Any:
        try:
            executor.free()  # the profiled process allocates its own inputs
        except Exception as exc:  # a dead context here does not stop ncu's own process
            log.warning("could not free device memory before %s's slip: %s", fam.name, exc)
        kernels = [launch.kernel for launch in fam.start.launches]
        timeout = PROFILE_TIMEOUT_S if seconds_left is None else max(5.0, min(PROFILE_TIMEOUT_S, seconds_left - 5.0))
        return capture_slip(fam.name, kernels, gpu_slug, config.out_root, config.repo, config.families_root, ncu=ncu,
                            profile_timeout_s=timeout)

    return MeasureSession(config, executor, timer_factory, gpu, prov, capture=capture, after_family=executor.free,
                          health=executor.context_error)


@dataclass
class MeasureState:
    """The pytest session's view of the measure pass: options, and the GPU opened at most once."""

    config: MeasureConfig
    families: tuple[str, ...] | None
    markexpr: str
    in_worker: bool
    _executor: Any = None
    _session: MeasureSession | None = None
    _reason: str = ""

    @property
    def selected(self) -> bool:
        """True when `-m` names the measure marker: only then does a GPU measure pass start."""
        import re

        return bool(re.search(r"\bmeasure\b", self.markexpr or ""))

    def wants(self, family: str) -> bool:
        return self.families is None or family in self.families

    def executor(self) -> tuple[Any, str]:
        """The CuPy executor, or None and the precise reason there is none."""
        if self._executor is None and not self._reason:
            from plugins.measure.device import CupyExecutor, DeviceUnavailable

            try:
                self._executor = CupyExecutor()
            except DeviceUnavailable as exc:
                self._reason = str(exc)
            except Exception as exc:
                self._reason = f"no CUDA device: opening it failed ({type(exc).__name__}: {exc})"
        return self._executor, self._reason

    def session(self) -> tuple[MeasureSession | None, str]:
        if not self.selected:
            return None, "the GPU measure pass runs only when asked: run pytest -m measure"
        if self._session is None:
            ex, reason = self.executor()
            if ex is None:
                return None, reason
            if self.in_worker:
                return None, "the GPU measure pass runs in one process: run pytest -m measure without -n (xdist)"
            try:
                self._session = gpu_session(self.config, ex)
            except Exception as exc:
                self._reason = f"opening the measure session failed: {type(exc).__name__}: {exc}"
                return None, self._reason
        return self._session, ""

    def summary_lines(self) -> list[str]:
        if self._session is None or not self._session.outcomes:
            return []
        from tabulate import tabulate

        rows = summary_rows([o.summary() for o in self._session.outcomes.values()])
        return tabulate(rows, headers=["family", "winner", "ratio", "kept", "spread"], disable_numparse=True).splitlines()


def state_from_options(root: Path, getoption: Callable[[str], Any], argv: Sequence[str], in_worker: bool) -> MeasureState:
    """MeasureState from pytest's option values (`getoption` is config.getoption)."""
    import shlex
    import sys

    out = getoption("measure_out")
    fams = getoption("measure_families")
    head = ["python3", "-m", "pytest"] if argv and argv[0].endswith("__main__.py") else [Path(argv[0]).name if argv else "pytest"]
    budget = getoption("measure_budget_s")
    cfg = MeasureConfig(
        deadline=time.monotonic() + float(budget) if budget else None,
        out_root=Path(out).resolve() if out else root,
        repo=root,
        families_root=(root / getoption("families_root")).resolve(),
        command=shlex.join([*head, *argv[1:]]) + f"  # python: {sys.executable}",
        replace=bool(getoption("measure_replace")),
        blocks=int(getoption("measure_blocks")),
        ncu=not getoption("no_ncu"),
    )
    families = tuple(f.strip() for f in fams.split(",") if f.strip()) if fams else None
    return MeasureState(cfg, families, getoption("markexpr") or "", in_worker)


def positive_int(text: str) -> int:
    """argparse type for --measure-blocks: a bad value is a usage error, not a traceback."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} < 1; give at least one block (the protocol uses 5)")
    return value
