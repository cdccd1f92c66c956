"""The measure pass: per family gate, time, rank and write the key; then the slips; then a repeat.

Why a pytest-free session object: the order matters (keys for every selected
family first, then slips in priority order, then, while time remains, a
repeat of the timing in a new order) and every step must fail soft, so one
broken family is recorded and the next one runs. The GPU parts come in
through seams (an `Executor` from plugins.gate.check, a `TimerFactory`, a
`SlipCapture`, a clock) which CPU tests replace with labelled fakes.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from plugins.gate.check import Executor, GateResult, fresh_seeds, gate_candidate, host_buffers
from plugins.atomicio import write_json_atomic
from plugins.measure.budget import StepBudget
from plugins.measure.archive import write_partial
from plugins.measure.capture import LAUNCH_SEED
from plugins.measure.confidence import Confidence, assess
from plugins.measure.gate_child import runs_apart
from plugins.measure.inputs import InputStore, TimingInputs
from plugins.measure.keyfile import SCHEMA, load_key, write_key
from plugins.measure.provenance import inputs_record, inputs_sha256, unavailable
from plugins.family.manifest import SETS, Candidate, Family
from plugins.family.plan import Number
from plugins.measure.ranking import FamilyRanking, rank_family
from plugins.measure.timing import BLOCKS, BlockRun, LaunchHung, Timer, bytes_moved, run_blocks

log = logging.getLogger("sparktrace.measure")

GATE_SEEDS = 3
# A family's gate, inputs and timing are estimated at 2-7 s (docs/gpu-run.md): past WATCHDOG_S it
# is taken as hung (an estimate-based bound, not a measurement; --measure-watchdog-s changes it).
WATCHDOG_S = 60.0
HUNG = 10  # the status a process exits with after a hang: plugins.measure.gpu_run.HUNG, which the script reruns on


class TimerFactory(Protocol):
    def __call__(self, fam: Family, shape: Mapping[str, Number], host_buffers: Mapping[str, np.ndarray], candidates: Sequence[Candidate]) -> Timer: ...


class SlipCapture(Protocol):
    """Takes one slip; `budget` bounds its timeouts by the deadline, `name` writes it beside an earlier one,
    `inputs` names the key's timing inputs (their file and sha256) for ncu's child to load."""

    def __call__(self, fam: Family, gpu: str, budget: StepBudget | None = None, name: str | None = None,
                 inputs: TimingInputs | None = None) -> Any: ...


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
    deadline: float | None = None  # time.monotonic() by which slips and repeats must end (None: no limit)
    slips_only: bool = False  # take slips without measuring keys (a rerun of slips that were skipped)
    repeat: bool = False  # after the slips, while time remains, time every keyed family again
    also_check: tuple[Path, ...] = ()  # roots whose families/ and slips/ a new key or slip must not overwrite
    named: tuple[str, ...] = ()  # families named with --measure-families (slips-only retakes these beside)
    previous: Path | None = None  # an earlier pass's output (its reports/measure/<gpu>/*.json) for slips-only
    ncu_unusable: str = ""  # the preflight's reason why ncu cannot profile here: every slip is skipped with it
    ncu_required_metrics: bool = False  # the preflight saw the optional metrics refused: use the required list
    allow_unknown_commit: bool = False  # measure with no git commit known (recorded in every key)
    watchdog_s: float | None = WATCHDOG_S  # a family's key step past this is recorded as hung (None: no watchdog)
    partial_archive: bool = False  # refresh <out_root>/measure-partial.tar.gz after each key (the script's OUT only)
    inputs_root: Path | None = None  # where the timing inputs' .npz files go (None: out_root)
    rerun: bool = False  # the script's rerun of the same output folder: carry the earlier process's gate crashes


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
    confidence: Confidence | None = None
    set: str = ""
    not_measured: str = ""  # why no key was measured on purpose (slips-only, not a target GPU)
    inputs: TimingInputs | None = None  # the key's timing inputs: the slip and the repeat use these
    # wrong variants whose gate run killed the context (this process's, or carried): {id: {reason, source_sha256}}
    crashed: dict[str, dict[str, str]] = field(default_factory=dict)
    # the context died in this process's gate, on a wrong variant: a new process gates the family again,
    # carrying that rejection (a crash is one), instead of leaving the family unmeasured. Never set by a
    # loss anywhere else (timing, a start or rewrite): that would only happen again.
    rerun_gate: bool = False

    def summary(self) -> dict:
        rk = self.ranking.ranking if self.ranking else None
        spreads = {cid: st.spread for cid, st in self.ranking.stats.items()} if self.ranking else {}
        conf = self.confidence
        flags = (self.record or {}).get("protocol", {}).get("clock_flags", [])
        return {
            "family": self.family,
            "set": self.set,
            "winner": rk.winner if rk else None,
            "runner_up": rk.runner_up if rk else None,
            "ratio": rk.ratio if rk else None,
            "kept": rk.kept if rk else False,
            "noisy": rk.noisy if rk else False,
            "fragile": conf.fragile if conf else False,
            "fragile_reason": conf.fragile_reason if conf else "",
            "interval": list(conf.interval) if conf and conf.interval else None,
            "blocks_agree": conf.blocks_agree if conf else None,
            "clock_flags": flags,
            "reason": self.error or (rk.reason if rk else self.not_measured),
            "not_measured": self.not_measured,
            "max_spread": max((s for s in spreads.values() if s is not None), default=None),
            "gate_problems": self.gate_problems,
            "slip": self.slip.get("status", "not run"),
            "slip_reason": self.slip.get("reason", ""),
            "slip_files": self.slip.get("files", []),
            "key": str(self.key_path) if self.key_path else None,
            "seconds": self.seconds,
            "gate_crashed": self.crashed,
            "rerun_gate": self.rerun_gate,
        }


def timing_buffers(fam: Family, shape: Mapping[str, Number], seed: int) -> dict[str, np.ndarray]:
    """Timing-size host buffers. No reference output is computed at this size:
    the gate already decided correctness on its own shapes and seeds."""
    return host_buffers(fam, shape, seed)


def timing_digest(fam: Family, host: Mapping[str, np.ndarray]) -> str:
    """sha256 of the timing inputs (the key's inputs.timing_inputs_sha256): a redraw can be checked."""
    return inputs_sha256(host, [b.name for b in fam.buffers if b.role == "input"])


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


def crashed_before(out_root: Path, gpu: str) -> dict[str, dict[str, dict[str, str]]]:
    """By family, the wrong variants the earlier process of this pass (the same output folder) saw kill
    the CUDA context in the gate, with why and the source's sha256: the script's rerun
    (--measure-rerun) rejects them without running them again."""
    found: dict[str, dict[str, dict[str, str]]] = {}
    for path in sorted((Path(out_root) / "reports" / "measure" / gpu).glob("*.json")):
        try:
            data = json.loads(path.read_text())
            crashed = data.get("gate_crashed") or {}
            if crashed:
                found[str(data["family"])] = {str(k): {"reason": str(v["reason"]), "source_sha256": str(v["source_sha256"])}
                                              for k, v in crashed.items()}
        except (OSError, ValueError, KeyError, AttributeError, TypeError) as exc:
            log.warning("could not read %s: %s", path, exc)
    return found


def source_sha256(cand: Candidate) -> str:
    return hashlib.sha256(cand.source.encode()).hexdigest()


CARRIED = "rejected in an earlier process of this pass, not run again: "


SLIP_PENDING = "taken after every family's timing (so a slow ncu never costs a key); see the slip step"
REPEAT_SAFETY = 1.5  # a family's repeat starts only with this multiple of its first timing's seconds left


def slip_priority(summary: Mapping[str, Any]) -> int:
    """Lower first: kept families (their items need the slip), then dropped ones near the gate
    (a rerun may keep them), then the other dropped ones, then families with no key."""
    if summary.get("kept"):
        return 0
    if summary.get("winner") and (summary.get("noisy") or summary.get("fragile")):
        return 1
    if summary.get("winner"):
        return 2
    return 3


def stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def target_mismatch(fam: Family, gpu: Mapping[str, Any]) -> str:
    """Why this GPU cannot run the family, or "" (plugins/measure/targets.py decides)."""
    from plugins.measure.targets import family_skip

    return family_skip(fam, gpu)


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
        exit: Callable[[int], None] = os._exit,
        isolate: Callable[[Family, Candidate, Sequence[int]], GateResult] | None = None,
    ):
        self.config = config
        self.isolate = isolate  # gates a wrong variant that faults on purpose (`faults`) in a child process
        self.exit = exit  # called with HUNG once a family hung: nothing later in this process can be trusted
        self.hung = ""  # the family that hung, once one did
        self._hung_lock = threading.Lock()
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
        self.slip_budget = StepBudget(config.deadline, clock, "slip")
        self.repeat_budget = StepBudget(config.deadline, clock, "repeat")
        self.repeats: dict[str, dict] = {}
        self.repeat_seed = new_seed()
        self._slip_order: list[str] | None = None
        self._repeat_order: list[str] | None = None
        self.previous = load_previous(config.previous, self.slug) if config.previous else {}
        self.carried = crashed_before(Path(config.out_root), self.slug) if config.rerun and not config.slips_only else {}
        # Only a slip (ncu's child) or a repeat reads the stored inputs: without either none is written.
        keep = config.repeat or (config.ncu and not config.ncu_unusable and capture is not None)
        self.inputs = InputStore((config.inputs_root or config.out_root) if keep else None, timing_buffers)

    @property
    def slug(self) -> str:
        return str(self.gpu.get("slug") or "unknown-gpu")

    def measure(self, fam: Family) -> FamilyOutcome:
        """Gate, time, rank and write the key; the slip comes later (`slip`)."""
        if fam.name not in self.outcomes:
            if self.config.slips_only:
                out = self._slips_only(fam)
            elif why := target_mismatch(fam, self.gpu):
                out = FamilyOutcome(fam.name, not_measured=f"skipped: {why}")
                out.slip = {"status": "skipped", "reason": "not measured on this GPU"}
            elif self.dead:
                out = FamilyOutcome(fam.name, error=f"context: not measured, {self.dead}; rerun this family in a new process",
                                    crashed=self._carried(fam))  # kept for the next rerun
                out.slip = {"status": "skipped", "reason": "the CUDA context was lost earlier in this process"}
            else:
                out = self._watched(fam)
            out.set = fam.set
            if out.slip.get("status") != "pending" and not (self.config.repeat and out.record is not None):
                self.inputs.release(fam)  # neither a slip nor a repeat will read them
            with self._hung_lock:
                if self.hung == fam.name and not out.error.startswith("hung:"):
                    return self.outcomes[fam.name]  # the watchdog recorded it first
                self.outcomes[fam.name] = out
                self._write_summary(out)
            s = out.summary()
            log.info("%s done in %.1f s: winner %s, ratio %s, kept %s, noisy %s, slip %s%s", fam.name, sum(out.seconds.values()),
                     s["winner"], s["ratio"], s["kept"], s["noisy"], s["slip"], f"; ERROR {out.error}" if out.error else "")
            if out.error.startswith("hung:"):
                self._exit_hung(out)
            elif out.key_path is not None and self.config.partial_archive:
                try:
                    write_partial(Path(self.config.out_root))
                except OSError as exc:
                    log.warning("could not refresh the partial archive: %s", exc)
        return self.outcomes[fam.name]

    def select(self, families: Sequence[Family]) -> None:
        """Write the selected families (reports/measure/selected.json), so that after a hang
        the script's rerun covers every family this process never reached."""
        path = Path(self.config.out_root) / "reports" / "measure" / "selected.json"
        names = [f.name for f in families]
        self.selected = tuple(families)
        try:
            if not path.is_file() or json.loads(path.read_text()).get("families") != names:
                write_json_atomic(path, {"gpu": self.slug, "families": names})
        except (OSError, ValueError) as exc:
            log.warning("could not write %s: %s", path, exc)

    def _carried(self, fam: Family) -> dict[str, dict[str, str]]:
        """The earlier process's crashed wrong variants of `fam` whose source is still the one that crashed."""
        wrong = {c.id: c for c in fam.wrong}
        return {cid: v for cid, v in self.carried.get(fam.name, {}).items()
                if cid in wrong and v.get("source_sha256") == source_sha256(wrong[cid])}

    def _watched(self, fam: Family) -> FamilyOutcome:
        """`_measure` under the per-family watchdog: a family still running after `watchdog_s`
        (a hang the bounded waits cannot see: a compile, the gate's synchronize) is recorded
        as hung and the process exits with HUNG."""
        limit = self.config.watchdog_s
        if not limit:
            return self._measure(fam)
        timer = threading.Timer(limit, self._watchdog_fired, (fam, limit))
        timer.daemon = True
        timer.start()
        try:
            return self._measure(fam)
        finally:
            timer.cancel()

    def _watchdog_fired(self, fam: Family, limit: float) -> None:
        with self._hung_lock:
            if fam.name in self.outcomes:
                return
            out = FamilyOutcome(fam.name, set=fam.set, error=f"hung: {fam.name} was still running after its watchdog of {limit:g} s "
                                f"(--measure-watchdog-s); the remaining families are measured in a new process")
            out.slip = {"status": "skipped", "reason": "the family hung"}
            self.hung = fam.name
            self.outcomes[fam.name] = out
            self._write_summary(out)
        log.error("%s", out.error)
        self._exit_hung(out)

    def _exit_hung(self, out: FamilyOutcome) -> None:
        """A hung launch keeps the GPU busy (every later synchronize would wait for it): leave now."""
        self.hung = self.hung or out.family
        self.dead = self.dead or f"{out.family} hung"
        if self.config.partial_archive:
            try:
                write_partial(Path(self.config.out_root))
            except OSError as exc:
                log.warning("could not refresh the partial archive: %s", exc)
        for h in logging.getLogger().handlers:
            try:
                h.flush()
            except Exception:
                pass
        sys.stdout.flush()
        sys.stderr.flush()
        self.exit(HUNG)

    def _check_context(self, where: str) -> None:
        """Raise ContextLost (and remember it) when the CUDA context no longer works."""
        if self.health is None or self.dead:
            return
        why = self.health()
        if why:
            self.dead = f"CUDA context lost at {where}: {why}"
            raise ContextLost(self.dead)

    def slip_order(self, families: Sequence[Family]) -> list[str]:
        """The slip order, fixed once every selected family has its key: by `slip_priority`,
        then classic before hard, then the catalog's order."""
        if self._slip_order is None:
            sets = {name: i for i, name in enumerate(SETS)}
            summaries = {f.name: self._priority_summary(f) for f in families}
            index = {f.name: i for i, f in enumerate(families)}
            self._slip_order = sorted(index, key=lambda n: (slip_priority(summaries[n]), sets.get(summaries[n].get("set", ""), len(sets)), index[n]))
            log.info("slip order: %s", ", ".join(self._slip_order))
        return self._slip_order

    def _priority_summary(self, fam: Family) -> dict:
        out = self.measure(fam)
        if out.record is not None or not self.config.slips_only:
            return out.summary()
        prev = self.previous.get(fam.name)  # slips-only: what the earlier pass or the committed key says
        if prev is not None:
            return {**prev, "set": fam.set}
        for root in self.config.also_check:
            try:
                key = load_key(Path(root) / "families" / fam.name, self.slug)
            except ValueError:
                key = None
            if key is not None:
                return {"set": fam.set, "kept": key.kept, "winner": key.winner, "noisy": key.noisy, "fragile": key.fragile}
        return {"set": fam.set, "winner": "unknown"}

    def slip_slot(self, slot: int, families: Sequence[Family]) -> FamilyOutcome:
        """The slot-th slip in priority order (pytest runs one test per slot)."""
        order = self.slip_order(families)
        by_name = {f.name: f for f in families}
        return self.slip(by_name[order[slot]])

    def slip(self, fam: Family) -> FamilyOutcome:
        """Take the family's slip after its key, and record the result in the key and summary."""
        out = self.measure(fam)
        if fam.name in self.slipped or out.slip.get("status") != "pending":
            return out
        self.slipped.add(fam.name)
        t0 = self.clock()
        ran = False
        try:
            # ncu profiles a new process, so a slip is still taken after this process's context died.
            extra = self._slip_input_seconds(out)
            plan = self.slip_budget.decide(extra_s=extra)
            if not plan.start:
                out.slip = {"status": "skipped", "reason": f"{plan.reason}; take it later with scripts/measure-gpu.sh --slips-only "
                            f"(or pytest -m measure --measure-slips-only --measure-families {fam.name})"}
            else:
                ran = True
                if out.inputs is not None:
                    r = self.capture(fam, self.slug, self.slip_budget, self._slip_name(fam), inputs=out.inputs)  # type: ignore[misc]
                else:
                    r = self.capture(fam, self.slug, self.slip_budget, self._slip_name(fam))  # type: ignore[misc]
                out.slip = {"status": r.status, "reason": r.reason, "files": [self._rel(f) for f in r.files]}
                if r.status == "skipped" and not r.files:
                    ran = False  # nothing was started (no ncu, a profiler known unusable, no time)
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
        if ran:
            self.slip_budget.record(out.seconds["slip"], extra_s=extra)
        if not self.config.repeat:
            self.inputs.release(fam)
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

    @staticmethod
    def _slip_input_seconds(out: FamilyOutcome) -> float:
        """What ncu's child spends drawing the inputs: nothing when it loads the key's file, else this
        family's own measured draw (unknown, 0, in a slips-only pass: the slip's base plan covers it)."""
        if out.inputs is None or out.inputs.path is not None:
            return 0.0
        return out.inputs.seconds

    def _slip_name(self, fam: Family) -> str | None:
        """None (the family's own name) unless a slip of it exists in the output or a checked root:
        then a stamped name, so the new slip lands beside the old one."""
        roots = (Path(self.config.out_root), *map(Path, self.config.also_check))
        if any((r / "slips" / self.slug / f"{fam.name}{ext}").exists() for r in roots for ext in (".csv", ".ncu-rep", ".json")):
            return f"{fam.name}.{stamp()}"
        return None

    def _slips_only(self, fam: Family) -> FamilyOutcome:
        """No key: the slip alone, unless an earlier pass or the repository already has it."""
        out = FamilyOutcome(fam.name, not_measured="slips-only: the key is not measured in this pass")
        prev = self.previous.get(fam.name, {})
        have = [r for r in self.config.also_check if (Path(r) / "slips" / self.slug / f"{fam.name}.csv").is_file()]
        if not self.config.ncu:
            out.slip = {"status": "skipped", "reason": "--no-ncu was given"}
        elif self.capture is None:
            out.slip = {"status": "skipped", "reason": "no slip capture configured"}
        elif prev.get("slip") == "captured" and fam.name not in self.config.named:
            out.slip = {"status": "skipped", "reason": f"already captured by the earlier pass in {self.config.previous}"}
        elif have and fam.name not in self.config.named:
            out.slip = {"status": "skipped", "reason": f"already in {have[0]}/slips/{self.slug}/{fam.name}.csv; name it in "
                        "--measure-families to take another beside it"}
        else:
            out.slip = {"status": "pending", "reason": SLIP_PENDING}
        return out

    # ------------------------------------------------------------------ repeat

    def repeat_order(self, families: Sequence[Family]) -> list[str]:
        """Every selected family in a new random order (seed `repeat_seed`, recorded in each repeat)."""
        if self._repeat_order is None:
            names = [f.name for f in families]
            random.Random(self.repeat_seed).shuffle(names)
            self._repeat_order = names
        return self._repeat_order

    def repeat_slot(self, slot: int, families: Sequence[Family]) -> dict:
        by_name = {f.name: f for f in families}
        return self.repeat(by_name[self.repeat_order(families)[slot]])

    def repeat(self, fam: Family) -> dict:
        """Time a keyed family once more (the key's inputs, a new block order), write the result beside
        its key as `<gpu>.repeat.json`, and say whether the winner is the same. Keys only: the
        first pass's gate verdicts are reused."""
        if fam.name in self.repeats:
            return self.repeats[fam.name]
        out = self.measure(fam)
        first = out.ranking.ranking.winner if out.ranking else None
        res: dict = {"family": fam.name, "first_winner": first, "first_key": self._rel(out.key_path) if out.key_path else None}
        if not self.config.repeat:
            res.update(status="skipped", reason="no repeat was asked for (--measure-repeat)")
        elif out.record is None or out.blocks is None:
            res.update(status="skipped", reason=f"no key in this pass ({out.error or out.not_measured})")
        elif self.dead:
            res.update(status="skipped", reason=f"the CUDA context was lost: {self.dead}")
        else:
            plan = self.repeat_budget.decide(planned_s=out.seconds.get("timing", 0.0) or None)
            if not plan.start:
                res.update(status="skipped", reason=plan.reason)
            else:
                t0 = self.clock()
                try:
                    res.update(self._repeat(fam, out))
                except ContextLost as exc:
                    res.update(status="failed", reason=f"context: {exc}")
                except Exception as exc:
                    res.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
                    log.error("%s repeat failed:\n%s", fam.name, traceback.format_exc())
                finally:
                    if self.after_family and not self.dead:
                        try:
                            self.after_family()
                        except Exception as exc:
                            log.warning("%s: cleanup after the repeat failed: %s", fam.name, exc)
                res["seconds"] = self.clock() - t0
                self.repeat_budget.record(res["seconds"])
        self.inputs.release(fam)  # the repeat is the inputs' last user
        res["differs"] = bool(res.get("winner")) and res.get("winner") != first
        self.repeats[fam.name] = res
        path = Path(self.config.out_root) / "reports" / "measure" / self.slug / "repeat" / f"{fam.name}.json"
        try:
            write_json_atomic(path, res)
        except OSError as exc:
            log.warning("could not write %s: %s", path, exc)
        log.info("%s repeat: %s %s%s", fam.name, res["status"], res.get("reason", ""),
                 f"; WINNER DIFFERS: first {first}, repeat {res.get('winner')}" if res["differs"] else "")
        return res

    def _repeat(self, fam: Family, first: FamilyOutcome) -> dict:
        assert first.record is not None
        timed = [c for c in fam.candidates if first.gate[c.id].passed]
        shape = fam.shapes("timing")[0]
        input_seed, block_seed = first.record["protocol"]["input_seed"], self.new_seed()  # the key's inputs, drawn once
        t0 = time.monotonic()
        host, inp = self.inputs.get(fam, shape, input_seed)
        rep_digest = inp.sha256
        timer = self.timer_factory(fam, shape, host, timed)
        del host  # only the timer keeps the host copy of the inputs
        try:
            blocks = run_blocks(timer, [c.id for c in timed], block_seed, blocks=self.config.blocks)
        finally:
            close = getattr(timer, "close", None)
            if close:
                close()
        if blocks.failures:
            self._check_context(f"{fam.name} while timing its repeat ({', '.join(sorted(blocks.failures))} failed)")
        rep = FamilyOutcome(fam.name, gate=first.gate, gate_problems=first.gate_problems, blocks=blocks, set=fam.set, inputs=inp)
        rep.seconds["timing"] = time.monotonic() - t0
        rep.ranking, rep.confidence = self._rank(fam, rep, shape)
        rep.slip = {"status": "skipped", "reason": f"a repeat: the slip is the first pass's ({first.slip.get('status')})"}
        rec = self.record(fam, rep, shape, input_seed, rep_digest)
        rec["pass"] = "repeat"
        rec["repeat_of"] = self._rel(first.key_path) if first.key_path else None
        rec["repeat_seed"] = self.repeat_seed
        rec["repeat_inputs"] = "the key's timing inputs (the same seed, sha256 checked), a new block seed and order"
        rec["repeat_order"] = self._repeat_order
        path = write_key(Path(self.config.out_root) / "families" / fam.name, self.slug, rec, replace=self.config.replace,
                         also_check=self._family_roots(fam), kind="repeat")
        rk = rep.ranking.ranking
        return {"status": "measured", "reason": "", "winner": rk.winner, "runner_up": rk.runner_up, "ratio": rk.ratio,
                "kept": rk.kept, "fragile": rep.confidence.fragile if rep.confidence else False,
                "first_ratio": first.ranking.ranking.ratio if first.ranking else None,
                "first_kept": first.ranking.ranking.kept if first.ranking else None, "key": self._rel(path)}

    def _family_roots(self, fam: Family) -> list[Path]:
        return [Path(r) / "families" / fam.name for r in self.config.also_check]

    # ------------------------------------------------------------------ steps

    def _measure(self, fam: Family) -> FamilyOutcome:
        out = FamilyOutcome(fam.name)
        step = "gate"
        try:
            t0 = time.monotonic()
            seeds = tuple(self.seeds(self.config.gate_seeds))
            carried = self._carried(fam)
            for cand in fam.all_candidates:
                if cand.id in carried:
                    out.crashed[cand.id] = carried[cand.id]
                    out.gate[cand.id] = GateResult(fam.name, cand.id, cand.role, False, CARRIED + carried[cand.id]["reason"], (),
                                                   tuple(fam.shapes("gate")), "an earlier process of this pass")
                elif self.isolate is not None and runs_apart(cand):
                    out.gate[cand.id] = self.isolate(fam, cand, seeds)  # its fault kills only the child's context
                else:
                    out.gate[cand.id] = gate_candidate(fam, cand, self.executor, seeds)
                log.info("%s/%s gate: %s %s", fam.name, cand.id, "pass" if out.gate[cand.id].passed else "FAIL", out.gate[cand.id].reason)
                if not out.gate[cand.id].passed and cand.id not in carried:  # a crash may have killed the context
                    try:
                        self._check_context(f"{fam.name}/{cand.id} in the gate")
                    except ContextLost as exc:
                        if cand.role == "wrong":  # rejected all the same; the family is gated again in a new process
                            out.crashed[cand.id] = {"reason": f"{out.gate[cand.id].reason}; {exc}", "source_sha256": source_sha256(cand)}
                            out.rerun_gate = True
                        raise
            out.gate_problems = gate_problems(out.gate)
            out.seconds["gate"] = time.monotonic() - t0

            step = "timing"
            t0 = time.monotonic()
            timed = [c for c in fam.candidates if out.gate[c.id].passed]
            shape = fam.shapes("timing")[0]
            input_seed = self.new_seed()
            block_seed = self.new_seed()
            host, out.inputs = self.inputs.get(fam, shape, input_seed)  # drawn once: the slip and the repeat reuse them
            digest = out.inputs.sha256
            out.seconds["inputs"] = out.inputs.seconds
            timer = self.timer_factory(fam, shape, host, timed)
            del host  # only the timer keeps the host copy of the inputs, as before the digest
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
            out.ranking, out.confidence = self._rank(fam, out, shape)

            if not self.config.ncu:
                out.slip = {"status": "skipped", "reason": "--no-ncu was given"}
            elif self.config.ncu_unusable:
                out.slip = {"status": "skipped", "reason": f"the preflight found the profiler unusable: {self.config.ncu_unusable}"}
            elif self.capture is None:
                out.slip = {"status": "skipped", "reason": "no slip capture configured"}
            else:
                out.slip = {"status": "pending", "reason": SLIP_PENDING}

            step = "key"
            out.record = self.record(fam, out, shape, input_seed, digest)
            out.key_path = write_key(Path(self.config.out_root) / "families" / fam.name, self.slug, out.record,
                                     replace=self.config.replace, also_check=self._family_roots(fam))
        except ContextLost as exc:
            out.error = f"context: {exc}"
            if out.rerun_gate:
                out.error += "; the family is gated again in a new process, with this wrong variant's rejection carried"
            out.slip = {"status": "skipped", "reason": "the CUDA context was lost"}
            log.error("%s: %s; the remaining families are not measured in this process", fam.name, exc)
        except LaunchHung as exc:
            out.error = f"hung: {exc}"
            out.slip = {"status": "skipped", "reason": "the family hung"}
            self.dead = f"{fam.name} hung at {step}"
            log.error("%s hung at %s: %s; the process exits, the rest are measured in a new one", fam.name, step, exc)
        except Exception as exc:  # fail soft: the family's error is recorded and the pass moves on
            out.error = f"{step}: {type(exc).__name__}: {exc}"
            if out.key_path is None:
                out.slip = {"status": "skipped", "reason": f"no key: the pass failed at {step}"}
            log.error("%s failed at %s:\n%s", fam.name, step, traceback.format_exc())
            try:
                self._check_context(f"{fam.name} after the {step} step failed")
            except ContextLost as lost:
                out.error += f"; {lost}"
        finally:
            if self.after_family and not out.error.startswith("hung:"):  # freeing synchronizes: it would wait on the hang
                try:
                    self.after_family()
                except Exception as exc:
                    out.error = out.error or f"cleanup: {type(exc).__name__}: {exc}"
        return out

    def _rank(self, fam: Family, out: FamilyOutcome, shape: Mapping[str, Number]) -> tuple[FamilyRanking, Confidence]:
        """The ranking and its confidence statement from `out`'s gate verdicts and blocks."""
        assert out.blocks is not None
        timed = [c for c in fam.candidates if out.gate[c.id].passed]
        not_timed = {c.id: f"gated out: {out.gate[c.id].reason}" for c in fam.rewrites if not out.gate[c.id].passed}
        not_timed.update({cid: f"crashed while timed: {why}" for cid, why in out.blocks.failures.items() if cid in {r.id for r in fam.rewrites}})
        wrong_passed = [p for p in out.gate_problems if p.startswith("wrong variant")]
        start_failed = [p for p in out.gate_problems if p.startswith("start ")]
        problem = "; ".join(wrong_passed + start_failed)
        fr = rank_family(
            fam.start.id, [r.id for r in fam.rewrites], {c.id: out.blocks.kept(c.id) for c in timed if c.id not in out.blocks.failures},
            not_timed=not_timed, gate_problem=problem, bytes_moved=bytes_moved(fam, shape),
            copy_bytes_per_s=out.blocks.copy_bytes_per_s, memory_bound=fam.bound == "memory",
        )
        rewrites = [r.id for r in fam.rewrites]
        by_block = {r: out.blocks.kept_by_block(r) for r in rewrites if r in fr.stats and r not in not_timed}
        rk = fr.ranking
        return fr, assess(by_block, rewrites, rk.winner, rk.runner_up, rk.kept)

    def _rel(self, path: str | Path) -> str:
        try:
            return str(Path(path).resolve().relative_to(Path(self.config.out_root).resolve()))
        except ValueError:
            return str(path)

    def record(self, fam: Family, out: FamilyOutcome, shape: Mapping[str, Number], input_seed: int,
               inputs_digest: str = "") -> dict:
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
                **self._cubin_fields(c),
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
            "set": fam.set,
            "provenance": self.provenance,
            "protocol": {**br.protocol_record(), "input_seed": input_seed},
            "inputs": inputs_record(fam, list(dict.fromkeys(s for r in out.gate.values() for s in r.seeds)),
                                    input_seed, input_seed if out.inputs is not None else LAUNCH_SEED, inputs_digest),
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
            "ranking": {**fr.ranking.as_record(), **self._confidence_fields(out)},
            "slip": out.slip,
            "seconds": out.seconds,
        }

    def _cubin_fields(self, cand: Candidate) -> dict:
        """The sha256 of the cubin the GPU loaded for `cand` (compile_source's, for this device's arch)."""
        get = getattr(self.executor, "cubin", None)
        if get is None:
            return {"cubin_sha256": unavailable(f"the executor {getattr(self.executor, 'name', '?')!r} loads no cubin")}
        try:
            cubin = get(cand)
        except Exception as exc:
            return {"cubin_sha256": unavailable(f"{type(exc).__name__}: {exc}")}
        return {"cubin_sha256": cubin.sha256, "cubin_arch": cubin.arch, "cubin_bytes": cubin.bytes}

    @staticmethod
    def _confidence_fields(out: FamilyOutcome) -> dict:
        c = out.confidence
        if c is None:
            return {"fragile": False, "fragile_reason": "", "confidence": None}
        return {"fragile": c.fragile, "fragile_reason": c.fragile_reason, "confidence": c.as_record()}

    def _write_summary(self, out: FamilyOutcome) -> None:
        """One small file per family for the script's closing table (never inside families/)."""
        path = Path(self.config.out_root) / "reports" / "measure" / self.slug / f"{out.family}.json"
        try:
            write_json_atomic(path, out.summary())
        except OSError as exc:
            log.warning("could not write %s: %s", path, exc)


