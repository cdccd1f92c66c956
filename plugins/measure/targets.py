"""Which families a GPU can measure, and why the others are out.

Why one module: the measure pass, the GPU gate, the end-of-run summary and the
documentation's GPU table (`python -m plugins.measure.targets`) must give the
same answer for a device's reported name and compute capability, and that
answer is testable on a machine with no GPU.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from plugins.family.compile import ARCHS
from plugins.family.manifest import Family
from plugins.family.needs import FLOOR, arch_cc, cc_text, parse_cc
from plugins.measure.keyfile import gpu_slug


def _cc(gpu: Mapping[str, Any]) -> tuple[int, int] | None:
    try:
        return parse_cc(str(gpu.get("compute_capability", "")))
    except ValueError:
        return None  # a GPU whose capability is unknown (a test fixture) is not judged


def _label(gpu: Mapping[str, Any]) -> str:
    return f"{gpu.get('name') or gpu.get('slug') or 'this GPU'}, {gpu.get('compute_capability')}"


def device_of(executor: Any) -> dict[str, str]:
    """The name and compute capability an executor's device reported ("" where it has none)."""
    return {"name": str(getattr(executor, "device_name", "")), "compute_capability": str(getattr(executor, "compute_capability", ""))}


def family_skip(fam: Family, gpu: Mapping[str, Any]) -> str:
    """Why this GPU cannot run the family ("" when it can), in the words the summary prints."""
    cc = _cc(gpu)
    if cc is None or fam.targets_gpu(cc_text(cc)):
        return ""
    return f"{fam.name} needs {fam.needs_text}; this GPU is {_label(gpu)}"


def unsupported(gpu: Mapping[str, Any]) -> str:
    """The one message for a GPU below every family (sm_75 and older), else ""."""
    cc = _cc(gpu)
    if cc is None or cc >= FLOOR:
        return ""
    return (f"this GPU is {_label(gpu)}: SparkTrace's families need compute capability {cc_text(FLOOR)} or newer "
            f"(cp.async, bf16, the sm_80+ targets {list(ARCHS)}), so nothing can be measured here; "
            "fix: run the measure pass on an A100, RTX 30xx or newer GPU (docs/gpu-run.md lists them)")


@dataclass(frozen=True)
class Coverage:
    """What one GPU measures of a set of families."""

    gpu: str
    compute_capability: str
    key: str
    runs: tuple[str, ...]
    out: Mapping[str, tuple[str, ...]]  # the need ("compute capability 9.0 (thread block clusters)") -> families

    def lines(self) -> list[str]:
        total = len(self.runs) + sum(len(v) for v in self.out.values())
        out = [f"{self.gpu} (compute capability {self.compute_capability}) can run {len(self.runs)} of {total} families"]
        out += [f"  {len(names)} out, they need {need}: {', '.join(names)}" for need, names in self.out.items()]
        return out


def coverage(families: Iterable[Family], gpu: Mapping[str, Any]) -> Coverage:
    runs, out = [], {}
    for f in families:
        if family_skip(f, gpu):
            out.setdefault(f.needs_text, []).append(f.name)
        else:
            runs.append(f.name)
    name = str(gpu.get("name", ""))
    return Coverage(name, str(gpu.get("compute_capability", "")), gpu_slug(name) if name else "",
                    tuple(runs), {k: tuple(v) for k, v in out.items()})


# Devices as they report themselves (cudaGetDeviceProperties name and major.minor):
# the GPUs researchers own, for the documentation's table. Facts of the hardware, not measurements.
DEVICES: tuple[tuple[str, str], ...] = (
    ("Tesla T4", "7.5"),
    ("NVIDIA A100-SXM4-80GB", "8.0"),
    ("NVIDIA GeForce RTX 3090", "8.6"),
    ("NVIDIA RTX A6000", "8.6"),
    ("NVIDIA GeForce RTX 4090", "8.9"),
    ("NVIDIA L40S", "8.9"),
    ("NVIDIA H100 80GB HBM3", "9.0"),
    ("NVIDIA H200 NVL", "9.0"),
    ("NVIDIA B200", "10.0"),
    ("NVIDIA GeForce RTX 5090", "12.0"),
    ("NVIDIA GB10", "12.1"),
)


