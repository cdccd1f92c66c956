"""One prompt per family, condition and option order, from prompts/template.md.

Why a template file: every model reads the same words, and a wording change
is a reviewed diff of one file (and of the prompt snapshots). The prompt shows
code without comments, launch plans with their sizes evaluated (expressions
in C notation), and never a
runtime, the intended winner or a rewrite's id or file name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Mapping, Sequence

from plugins.items.options import LETTERS, ORDERS
from plugins.family.manifest import Candidate, Family
from plugins.family.plan import Number
from plugins.measure.provenance import is_unavailable

TEMPLATE_PATH = Path(__file__).resolve().parents[2] / "prompts" / "template.md"
IF_SLIP, END_IF = "[[if slip]]", "[[end if]]"
PLACEHOLDERS = frozenset(
    {"gpu", "computes", "problem", "start_launch", "start_code", "slip"}
    | {f"option_{x}_{part}" for x in LETTERS for part in ("text", "launch", "code")}
)


class PromptError(ValueError):
    """A template or input that cannot make a prompt: names the file, the field and the fix."""


@dataclass(frozen=True)
class Gpu:
    """The target GPU as the prompt names it, from what the device reported; sm_count sizes
    persistent grids. l2_bytes and dram_bytes_per_s stay unrounded (None: not reported)."""

    name: str
    sm_count: int
    compute_capability: str = ""
    l2_bytes: int | None = None
    dram_bytes_per_s: float | None = None

    @property
    def label(self) -> str:
        """'NVIDIA H200 (132 SMs, compute capability 9.0, 50 MB L2, about 4.8 TB/s DRAM)'; a fact the
        record lacks is left out, so a record of name, SMs and capability reads as before."""
        parts = [f"{self.sm_count} SMs"]
        if self.compute_capability:
            parts.append(f"compute capability {self.compute_capability}")
        if self.l2_bytes:
            parts.append(f"{l2_text(self.l2_bytes)} L2")
        if self.dram_bytes_per_s:
            parts.append(f"about {bandwidth_class(self.dram_bytes_per_s)} DRAM")
        return f"{self.name} ({', '.join(parts)})"


def l2_text(l2_bytes: int) -> str:
    """50 MB for 52428800 bytes (MB as the driver's l2CacheSize counts them, 2**20 bytes); 512 KB under 1 MB."""
    if l2_bytes < 2**20:
        return f"{round(l2_bytes / 2**10)} KB"
    return f"{l2_bytes / 2**20:.1f}".removesuffix(".0") + " MB"


def bandwidth_class(bytes_per_s: float) -> str:
    """The bandwidth rounded for reading: one decimal in TB/s from 1 TB/s, else two significant digits in GB/s."""
    if bytes_per_s >= 0.995e12:
        return f"{bytes_per_s / 1e12:.1f} TB/s"
    return f"{float(f'{bytes_per_s / 1e9:.2g}'):g} GB/s"


def dram_bytes_per_s(mem_clock_max_mhz: float, memory_bus_width_bits: int) -> float:
    """Peak DRAM bandwidth from the reported memory clock and bus width: two transfers per clock."""
    return 2 * float(mem_clock_max_mhz) * 1e6 * int(memory_bus_width_bits) / 8


def _positive(v: object) -> bool:
    """A reported number (a field the device could not report reads 'unavailable: ...')."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


def gpu_of_record(record: Mapping | None) -> Gpu | None:
    """The GPU a measurement record's "gpu" dict names (what the device reported), or None
    when the record names no device with an SM count."""
    g = record.get("gpu") if isinstance(record, Mapping) else None
    if not isinstance(g, Mapping) or not g.get("name") or not _positive(g.get("sm_count")):
        return None
    cc = g.get("compute_capability", "")
    clock, width = g.get("mem_clock_max_mhz"), g.get("memory_bus_width_bits")
    return Gpu(
        name=str(g["name"]),
        sm_count=int(g["sm_count"]),
        compute_capability=cc if isinstance(cc, str) and not is_unavailable(cc) else "",
        l2_bytes=int(g["l2_bytes"]) if _positive(g.get("l2_bytes")) else None,
        dram_bytes_per_s=dram_bytes_per_s(clock, width) if _positive(clock) and _positive(width) else None,
    )


def load_template(path: Path = TEMPLATE_PATH) -> str:
    return check_template(Path(path).read_text(encoding="utf-8"), str(path))


def check_template(text: str, path: str = "template") -> str:
    """The template, if it has exactly the known placeholders and one slip block."""
    names = set(Template(text.replace(IF_SLIP, "").replace(END_IF, "")).get_identifiers())
    unknown, missing = sorted(names - PLACEHOLDERS), sorted(PLACEHOLDERS - names)
    if unknown or missing:
        raise PromptError(
            f"{path}: placeholders unknown {unknown}, missing {missing}; fix: use exactly {sorted(PLACEHOLDERS)} "
            "(write a literal dollar sign as $$)"
        )
    if text.count(IF_SLIP) != 1 or text.count(END_IF) != 1 or text.index(IF_SLIP) > text.index(END_IF):
        raise PromptError(f"{path}: needs one '{IF_SLIP}' line before one '{END_IF}' line around the slip; fix: restore them")
    return text


def _num(v: Number) -> str:
    return str(v) if isinstance(v, int) else repr(float(v))


def c_expr(expr: str | int) -> str:
    """A size expression as a CUDA reader writes it: integer division is `/`
    (family.toml uses Python's `//`, which would read as a comment)."""
    return re.sub(r"\s*//\s*", " / ", str(expr))


def _dims(exprs: Sequence[str | int], values: Sequence[int]) -> tuple[str, str]:
    """('cdiv(n, 1024)', '65536') or ('(cdiv(n, 32), 8)', '(2048, 8)')."""
    vals = values[: len(exprs)]
    sym = ", ".join(c_expr(e) for e in exprs)
    num = ", ".join(str(v) for v in vals)
    if len(exprs) > 1:
        sym, num = f"({sym})", f"({num})"
    return sym, num


def _symbolic(exprs: Sequence[str | int]) -> bool:
    return any(isinstance(e, str) for e in exprs)


def launch_plan_text(fam: Family, cand: Candidate, gpu: Gpu) -> str:
    """kernel<<<grid, block, smem>>>(args) per launch, with the expressions behind the numbers."""
    shape = fam.shape(fam.timing)
    resolved = fam.resolve(cand, shape, gpu.sm_count)
    lines: list[str] = []
    if cand.zero_before:
        lines.append(f"before the plan runs: {', '.join(cand.zero_before)} set to zero")
    for launch, r in zip(cand.launches, resolved):
        gs, gv = _dims(launch.grid, r.grid)
        bs, bv = _dims(launch.block, r.block)
        coop = "  (cooperative launch)" if launch.cooperative else ""
        lines.append(f"{launch.kernel}<<<{gv}, {bv}, {r.shared_bytes}>>>({', '.join(launch.args)}){coop}")
        lines.append(f"    grid  = {gs} = {gv}" if _symbolic(launch.grid) else f"    grid  = {gv}")
        lines.append(f"    block = {bs} = {bv}" if _symbolic(launch.block) else f"    block = {bv}")
        if isinstance(launch.shared_bytes, str):
            lines.append(f"    dynamic shared memory = {c_expr(launch.shared_bytes)} = {r.shared_bytes} bytes")
        else:
            lines.append(f"    dynamic shared memory = {r.shared_bytes} bytes")
    return "\n".join(lines)


_ITEMSIZE = {"float32": 4, "float64": 8, "int32": 4, "uint32": 4, "uint8": 1, "int64": 8, "uint64": 8,
             "bfloat16": 2, "float16": 2, "float8_e4m3": 1, "int8": 1}


def problem_text(fam: Family) -> str:
    """Sizes, scalar parameters and buffers (dtype, role, element count) for the timed shape."""
    shape = fam.shape(fam.timing)
    counts = fam.buffer_counts(shape)
    lines = ["- sizes: " + ", ".join(f"{k} = {_num(v)}" for k, v in fam.timing.items())]
    if fam.params:
        lines.append("- scalar parameters: " + ", ".join(f"{k} = {_num(v)}" for k, v in fam.params.items()))
    for b in fam.buffers:
        count = f"{c_expr(b.count)} = {counts[b.name]}" if isinstance(b.count, str) and b.count != str(counts[b.name]) else str(counts[b.name])
        lines.append(f"- {b.name}: {b.dtype} {b.role}, {count} elements ({counts[b.name] * _ITEMSIZE[b.dtype]} bytes)")
    return "\n".join(lines)


def option_order(fam: Family, order: str) -> tuple[Candidate, ...]:
    """The rewrites as lettered: forward is family.toml's order, mirror its reverse."""
    if order not in ORDERS:
        raise PromptError(f"order {order!r}; fix: use one of {ORDERS}")
    return tuple(fam.rewrites) if order == "forward" else tuple(reversed(fam.rewrites))


def _fence_safe(text: str, where: str) -> str:
    if "```" in text:
        raise PromptError(f"{where}: contains ``` which would end the code block; fix: remove it")
    return text.rstrip("\n")


def render_prompt(fam: Family, order: str, gpu: Gpu, slip: str | None = None, template: str | None = None) -> str:
    """The prompt a model reads. `slip` is the rendered slip text (full or
    no-conflicts); None gives the source-only prompt."""
    text = load_template() if template is None else check_template(template)
    head, rest = text.split(IF_SLIP, 1)
    block, tail = rest.split(END_IF, 1)
    text = head + (block.lstrip("\n") if slip is not None else "") + tail.lstrip("\n")
    options = option_order(fam, order)
    values = {
        "gpu": gpu.label,
        "computes": fam.computes,
        "problem": problem_text(fam),
        "start_launch": launch_plan_text(fam, fam.start, gpu),
        "start_code": _fence_safe(fam.start.code, str(fam.start.path)),
        "slip": _fence_safe(slip, "slip") if slip is not None else "",
    }
    for letter, cand in zip(LETTERS, options):
        values[f"option_{letter}_text"] = cand.text
        values[f"option_{letter}_launch"] = launch_plan_text(fam, cand, gpu)
        values[f"option_{letter}_code"] = _fence_safe(cand.code, str(cand.path))
    out = Template(text).substitute(values)
    return re.sub(r"\n{3,}", "\n\n", out).strip("\n") + "\n"