ERROR_PREFIXES = ("gate:", "timing:", "ranking:", "slip:", "key:", "context:", "hung:")
SUMMARY_HEADERS = ["family", "set", "winner", "ratio", "95% interval", "blocks agree", "kept", "spread", "slip"]


def summary_rows(summaries: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """The closing table: family, set, winner, ratio, interval, block agreement, kept (fragile, noisy), spread, slip."""
    rows = []
    for s in summaries:
        ratio = s.get("ratio")
        spread = s.get("max_spread")
        iv = s.get("interval")
        kept = "error" if s.get("reason", "").startswith(ERROR_PREFIXES) else ("yes" if s.get("kept") else "no")
        if s.get("not_measured"):
            kept = "not measured"
        if s.get("fragile"):
            kept += " (fragile)"
        if s.get("noisy"):
            kept += " (noisy)"
        agree = s.get("blocks_agree")
        rows.append([s["family"], s.get("set") or "-", s.get("winner") or "-", f"{ratio:.3f}" if ratio else "-",
                     f"{iv[0]:.3f}-{iv[1]:.3f}" if iv else "-", "-" if agree is None else ("yes" if agree else "NO"), kept,
                     f"{spread:.3f}" if spread is not None else "-", s.get("slip") or "-"])
    return rows


def load_previous(out_dir: Path, gpu: str) -> dict[str, dict]:
    """An earlier pass's per-family summaries (`<out>/reports/measure/<gpu>/*.json`), by family."""
    found: dict[str, dict] = {}
    for path in sorted((Path(out_dir) / "reports" / "measure" / gpu).glob("*.json")):
        try:
            data = json.loads(path.read_text())
            found[str(data["family"])] = data
        except (OSError, ValueError, KeyError) as exc:
            log.warning("%s: not a measure summary (%s); ignored", path, exc)
    return found


def slip_options(fam: Family) -> dict[str, Any]:
    """What a family adds to its own slip's capture: a data group member's `[slip]` extra
    metrics and cue rows (checked in the export), and its `[data]`, recorded beside the slip."""
    if fam.slip is None:
        return {}
    return {"extra_metrics": tuple(fam.slip.extra_metrics), "cue_metrics": tuple(fam.slip.cue_metrics),
            "data": dict(fam.data)}


def candidate_compile(arch: str) -> dict:
    """How every candidate's binary was built: plugins.family.compile.compile_source (CI's compile, its
    options exactly) for this device's arch, loaded as that cubin, so CuPy adds nothing."""
    from plugins.family.compile import NVRTC_OPTIONS, include_options, nvrtc_version
    from plugins.measure.provenance import field

    return {"by": "plugins.family.compile.compile_source(source, arch, candidate file name)", "arch": arch,
            "options": [*NVRTC_OPTIONS, *include_options(), f"-arch={arch}", "-Xptxas=-v"],
            "nvrtc": field(nvrtc_version),  # cuda-bindings' NVRTC: CI's pin is requirements.txt's nvidia-cuda-nvrtc
            "loaded": "cupy.RawModule(path=<cubin_sha256>.cubin): the bytes compile_source returned, read back and checked",
            "cubin_sha256": "per candidate: candidates.<id>.cubin_sha256"}


def slip_inputs(inputs: TimingInputs | None) -> dict[str, Any]:
    """The key's timing inputs for ncu's child: its seed, and the file and sha256 where one was written."""
    if inputs is None:
        return {}
    if inputs.path is None:
        return {"seed": inputs.seed}
    return {"seed": inputs.seed, "inputs": inputs.path, "inputs_sha256": inputs.sha256}


def gpu_session(config: MeasureConfig, executor: Any) -> MeasureSession:
    """The real session: CUDA-event timer, provenance read from the device, ncu slips."""
    from plugins.measure.capture import METRICS, REQUIRED_METRICS, ProfilerState, capture_slip, find_ncu, ncu_version
    from plugins.measure.device import full_compile_options
    from plugins.measure.gate_child import child_timeout, gate_isolated
    from plugins.measure.provenance import CupyProbe, gpu_record, software_record
    from plugins.measure.timing import CudaEventTimer

    probe = CupyProbe(executor.device_index)
    ncu = find_ncu()
    gpu = gpu_record(probe)
    version = ncu_version(ncu)
    prov = software_record(probe, config.repo, config.command, version,
                           compile_options=list(executor.options), allow_unknown_commit=config.allow_unknown_commit)
    prov["compile_options_full"] = {**full_compile_options(executor.cp, executor.options),
                                    "used_for": "the pass's own kernels (the L2 flush) only; candidates: candidate_compile"}
    prov["candidate_compile"] = candidate_compile(executor.arch)
    profiler = ProfilerState(unusable=config.ncu_unusable,
                             metrics=tuple(REQUIRED_METRICS) if config.ncu_required_metrics else tuple(METRICS),
                             metric_rejected="the preflight saw the optional metrics refused" if config.ncu_required_metrics else "",
                             version=version)

    def timer_factory(fam: Family, shape: Mapping[str, Number], host: Mapping[str, np.ndarray], cands: Sequence[Candidate]) -> Timer:
        return CudaEventTimer(executor, fam, shape, host, cands)

    def capture(fam: Family, gpu_slug: str, budget: StepBudget | None = None, name: str | None = None,
                inputs: TimingInputs | None = None) -> Any:
        try:
            executor.free()  # the profiled process allocates its own inputs
        except Exception as exc:  # a dead context here does not stop ncu's own process
            log.warning("could not free device memory before %s's slip: %s", fam.name, exc)
        kernels = [launch.kernel for launch in fam.start.launches]
        try:
            cubin = executor.cubin_sha256(fam.start)  # the child checks it runs this very binary
        except Exception as exc:
            log.warning("%s: no cubin sha256 for the slip (%s); the profiled process compiles without the check", fam.name, exc)
            cubin = ""
        return capture_slip(fam.name, kernels, gpu_slug, config.out_root, config.repo, config.families_root, ncu=ncu,
                            state=profiler, budget=budget, name=name, **slip_options(fam), **slip_inputs(inputs),
                            cubin_sha256=cubin)

    def isolate(fam: Family, cand: Candidate, seeds: Sequence[int]) -> GateResult:
        return gate_isolated(fam, cand, seeds, families_root=Path(config.families_root).resolve(),
                             device_index=executor.device_index, repo=Path(config.repo).resolve(),
                             timeout_s=child_timeout(config.watchdog_s))

    return MeasureSession(config, executor, timer_factory, gpu, prov, capture=capture, after_family=executor.free,
                          health=executor.context_error, isolate=isolate)


REFUSED = "refused: "
UNSUPPORTED = "unsupported GPU: "  # one message, then the pass stops (no family can run)


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
        """The session, or None and why: a reason starting with REFUSED is an error, any other a skip."""
        if not self.selected:
            return None, "the GPU measure pass runs only when asked: run pytest -m measure"
        if self._session is None:
            ex, reason = self.executor()
            if ex is None:
                return None, reason
            if self.in_worker:
                return None, "the GPU measure pass runs in one process: run pytest -m measure without -n (xdist)"
            from plugins.measure.provenance import ProvenanceRefused

            from plugins.measure.targets import device_of, unsupported

            if why := unsupported(device_of(ex)):
                self._reason = f"{UNSUPPORTED}{why}"
                return None, self._reason
            try:
                self._session = gpu_session(self.config, ex)
            except ProvenanceRefused as exc:
                self._reason = f"{REFUSED}{exc}"
                return None, self._reason
            except Exception as exc:
                self._reason = f"opening the measure session failed: {type(exc).__name__}: {exc}"
                return None, self._reason
        return self._session, ""

    def summary_lines(self) -> list[str]:
        if self._session is None or not self._session.outcomes:
            return []
        from tabulate import tabulate

        from plugins.measure.targets import coverage

        rows = summary_rows([o.summary() for o in self._session.outcomes.values()])
        lines = tabulate(rows, headers=SUMMARY_HEADERS, disable_numparse=True).splitlines()
        if chosen := getattr(self._session, "selected", ()):
            lines += ["", *coverage(chosen, self._session.gpu).lines()]
        return lines


def state_from_options(root: Path, getoption: Callable[[str], Any], argv: Sequence[str], in_worker: bool,
                       now: Callable[[], float] = time.monotonic) -> MeasureState:
    """MeasureState from pytest's option values (`getoption` is config.getoption)."""
    import shlex
    import sys

    from plugins.measure.budget import deadline_from_budget

    out = getoption("measure_out")
    fams = getoption("measure_families")
    head = ["python3", "-m", "pytest"] if argv and argv[0].endswith("__main__.py") else [Path(argv[0]).name if argv else "pytest"]
    budget = getoption("measure_budget_s")
    families_root = (root / getoption("families_root")).resolve()
    out_root = Path(out).resolve() if out else root
    families = tuple(f.strip() for f in fams.split(",") if f.strip()) if fams else None
    previous = getoption("measure_previous")
    cfg = MeasureConfig(
        deadline=deadline_from_budget(None if budget is None else float(budget), now()),
        out_root=out_root,
        repo=root,
        families_root=families_root,
        command=shlex.join([*head, *argv[1:]]) + f"  # python: {sys.executable}",
        replace=bool(getoption("measure_replace")),
        blocks=int(getoption("measure_blocks")),
        ncu=not getoption("no_ncu"),
        slips_only=bool(getoption("measure_slips_only")),
        repeat=bool(getoption("measure_repeat")),
        also_check=(families_root.parent,) if out_root != root.resolve() and out_root != families_root.parent else (),
        named=families or (),
        previous=Path(previous).resolve() if previous else None,
        ncu_unusable=getoption("measure_ncu_unusable") or "",
        ncu_required_metrics=getoption("measure_ncu_metrics") == "required",
        allow_unknown_commit=bool(getoption("measure_allow_unknown_commit")),
        watchdog_s=_watchdog(getoption("measure_watchdog_s")),
        rerun=bool(getoption("measure_rerun")),
        partial_archive=out_root != root.resolve() and root.resolve() not in out_root.parents,
        # the timing inputs' files: under the output folder, never inside the repository
        inputs_root=None if out_root != root.resolve() and root.resolve() not in out_root.parents else
        Path(tempfile.gettempdir()) / "sparktrace-timing-inputs",
    )
    return MeasureState(cfg, families, getoption("markexpr") or "", in_worker)


def _watchdog(value: Any) -> float | None:
    """--measure-watchdog-s: None (not given) is WATCHDOG_S, 0 is no watchdog."""
    if value is None:
        return WATCHDOG_S
    return float(value) or None


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


def budget_seconds(text: str) -> float:
    """argparse type for --measure-budget-s: finite and >= 0 (0 means no slips and no repeat)."""
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds >= 0 (0: no slips and no repeat; leave it out for no limit)")
    return value