def gpu_table(families: Sequence[Family], devices: Sequence[tuple[str, str]] = DEVICES) -> list[str]:
    """Markdown: GPU, compute capability, key id, what it measures, what it skips and why."""
    rows = ["| GPU (device name) | compute capability | key | measures | skips, and why |", "|---|---|---|---|---|"]
    for name, cc in devices:
        gpu = {"name": name, "compute_capability": cc}
        if unsupported(gpu):
            rows.append(f"| {name} | {cc} | `{gpu_slug(name)}` | nothing | every family: SparkTrace needs {cc_text(FLOOR)} or newer |")
            continue
        cov = coverage(families, gpu)
        skips = "; ".join(f"{', '.join(v)}: need {k.removeprefix('compute capability ')}" for k, v in cov.out.items()) or "none"
        rows.append(f"| {name} | {cc} | `{cov.key}` | {len(cov.runs)} of {len(families)} families | {skips} |")
    return rows


def family_target_table(families: Sequence[Family], compiled: Mapping[tuple[str, str], str] | None = None) -> list[str]:
    """Markdown: one row per family, one column per target: compiled and profiled there, or why not.

    `compiled` maps (family, arch) to a result word ("ok", "fails: ...") when the caller compiled;
    without it the table says what the family declares (a target below its need is "-").
    """
    rows = ["| family | set | needs | " + " | ".join(ARCHS) + " |", "|---|---|---|" + "---|" * len(ARCHS)]
    for f in families:
        cells = []
        for a in ARCHS:
            if a not in f.targets:
                cells.append("-")
            else:
                cells.append(compiled.get((f.name, a), "?") if compiled is not None else "yes")
        rows.append(f"| {f.name} | {f.set} | {f.needs_text} | " + " | ".join(cells) + " |")
    return rows


def compile_results(families: Sequence[Family]) -> dict[tuple[str, str], str]:
    """(family, arch) -> "ok" when every candidate compiles clean and has a committed profile there."""
    import json

    from plugins.family.compile import compile_source

    out = {}
    for f in families:
        report = f.path.parent.parent / "reports" / "profiles" / f"{f.name}.json"
        have = json.loads(report.read_text(encoding="utf-8")).get("candidates", {}) if report.is_file() else {}
        for a in f.targets:
            bad = [c.id for c in f.all_candidates if not compile_source(c.source, a, c.path.name).ok]
            missing = [c.id for c in f.all_candidates if a not in have.get(c.id, {}).get("targets", {})]
            out[(f.name, a)] = ("compiles" if not bad else f"fails: {', '.join(bad)}") + \
                               ("; profiled" if not missing else f"; no profile: {', '.join(missing)}")
    return out


DOCS_BEGIN = "<!-- gpu table: generated by python -m plugins.measure.targets --docs docs/gpu-run.md -->"
DOCS_END = "<!-- end of gpu table -->"


def docs_block(families: Sequence[Family]) -> str:
    """The GPU table as docs/gpu-run.md carries it, between its markers (a test keeps it current)."""
    return "\n".join([DOCS_BEGIN, *gpu_table(families), DOCS_END])


def write_docs(path: Path, families: Sequence[Family]) -> None:
    from plugins.atomicio import write_text_atomic

    text = path.read_text(encoding="utf-8")
    if DOCS_BEGIN not in text or DOCS_END not in text:
        raise SystemExit(f"{path}: no generated-table markers; fix: put {DOCS_BEGIN!r} and {DOCS_END!r} where the table goes")
    head, rest = text.split(DOCS_BEGIN, 1)
    write_text_atomic(path, head + docs_block(families) + rest.split(DOCS_END, 1)[1])


def main(argv: Sequence[str] | None = None) -> int:
    from plugins.family.catalog import Catalog

    ap = argparse.ArgumentParser(prog="python -m plugins.measure.targets",
                                 description="What each GPU measures, and each family's targets (Markdown).")
    ap.add_argument("--families-root", default="families")
    ap.add_argument("--compile", action="store_true", help="compile every candidate for every target (slow; cached)")
    ap.add_argument("--gpu", action="append", default=[], metavar="NAME=CC",
                    help='a device as it reports itself, e.g. "NVIDIA GeForce RTX 4090=8.9" (default: the documented list)')
    ap.add_argument("--docs", metavar="FILE", help="rewrite the GPU table between the markers in FILE (docs/gpu-run.md)")
    a = ap.parse_args(argv)
    fams = list(Catalog.load(Path(a.families_root)).families)
    if a.docs:
        write_docs(Path(a.docs), fams)
        return 0
    devices = [tuple(g.rsplit("=", 1)) for g in a.gpu] or list(DEVICES)
    for g in a.gpu:
        if "=" not in g:
            ap.error(f"--gpu {g!r}: write NAME=CC, e.g. \"NVIDIA L40S=8.9\"")
    lines = ["## What each GPU measures", "", *gpu_table(fams, devices), "", "## Families by target", "",
             *family_target_table(fams, compile_results(fams) if a.compile else None), ""]
    sys.stdout.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
