"""Timing-size inputs drawn once per family and seed, for the key, the slip and the repeat.

Why: make_inputs at timing size takes seconds to tens of seconds on a small CPU
(about 23 s for fp8_gemv_b16 on 2 cores, 69 s for the three draws of every
family), and the key pass, ncu's child process and the repeat each drew them
again. The session draws them once, times the key on them, and writes the
input buffers to an .npz under the run's output folder (atomically, named by
family, seed and sha256). ncu's child (plugins.measure.launch_once --inputs)
and the repeat load that file and check its sha256 instead of drawing again.
Outputs are not stored: they are poisoned buffers, made again in no time.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

import numpy as np

from plugins.family.dtypes import np_dtype
from plugins.gate.compare import poisoned
from plugins.measure.archive import INPUTS_DIR  # under the output folder: never archived, removed with the loose files
from plugins.measure.provenance import inputs_sha256

if TYPE_CHECKING:
    from plugins.family.manifest import Family
    from plugins.family.plan import Number

log = logging.getLogger("sparktrace.inputs")

DISK_MARGIN_BYTES = 4 * 1024 ** 3  # an .npz is written only while this much disk stays free beside it


class InputsMismatch(RuntimeError):
    """A stored inputs file is not the inputs its name and the key say (changed, truncated, another family)."""


@dataclass(frozen=True)
class TimingInputs:
    """One family's timing inputs for one seed: their sha256, what drawing them took, and the file."""

    family: str
    seed: int
    sha256: str
    seconds: float  # make_inputs and the poisoned outputs, in this process (the slip budget plans from it)
    path: Path | None  # the .npz ncu's child and the repeat load; None: not written (why in `note`)
    note: str = ""


def input_names(fam: "Family") -> list[str]:
    return [b.name for b in fam.buffers if b.role == "input"]


def inputs_path(root: Path, family: str, seed: int, sha256: str) -> Path:
    return Path(root) / INPUTS_DIR / f"{family}.{seed}.{sha256[:16]}.npz"


def write_inputs(path: Path, fam: "Family", host: Mapping[str, np.ndarray]) -> None:
    """The input buffers as raw bytes (bfloat16 and e4m3 have no .npy dtype), written to a temp
    file beside `path` and renamed, so a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **{name: np.ascontiguousarray(host[name]).reshape(-1).view(np.uint8) for name in input_names(fam)})
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_inputs(path: Path, fam: "Family", shape: Mapping[str, "Number"], sha256: str) -> dict[str, np.ndarray]:
    """Every host buffer of one run: the inputs from `path` (their sha256 must be `sha256`),
    the other buffers poisoned, as plugins.gate.check.host_buffers makes them."""
    counts = fam.buffer_counts(shape)
    buffers: dict[str, np.ndarray] = {}
    try:
        with np.load(path, allow_pickle=False) as z:
            for name in input_names(fam):
                buffers[name] = z[name].view(np_dtype(fam.buffer(name).dtype))
    except (OSError, KeyError, ValueError) as exc:
        raise InputsMismatch(f"{path}: not {fam.name}'s timing inputs ({type(exc).__name__}: {exc}); "
                             "delete it, the pass draws them again") from exc
    for b in fam.buffers:
        if b.role == "input" and buffers[b.name].size != counts[b.name]:
            raise InputsMismatch(f"{path}: {b.name} holds {buffers[b.name].size} elements, {fam.name} at this shape needs "
                                 f"{counts[b.name]}; delete it, the pass draws them again")
        if b.role != "input":
            buffers[b.name] = poisoned(b.dtype, counts[b.name])
    got = inputs_sha256(buffers, input_names(fam))
    if got != sha256:
        raise InputsMismatch(f"{path}: the inputs' sha256 is {got}, the key's timing inputs are {sha256}: "
                             "this is not the data the key was timed on; delete it, the pass draws them again")
    return buffers


class InputStore:
    """Draws each (family, shape, seed) once in this process and keeps the latest in memory;
    every earlier one is on disk (when `root` is given and the disk has room), for ncu's
    child and the repeat. `make` is plugins.gate.check.host_buffers (a test counts its calls)."""

    def __init__(self, root: Path | None, make: Callable[["Family", Mapping[str, "Number"], int], dict[str, np.ndarray]],
                 clock: Callable[[], float] = time.monotonic, margin_bytes: int = DISK_MARGIN_BYTES):
        self.root = Path(root) if root is not None else None
        self.make = make
        self.clock = clock
        self.margin_bytes = margin_bytes
        self.made: dict[tuple, TimingInputs] = {}
        self._latest: tuple[tuple, dict[str, np.ndarray]] | None = None

    @staticmethod
    def _key(fam: "Family", shape: Mapping[str, "Number"], seed: int) -> tuple:
        return (fam.name, tuple(sorted(dict(shape).items())), int(seed))

    def get(self, fam: "Family", shape: Mapping[str, "Number"], seed: int) -> tuple[dict[str, np.ndarray], TimingInputs]:
        """The host buffers and their record: from memory, else from the .npz, else drawn (and stored)."""
        key = self._key(fam, shape, seed)
        if self._latest is not None and self._latest[0] == key:
            return self._latest[1], self.made[key]
        self._latest = None  # never two families' buffers at once
        rec = self.made.get(key)
        if rec is not None and rec.path is not None and rec.path.is_file():
            host = load_inputs(rec.path, fam, shape, rec.sha256)
        else:
            t0 = self.clock()
            host = self.make(fam, shape, seed)
            seconds = self.clock() - t0
            sha = inputs_sha256(host, input_names(fam))
            rec = TimingInputs(fam.name, int(seed), sha, seconds, *self._store(fam, host, seed, sha))
            self.made[key] = rec
        self._latest = (key, host)
        return host, rec

    def _store(self, fam: "Family", host: Mapping[str, np.ndarray], seed: int, sha: str) -> tuple[Path | None, str]:
        if self.root is None:
            return None, "no output folder to keep them in"
        path = inputs_path(self.root, fam.name, seed, sha)
        need = sum(np.asarray(host[n]).nbytes for n in input_names(fam))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            free = shutil.disk_usage(path.parent).free
            if free - need < self.margin_bytes:
                return None, f"not written: {need} B would leave under {self.margin_bytes} B free on {path.parent}"
            write_inputs(path, fam, host)
        except OSError as exc:
            log.warning("%s: could not keep the timing inputs in %s (%s); ncu's child and the repeat draw them again",
                        fam.name, path, exc)
            return None, f"not written: {type(exc).__name__}: {exc}"
        return path, ""

    def release(self, fam: "Family") -> None:
        """Forget a family's inputs and delete its files (its last user is done)."""
        for key in [k for k in self.made if k[0] == fam.name]:
            rec = self.made.pop(key)
            if rec.path is not None:
                rec.path.unlink(missing_ok=True)
        if self._latest is not None and self._latest[0][0] == fam.name:
            self._latest = None
