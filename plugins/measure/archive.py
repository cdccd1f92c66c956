"""What comes back from the output folder of a lent GPU machine: the archives, the partial
archive refreshed after each key, and the cleaning that leaves only them.

Why its own module: the measure session refreshes the partial archive after each key,
and the pass's command (gpu_run) packs the final archives; both need the same packing
rules, and gpu_run reads the session's summaries, so the rules cannot live in either.
"""
from __future__ import annotations

import os
import re
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

KEEP_LOOSE = ("measure.log", "summary.txt")  # left beside the archives in OUT
INPUTS_DIR = ".timing-inputs"  # plugins.measure.inputs.INPUTS_DIR: never archived, removed with the loose files
PARTIAL = "measure-partial.tar.gz"  # keys and summaries so far, refreshed after each key (replaced by finish)


# --------------------------------------------------------------------------- the output folder


def out_dir_problem(out: Path, repo: Path) -> str:
    """Why OUT may not be used (it is cleaned at the end), or ""."""
    o, r = Path(out).resolve(), Path(repo).resolve()
    if o == r or r in o.parents:
        return (f"the output folder {o} is inside the repository {r}; the pass cleans its output folder down to the "
                "archives, so give a folder outside the repository (on the GPU machine: \"$OUT\")")
    if o in r.parents:
        return f"the output folder {o} holds the repository {r}; cleaning it would delete the repository; give another folder"
    return ""


# --------------------------------------------------------------------------- archives and the return limits


@dataclass(frozen=True)
class Limits:
    """What comes back from $OUT on the lent GPU machine (/work/.library/device/README.md)."""

    max_files: int = 8
    max_file_bytes: int = 16 * 1024 * 1024
    max_total_bytes: int = 64 * 1024 * 1024
    max_depth: int = 2  # folders below OUT: OUT/a/b/file comes back, OUT/a/b/c/file does not
    slack_bytes: int = 1024 * 1024  # kept under each limit for tar and gzip's own bytes

    @property
    def part_bytes(self) -> int:
        """Uncompressed bytes per archive: gzip can only grow incompressible input by a few bytes per 32 KiB."""
        return self.max_file_bytes - self.slack_bytes


NAME_OK = re.compile(r"^[A-Za-z0-9._-]+$")


def layout_problems(out: Path, limits: Limits = Limits()) -> list[str]:
    """Every way the files now in OUT break the return limits (empty when all will come back)."""
    out = Path(out)
    files = sorted(p for p in out.rglob("*") if p.is_file() or p.is_symlink())
    problems = []
    if len(files) > limits.max_files:
        problems.append(f"{len(files)} files in {out}, at most {limits.max_files} come back")
    total = 0
    for p in files:
        rel = p.relative_to(out)
        if p.is_symlink():
            problems.append(f"{rel} is a link; links do not come back")
            continue
        size = p.stat().st_size
        total += size
        if size > limits.max_file_bytes:
            problems.append(f"{rel} is {size} bytes, over the {limits.max_file_bytes} a file may have")
        if len(rel.parts) - 1 > limits.max_depth:
            problems.append(f"{rel} is {len(rel.parts) - 1} folders down, at most {limits.max_depth} come back")
        bad = [part for part in rel.parts if not NAME_OK.match(part)]
        if bad:
            problems.append(f"{rel}: {bad[0]!r} has characters other than letters, digits, '.', '_' and '-'")
    if total > limits.max_total_bytes:
        problems.append(f"{total} bytes in {out}, at most {limits.max_total_bytes} come back")
    return problems


@dataclass(frozen=True)
class ArchivePlan:
    archives: tuple[tuple[str, tuple[str, ...]], ...]  # (archive name, member paths relative to OUT)
    left_out: tuple[tuple[str, str], ...]  # (path, why)


def plan_archives(groups: Sequence[tuple[str, Sequence[tuple[str, int]]]], loose: Sequence[tuple[str, int]],
                  limits: Limits = Limits()) -> ArchivePlan:
    """Pack `groups` ((archive prefix, [(path, bytes)] in priority order)) into archives
    `<prefix>.tar.gz`, `<prefix>-2.tar.gz`, … so that with the `loose` files they stay
    within `limits`: each archive holds at most `limits.part_bytes` of input, there are at
    most max_files files in all, and the inputs plus a slack per archive total at most
    max_total_bytes. What does not fit is left out, with why; earlier groups and files win."""
    room_files = limits.max_files - len(loose)
    room_bytes = limits.max_total_bytes - sum(s for _, s in loose)
    parts: list[list] = []  # [name, [paths], input bytes]
    left: list[tuple[str, str]] = []

    def used() -> int:
        return sum(q[2] + limits.slack_bytes for q in parts)

    for prefix, files in groups:
        mine: list[list] = []
        for path, size in files:
            if size > limits.part_bytes:
                left.append((path, f"{size} bytes: larger than the {limits.part_bytes} one archive may hold"))
                continue
            target = next((q for q in mine if q[2] + size <= limits.part_bytes), None)
            if target is not None and used() + size <= room_bytes:
                target[1].append(path)
                target[2] += size
            elif len(parts) < room_files and used() + limits.slack_bytes + size <= room_bytes:
                q = [f"{prefix}.tar.gz" if not mine else f"{prefix}-{len(mine) + 1}.tar.gz", [path], size]
                parts.append(q)
                mine.append(q)
            else:
                left.append((path, f"no room left under the return limits ({limits.max_files} files, "
                                   f"{limits.max_total_bytes} bytes in all)"))
    return ArchivePlan(tuple((q[0], tuple(q[1])) for q in parts), tuple(left))


