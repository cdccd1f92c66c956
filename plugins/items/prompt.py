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
    """The target GPU as the prompt names it; sm_count sizes persistent grids."""

    name: str
    sm_count: int
    compute_capability: str = ""

    @property
    def label(self) -> str:
        cc = f", compute capability {self.compute_capability}" if self.compute_capability else ""
        return f"{self.name} ({self.sm_count} SMs{cc})"


# Device facts (not measurements) for keys that may have no measurement file yet.
KNOWN_GPUS: dict[str, Gpu] = {
    "h200": Gpu("NVIDIA H200", 132, "9.0"),
    "gb10": Gpu("NVIDIA GB10", 48, "12.1"),
}


def gpu_for(key: str, record: Mapping | None = None) -> Gpu:
    """The GPU of a measurement record, else the known facts for the key's slug."""
    if record is not None and isinstance(record.get("gpu"), Mapping):
        g = record["gpu"]
        if g.get("name") and g.get("sm_count"):
            return Gpu(str(g["name"]), int(g["sm_count"]), str(g.get("compute_capability", "")))
    if key in KNOWN_GPUS:
        return KNOWN_GPUS[key]
    raise PromptError(
        f"GPU key {key!r}: no measurement names its device and it is not one of {sorted(KNOWN_GPUS)}; "
        "fix: measure a family on it first, or add its name and SM count to KNOWN_GPUS in plugins/items/prompt.py"
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
