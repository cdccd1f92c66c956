"""What a family's code needs of a GPU: the lowest compute capability, and why.

Why: a family declares what it needs, not a list of chips, so that every GPU
from sm_80 up measures what it can. The declaration is checked against the
code: a candidate that uses a feature above the family's declared compute
capability is one error naming the file and the line (the compile on each
target then checks the same thing in the binary).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# The lowest compute capability SparkTrace supports; sm_75 and older have no cp.async, no bf16.
FLOOR = (8, 0)


@dataclass(frozen=True)
class Feature:
    """A construct in CUDA C++ or inline PTX and the compute capability it needs."""

    what: str
    cc: tuple[int, int]
    pattern: re.Pattern[str]


def _f(what: str, cc: tuple[int, int], pattern: str) -> Feature:
    return Feature(what, cc, re.compile(pattern))


FEATURES: tuple[Feature, ...] = (
    _f("thread block clusters", (9, 0),
       r"__cluster_dims__|\bthis_cluster\s*\(|\bcluster_group\b|cudaLaunchAttributeClusterDimension"
       r"|\bbarrier\.cluster\b|\bmapa\b|::cluster\b|%cluster_"),
    _f("bulk async copies (TMA)", (9, 0), r"\bcp\.async\.bulk\b|\bcp\.reduce\.async\.bulk\b|\bCUtensorMap\b"),
    _f("programmatic dependent launch", (9, 0),
       r"\bgriddepcontrol\b|cudaGridDependencySynchronize|cudaTriggerProgrammaticLaunchCompletion"),
    _f("Hopper warp-group instructions (sm_90a only)", (9, 0), r"\bwgmma\b|\bsetmaxnreg\b"),
    # cuda_fp8.h emulates these in software below 8.9: a different binary from the one described.
    _f("hardware fp8 conversions", (8, 9),
       r"\b__nv_fp8\w*|__nv_cvt_\w*fp8\w*|\bcvt\.[a-z0-9.]*\be[45]m[23]x2\b|\bmma\.[a-z0-9.]*\be[45]m[23]\b"),
    _f("async copies (cp.async)", (8, 0), r"\bcp\.async\b|__pipeline_memcpy_async|\bmemcpy_async\b"),
    _f("warp reduce instructions (redux.sync)", (8, 0), r"\bredux\.sync\b|__reduce_(add|min|max|and|or|xor)_sync"),
    _f("bf16 arithmetic", (8, 0), r"__nv_bfloat16|\bbf16\b"),
)
# Arch-specific code runs on one compute capability only; no family may use it (every target must run it).
ARCH_SPECIFIC = ("Hopper warp-group instructions (sm_90a only)",)


@dataclass(frozen=True)
class Use:
    """One line of one source that needs a feature."""

    line: int
    feature: Feature
    text: str


def parse_cc(text: str) -> tuple[int, int]:
    """'9.0' -> (9, 0); anything else is a ValueError naming the expected form."""
    m = re.fullmatch(r"\s*(\d+)\.(\d)\s*", str(text))
    if not m:
        raise ValueError(f"{text!r} is not a compute capability; write it as major.minor, e.g. \"9.0\"")
    return int(m.group(1)), int(m.group(2))


def cc_text(cc: tuple[int, int]) -> str:
    return f"{cc[0]}.{cc[1]}"


def arch_cc(arch: str) -> tuple[int, int]:
    """'sm_86' -> (8, 6), 'sm_121' -> (12, 1), 'sm_90a' -> (9, 0)."""
    m = re.fullmatch(r"sm_(\d+)(\d)a?", arch)
    if not m:
        raise ValueError(f"{arch!r} is not an sm_XY target")
    return int(m.group(1)), int(m.group(2))


def _strip_comments(source: str) -> str:
    """Comments blanked out, line breaks kept, so line numbers still match the file."""
    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, source, flags=re.S)


def uses(source: str) -> tuple[Use, ...]:
    """Every line whose code (comments ignored) uses a listed feature, first feature per line."""
    out = []
    for n, line in enumerate(_strip_comments(source).splitlines(), 1):
        for f in FEATURES:
            if f.pattern.search(line):
                out.append(Use(n, f, line.strip()))
                break
    return tuple(out)


def highest(found: tuple[Use, ...]) -> Use | None:
    """The use needing the highest compute capability (the first such line)."""
    best = None
    for u in found:
        if best is None or u.feature.cc > best.feature.cc:
            best = u
    return best


def reason(needs: tuple[int, int], why: str, found_per_source: list[tuple[Use, ...]]) -> str:
    """Why a family needs `needs`: its declared `why`, else the features found at that level."""
    if why:
        return why
    whats = dict.fromkeys(u.feature.what for found in found_per_source for u in found if u.feature.cc == needs)
    return ", ".join(whats)