def _members(out: Path) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(everything but the raw reports, the .ncu-rep reports), relative to OUT; the loose files excluded."""
    keys, reps = [], []
    for p in sorted(Path(out).rglob("*")):
        if not p.is_file() or p.is_symlink():
            continue
        rel = p.relative_to(out).as_posix()
        if rel.split("/", 1)[0] == INPUTS_DIR:  # the timing inputs: large, and redrawn from the key's seed
            continue
        if rel in KEEP_LOOSE or (len(p.relative_to(out).parts) == 1 and p.name.startswith("measure-") and p.name.endswith(".tar.gz")):
            continue
        (reps if p.suffix == ".ncu-rep" else keys).append((rel, p.stat().st_size))
    return keys, reps


def _key_first(item: tuple[str, int]) -> tuple[int, str]:
    """Keys and summaries first, then the slips' CSV and JSON, then the rest (logs, benchmark JSON)."""
    path = item[0]
    rank = 0 if "/measurements/" in path or path.startswith("reports/") or path == "preflight.json" else \
        1 if path.startswith("slips/") else 2
    return rank, path


def archive_plan(out: Path, limits: Limits = Limits(), priority: Sequence[str] = ()) -> ArchivePlan:
    """What the archives of OUT will hold, and what is left out (nothing is written):
    keys first, then reports of families earlier in `priority`."""
    out = Path(out)
    keys, reps = _members(out)
    keys.sort(key=_key_first)
    rank = {name: i for i, name in enumerate(priority)}
    reps.sort(key=lambda f: (rank.get(Path(f[0]).name.split(".")[0], len(rank)), f[0]))
    loose = [(n, (out / n).stat().st_size) for n in KEEP_LOOSE if (out / n).is_file()]
    return plan_archives([("measure-keys", keys), ("measure-ncu-rep", reps)], loose, limits)


def write_archives(out: Path, limits: Limits = Limits(), priority: Sequence[str] = (),
                   plan: ArchivePlan | None = None) -> ArchivePlan:
    """Archive OUT's results next to the loose files, as `plan` (default: archive_plan) says."""
    out = Path(out)
    plan = plan or archive_plan(out, limits, priority)
    for old in out.glob("measure-*.tar.gz"):
        old.unlink()
    for name, members in plan.archives:
        tmp = out / f".{name}.part"
        with tarfile.open(tmp, "w:gz") as tar:
            for m in members:
                tar.add(out / m, arcname=m, recursive=False)
        tmp.replace(out / name)
    return plan


def write_partial(out: Path, limits: Limits = Limits()) -> ArchivePlan:
    """OUT/measure-partial.tar.gz: every key, summary and slip CSV/JSON written so far, so a
    run killed by the machine's time limit still returns each key it finished. Written
    atomically; finish's archives replace it."""
    out = Path(out)
    keys, _ = _members(out)
    keys = sorted((k for k in keys if _key_first(k)[0] < 2), key=_key_first)
    plan = plan_archives([(PARTIAL.removesuffix(".tar.gz"), keys)], [], Limits(
        max_files=1, max_file_bytes=limits.max_file_bytes, max_total_bytes=limits.max_file_bytes,
        max_depth=limits.max_depth, slack_bytes=limits.slack_bytes))
    if plan.archives:
        _, members = plan.archives[0]
        tmp = out / f".{PARTIAL}.part"
        with tarfile.open(tmp, "w:gz") as tar:
            for m in members:
                tar.add(out / m, arcname=m, recursive=False)
        tmp.replace(out / PARTIAL)
    return plan


def clean_loose(out: Path, repo: Path) -> None:
    """Leave only the archives and KEEP_LOOSE in OUT (never when OUT and the repository overlap)."""
    if why := out_dir_problem(out, repo):
        raise RuntimeError(why)
    for p in Path(out).iterdir():
        if p.name in KEEP_LOOSE or (p.name.startswith("measure-") and p.name.endswith(".tar.gz")):
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()


def cap_log(path: Path, limits: Limits = Limits()) -> None:
    """Keep a log under the per-file limit: its last bytes, with a line saying so."""
    if path.is_file() and path.stat().st_size > limits.part_bytes:
        with path.open("rb") as f:
            f.seek(-limits.part_bytes // 2, os.SEEK_END)
            tail = f.read()
        path.write_bytes(b"[log cut to its last bytes to fit the return limits]\n" + tail)


