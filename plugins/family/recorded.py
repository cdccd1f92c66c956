"""The committed profile reports read back as a content-addressed record of binaries.

Why: nvdisasm costs about a second per cubin, whatever its size (most of a cold
suite's family stage), while a compile is a tenth of that. Each report row
(reports/profiles/<family>.json) records the sha256 of the code sections of the
cubin it was read from and the tools that read it, so a cubin compiled now with the same digest,
the same nvdisasm release and the same profiler code has exactly that profile:
the record is served instead of disassembling again. A changed source, option,
NVRTC or profiler changes the key and the binary is disassembled fresh. The
suite still disassembles a share of the binaries every session and compares
(tests/family/test_profiles.py), and SPARKTRACE_FRESH_SASS=1 turns the record off.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from plugins.family.sass import Counts, KernelProfile, Loop

FRESH_ENV = "SPARKTRACE_FRESH_SASS"
DIR_ENV = "SPARKTRACE_PROFILE_REPORTS"
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "reports" / "profiles"


@lru_cache(maxsize=1)
def profiler_digest() -> str:
    """sha256 of what turns SASS text into counts (plugins/family/sass.py), comments and
    docstrings left out: a change to the counting makes every record stale, a comment does not."""
    tree = ast.parse((Path(__file__).parent / "sass.py").read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body.pop(0)
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def code_digest(cubin: bytes) -> str:
    """sha256 of what `nvdisasm -c` reads from a cubin: its ELF flags (the target) and every
    executable section and relocation section, by name.

    Why not the whole file: NVRTC's automatic PCH leaves the symbol and string tables (and
    .nv.global.init) in an order that depends on what the process compiled before, while the
    code is the same (seen on moe_permute/bulk_smem). A digest that misses is always safe:
    the binary is disassembled fresh.
    """
    h = hashlib.sha256()
    for name, data in sorted(_code_sections(cubin)):
        h.update(len(name).to_bytes(8, "little") + name + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def _code_sections(cubin: bytes) -> list[tuple[bytes, bytes]]:
    """(name, bytes) of the SHF_EXECINSTR and .rel* sections of a 64-bit little-endian ELF, plus its e_flags."""
    if len(cubin) < 0x40 or cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        return [(b"<not an ELF64 LE>", cubin)]
    (flags,) = struct.unpack_from("<I", cubin, 0x30)
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_at = heads[shstrndx][4]
    out = [(b"<e_flags>", flags.to_bytes(4, "little"))]
    for name_off, kind, sh_flags, _addr, offset, size, *_ in heads:
        name = cubin[names_at + name_off: cubin.index(b"\0", names_at + name_off)]
        if sh_flags & 0x4 or name.startswith(b".rel"):
            out.append((name, cubin[offset: offset + size] if kind != 8 else size.to_bytes(8, "little")))
    return out


def enabled() -> bool:
    return os.environ.get(FRESH_ENV, "") in ("", "0")


def reports_dir() -> Path:
    return Path(os.environ.get(DIR_ENV) or DEFAULT_DIR)


def profiles_from_record(arch: str, kernels: Mapping[str, dict]) -> tuple[KernelProfile, ...]:
    """A report's {kernel: as_dict()} back into profiles, sorted by kernel as profile_text gives them."""
    out = []
    for kernel in sorted(kernels):
        rec = kernels[kernel]
        loops = tuple(Loop(int(lp["start"], 16), int(lp["end"], 16), int(lp["depth"]),
                           Counts(tuple(sorted((k, int(v)) for k, v in lp["counts"].items()))), lp["step"])
                      for lp in rec["loops"])
        out.append(KernelProfile(kernel, arch, Counts(tuple(sorted((k, int(v)) for k, v in rec["counts"].items()))), loops))
    return tuple(out)


@dataclass(frozen=True)
class Record:
    """Every recorded (arch, code_digest) -> {kernel: profile dict}, for one nvdisasm and profiler."""

    rows: Mapping[tuple[str, str], Mapping[str, dict]]

    def lookup(self, arch: str, cubin: bytes) -> tuple[KernelProfile, ...] | None:
        kernels = self.rows.get((arch, code_digest(cubin)))
        return None if kernels is None else profiles_from_record(arch, kernels)


def read_record(folder: Path, nvdisasm: str, profiler: str) -> Record:
    """The rows of every report in `folder` made by this nvdisasm release and this profiler;
    a report that does not parse, or another tool's, contributes nothing (it is then stale,
    which test_committed_report_describes_the_current_sources says)."""
    rows: dict[tuple[str, str], Mapping[str, dict]] = {}
    for path in sorted(Path(folder).glob("*.json")) if Path(folder).is_dir() else ():
        try:
            rep = json.loads(path.read_text())
            tools = rep["tools"]
            if tools.get("nvdisasm") != nvdisasm or tools.get("profiler") != profiler:
                continue
            for cand in rep["candidates"].values():
                for arch, sha in cand.get("code_sections_sha256", {}).items():
                    rows[(arch, sha)] = cand["targets"][arch]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return Record(rows)


@lru_cache(maxsize=1)
def committed(nvdisasm: str) -> Record:
    """The committed reports' record (read once per process), empty when turned off."""
    return read_record(reports_dir(), nvdisasm, profiler_digest()) if enabled() else Record({})
