"""`[[profile_checks]]` in family.toml: claims about a candidate's binary, checked per target.

Why: an option text or a trap is only honest if the compiled code does what it
says ("loads and stores the tile on every pass", "no barrier in the loop").
A family states such claims as counts on the instruction profile
(plugins.family.sass), and CI verifies every one on every target.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from plugins.family.sass import CLASSES, KernelProfile

OPS: dict[str, Callable[[float, float], bool]] = {
    "==": operator.eq, "!=": operator.ne, ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt,
}
# kernel: the whole kernel; in_loops: inside the loops that survive (outermost
# bodies, so nested code counts once); each_loop: every surviving loop's body
# must pass on its own (vacuous when no loop survives; pair it with a `loops`
# check); any_loop: at least one surviving loop's body passes.
SCOPES = ("kernel", "in_loops", "each_loop", "any_loop")
LOOPS = "loops"  # a count that is not an instruction class: how many loops survive
COUNTABLE = (*CLASSES, LOOPS)
CHECK_FIELDS = {"candidate", "kernel", "count", "scope", "op", "value", "per", "per_class", "why"}


class CheckSpecError(ValueError):
    """A malformed [[profile_checks]] entry: the field, the problem and the fix."""

    def __init__(self, field: str, problem: str, fix: str):
        self.field, self.problem, self.fix = field, problem, fix
        super().__init__(f"{field}: {problem}. Fix: {fix}")


@dataclass(frozen=True)
class ProfileCheck:
    candidates: tuple[str, ...]
    kernel: str  # "" = every kernel the candidate's source defines
    count: str  # an instruction class (plugins.family.sass.CLASSES) or "loops"
    op: str
    value: float
    scope: str = "kernel"
    per: int = 1  # the count is divided by this: elements per thread, or passes of a loop the compiler unrolled
    why: str = ""
    # A ratio: the count over this class's count in the same scope ("shared loads per FFMA"), which
    # holds whatever the unroll a target's ptxas chose (sm_80 and sm_90 unroll the same loop differently).
    per_class: str = ""

    def describe(self) -> str:
        per = f" per {self.per}" if self.per != 1 else ""
        per += f" per {self.per_class}" if self.per_class else ""
        where = "" if self.scope == "kernel" else f" ({self.scope})"
        return f"{self.count}{per}{where} {self.op} {_num(self.value)}"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def parse_profile_checks(raw: Any, kernels: Mapping[str, Sequence[str]]) -> tuple[ProfileCheck, ...]:
    """Validate the raw TOML list. `kernels` maps each candidate id to its entry points.

    Raises CheckSpecError with a field path relative to `profile_checks`.
    """
    if not isinstance(raw, list):
        raise CheckSpecError("", f"expected [[profile_checks]] tables, got {type(raw).__name__}", "write one [[profile_checks]] table per check")
    out = []
    for i, t in enumerate(raw):
        at = f"[{i}]"
        if not isinstance(t, dict):
            raise CheckSpecError(at, "is not a table", "write [[profile_checks]] with fields")
        for key in t:
            if key not in CHECK_FIELDS:
                raise CheckSpecError(f"{at}.{key}", f"unknown field {key!r}", f"use one of {sorted(CHECK_FIELDS)}")
        for key in ("candidate", "count", "op", "value", "why"):
            if key not in t:
                raise CheckSpecError(f"{at}.{key}", "missing required field", f"add '{key} = ...'")
        cands = t["candidate"]
        cands = [cands] if isinstance(cands, str) else cands
        if not isinstance(cands, list) or not cands or not all(isinstance(c, str) for c in cands):
            raise CheckSpecError(f"{at}.candidate", f"{t['candidate']!r}", "give a candidate id or a list of ids")
        for c in cands:
            if c not in kernels:
                raise CheckSpecError(f"{at}.candidate", f"{c!r} is not a candidate of this family", f"use one of {sorted(kernels)}")
        kernel = t.get("kernel", "")
        if not isinstance(kernel, str):
            raise CheckSpecError(f"{at}.kernel", f"{kernel!r}", "give a kernel name such as \"k0\"")
        for c in cands:
            if kernel and kernel not in kernels[c]:
                raise CheckSpecError(f"{at}.kernel", f"{kernel!r} is not an entry point of {c!r}", f"use one of {sorted(kernels[c])}")
        count = t["count"]
        if count not in COUNTABLE:
            raise CheckSpecError(f"{at}.count", f"{count!r} is not an instruction class",
                                 "use one of the classes in families/README.md (e.g. shared_loads, global_loads_128, barriers, loops)")
        scope = t.get("scope", "kernel")
        if scope not in SCOPES:
            raise CheckSpecError(f"{at}.scope", f"{scope!r}", f"use one of {SCOPES}")
        if count == LOOPS and scope != "kernel":
            raise CheckSpecError(f"{at}.scope", "'loops' is counted over the whole kernel", "drop scope or use scope = \"kernel\"")
        op = t["op"]
        if op not in OPS:
            raise CheckSpecError(f"{at}.op", f"{op!r}", f"use one of {sorted(OPS)}")
        value = t["value"]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CheckSpecError(f"{at}.value", f"{value!r}", "give a number")
        per = t.get("per", 1)
        if isinstance(per, bool) or not isinstance(per, int) or per < 1:
            raise CheckSpecError(f"{at}.per", f"{per!r}", "give a positive integer (elements per thread, or loop passes)")
        per_class = t.get("per_class", "")
        if per_class and (per_class not in COUNTABLE or per_class == LOOPS):
            raise CheckSpecError(f"{at}.per_class", f"{per_class!r} is not an instruction class",
                                 "use a class such as ffma or instructions (the ratio's denominator)")
        why = t["why"]
        if not isinstance(why, str) or not why.strip():
            raise CheckSpecError(f"{at}.why", "is empty", "say which claim of the text or reasoning this check proves")
        out.append(ProfileCheck(tuple(cands), kernel, count, op, float(value), scope, per, why.strip(), per_class))
    return tuple(out)


def _ratio(num: float, den: float) -> float:
    return num / den if den else (0.0 if not num else float("inf"))


def counted(check: ProfileCheck, prof: KernelProfile) -> list[float]:
    """The value(s) the check compares: one for kernel/in_loops, one per loop for each_loop/any_loop."""
    if check.count == LOOPS:
        return [len(prof.loops) / check.per]

    def value(counts_of: Any) -> float:
        v = counts_of(check.count) / check.per
        return _ratio(v, counts_of(check.per_class)) if check.per_class else v

    if check.scope == "kernel":
        return [value(lambda c: prof.counts[c])]
    if check.scope == "in_loops":
        return [value(lambda c: sum(lp.counts[c] for lp in prof.loops if lp.depth == 0))]
    return [value(lambda c, lp=lp: lp.counts[c]) for lp in prof.loops]


def failures(check: ProfileCheck, candidate: str, profiles: Sequence[KernelProfile]) -> list[str]:
    """One line per kernel (and loop) where `check` fails for `candidate`; [] when it holds."""
    if candidate not in check.candidates:
        return []
    out = []
    chosen = [p for p in profiles if not check.kernel or p.kernel == check.kernel]
    if not chosen:
        return [f"kernel {check.kernel!r} is not in the binary (kernels: {[p.kernel for p in profiles]})"]
    for prof in chosen:
        values = counted(check, prof)
        if check.scope == "any_loop":
            if not any(OPS[check.op](v, check.value) for v in values):
                shown = ", ".join(_num(v) for v in values) or "no loop survives"
                out.append(f"{prof.kernel} on {prof.arch}: {check.describe()} fails in every loop, counted "
                           f"[{shown}] [claim: {check.why}]")
            continue
        for k, v in enumerate(values):
            if not OPS[check.op](v, check.value):
                loop = f" loop at 0x{prof.loops[k].start:04x}" if check.scope == "each_loop" else ""
                raw = "" if check.per == 1 else f" ({_num(v * check.per)} counted / {check.per})"
                out.append(f"{prof.kernel}{loop} on {prof.arch}: {check.describe()} fails, counted {_num(v)}{raw} "
                           f"[claim: {check.why}]")
    return out
