"""The answer key on disk: one measurement file per family per GPU.

Why its own module: the measure stage writes these files on a GPU machine and
the item stage reads them anywhere else; neither imports the other.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from plugins.atomicio import write_json_atomic

SCHEMA = "sparktrace.measurement/1"
REQUIRED = ("schema", "family", "gpu", "provenance", "protocol", "candidates", "ranking", "gate")


class KeyFileError(ValueError):
    pass


def gpu_slug(name: str) -> str:
    """'NVIDIA H200' -> 'h200', 'NVIDIA GB10' -> 'gb10', 'NVIDIA H100 80GB HBM3' -> 'h100-80gb-hbm3'."""
    s = name.lower().replace("nvidia", "").replace("geforce", "")
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "gpu"


@dataclass(frozen=True)
class FamilyKey:
    """What the item stage needs from a measurement file."""

    family: str
    gpu: str
    path: Path
    kept: bool
    reason: str
    winner: str
    runner_up: str
    ratio: float
    noisy: bool
    times_ms: Mapping[str, float]  # candidate id -> median time of its launch plan
    git_commit: str
    date: str
    record: Mapping[str, Any]
    fragile: bool = False  # kept, but the interval on the runner-up/winner ratio reaches below the gate
    fragile_reason: str = ""


def key_path(family_dir: Path, gpu: str) -> Path:
    return Path(family_dir) / "measurements" / f"{gpu}.json"


def load_key(family_dir: Path, gpu: str) -> FamilyKey | None:
    """The family's key on `gpu`, or None when that GPU never measured it."""
    path = key_path(family_dir, gpu)
    if not path.is_file():
        return None
    try:
        rec = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise KeyFileError(f"{path}: not valid JSON ({exc}); re-run the measure pass or restore the file") from None
    missing = [k for k in REQUIRED if k not in rec]
    if missing:
        raise KeyFileError(f"{path}: missing fields {missing}; the file was not written by `pytest -m measure`")
    if rec["schema"] != SCHEMA:
        raise KeyFileError(f"{path}: field 'schema' is {rec['schema']!r}, expected {SCHEMA!r}")
    rk = rec["ranking"]
    return FamilyKey(
        family=rec["family"],
        gpu=gpu,
        path=path,
        kept=bool(rk.get("kept")),
        reason=str(rk.get("reason", "")),
        winner=str(rk.get("winner") or ""),
        runner_up=str(rk.get("runner_up") or ""),
        ratio=float(rk.get("ratio") or 0.0),
        noisy=bool(rk.get("noisy")),
        times_ms={k: float(v["time_ms"]) for k, v in rec["candidates"].items() if v.get("time_ms") is not None},
        git_commit=str(rec["provenance"].get("git_commit", "")),
        date=str(rec["provenance"].get("date", "")),
        record=rec,
        fragile=bool(rk.get("fragile")),
        fragile_reason=str(rk.get("fragile_reason", "")),
    )


def write_key(family_dir: Path, gpu: str, record: Mapping[str, Any], replace: bool = False,
              also_check: Sequence[Path] = (), kind: str = "") -> Path:
    """Write `<gpu>.json` (or `<gpu>.<kind>.json`); if that name exists, here or in any
    family directory of `also_check` (the repository, when the pass writes elsewhere:
    its archive is unpacked over the repository), and `replace` is False, write
    beside it as `<gpu>[.<kind>].<UTC timestamp>.json` so no run ever overwrites another."""
    stem = f"{gpu}.{kind}" if kind else gpu
    path = Path(family_dir) / "measurements" / f"{stem}.json"
    taken = [path, *(Path(d) / "measurements" / path.name for d in also_check)]
    if not replace and any(p.exists() for p in taken):
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        path = path.with_name(f"{stem}.{stamp}.json")
        n = 1
        while any((Path(d) / "measurements" / path.name).exists() for d in (family_dir, *also_check)):
            n += 1
            path = path.with_name(f"{stem}.{stamp}-{n}.json")
    write_json_atomic(path, dict(record))
    return path
