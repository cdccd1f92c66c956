"""SASS read into instruction profiles: what each compiled kernel really issues.

Why: a family's option text and its slip describe what the code does, and the
compiler may delete or reshape that work (a loop whose loads are dead, a
`__syncwarp()` that vanishes). Counting the disassembly per instruction class,
and listing the loops that survive, lets a family state checks on the binary
and lets CI hold them on every target. Pure functions over nvdisasm's text;
producing that text is plugins.family.binary's job.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

# -- instruction classes ---------------------------------------------------------

# Memory classes that carry an access width (bits) as well as a total.
WIDTH_CLASSES = (
    "global_loads", "global_stores", "shared_loads", "shared_stores", "local_loads", "local_stores",
)
WIDTHS = (8, 16, 32, 64, 128, 256)
OTHER_CLASSES = (
    "instructions",      # every instruction (NOPs excluded)
    "generic_loads",     # LD: generic address space
    "generic_stores",    # ST
    "constant_loads",    # LDC, LDCU, ULDC: kernel parameters and __constant__ data
    "global_atomics",    # ATOM, ATOMG, RED, REDG
    "shared_atomics",    # ATOMS
    "barriers",          # BAR.*: block-wide barriers (__syncthreads and friends)
    "warp_syncs",        # WARPSYNC: what __syncwarp() leaves in the binary, if anything
    "fences",            # MEMBAR, FENCE
    "shuffles",          # SHFL
    "warp_reductions",   # REDUX
    "special_function",  # MUFU: exp2, rcp, rsqrt, ... on the special-function unit
    "ffma",              # FFMA (and the paired FFMA2 where a target has it)
    "branches",          # BRA
    "vector_memory",     # global and shared loads and stores of 64 bits or wider
    "global_loads_before_use",  # LDGs issued, in address order, before any instruction reads one's result
)
CLASSES: tuple[str, ...] = (
    *OTHER_CLASSES,
    *WIDTH_CLASSES,
    *(f"{c}_{w}" for c in WIDTH_CLASSES for w in WIDTHS),
)

_BY_OPCODE = {
    "LDG": "global_loads", "STG": "global_stores",
    "LDS": "shared_loads", "LDSM": "shared_loads", "STS": "shared_stores",
    "LDL": "local_loads", "STL": "local_stores",
    "LD": "generic_loads", "ST": "generic_stores",
    "LDC": "constant_loads", "LDCU": "constant_loads", "ULDC": "constant_loads",
    "ATOM": "global_atomics", "ATOMG": "global_atomics", "RED": "global_atomics", "REDG": "global_atomics",
    "ATOMS": "shared_atomics",
    "BAR": "barriers",
    "WARPSYNC": "warp_syncs",
    "MEMBAR": "fences", "FENCE": "fences",
    "SHFL": "shuffles",
    "REDUX": "warp_reductions",
    "MUFU": "special_function",
    "FFMA": "ffma", "FFMA2": "ffma",
    "BRA": "branches",
}
_WIDTH_MOD = {"U8": 8, "S8": 8, "U16": 16, "S16": 16, "64": 64, "128": 128, "256": 256}


class SassError(ValueError):
    """Disassembly that cannot be read: says what was expected."""


@dataclass(frozen=True)
class Instruction:
    address: int
    predicate: str  # "" or e.g. "@!P0"
    opcode: str  # "LDG"
    modifiers: tuple[str, ...]  # ("E", "128", "CONSTANT")
    operands: str

    @property
    def classes(self) -> tuple[str, ...]:
        return classify(self.opcode, self.modifiers)

    @property
    def text(self) -> str:
        op = ".".join((self.opcode, *self.modifiers))
        return " ".join(p for p in (self.predicate, op, self.operands) if p)


def access_width(modifiers: Iterable[str]) -> int:
    """Bits per thread of a load or store, from its modifiers (32 unless stated)."""
    for m in modifiers:
        if m in _WIDTH_MOD:
            return _WIDTH_MOD[m]
    return 32


def classify(opcode: str, modifiers: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The classes one instruction counts in (always `instructions`)."""
    out = ["instructions"]
    cls = _BY_OPCODE.get(opcode)
    if cls is None:
        return tuple(out)
    out.append(cls)
    if cls in WIDTH_CLASSES:
        width = access_width(modifiers)
        out.append(f"{cls}_{width}")
        if width >= 64 and cls.startswith(("global_", "shared_")):
            out.append("vector_memory")
    return tuple(out)


@dataclass(frozen=True)
class Counts:
    """Instruction counts by class, sorted, zeros left out; a missing class reads 0."""

    items: tuple[tuple[str, int], ...] = ()

    def __getitem__(self, name: str) -> int:
        return dict(self.items).get(name, 0)

    @staticmethod
    def of(instructions: Iterable[Instruction]) -> "Counts":
        tally: dict[str, int] = {}
        instructions = tuple(instructions)
        for ins in instructions:
            for c in ins.classes:
                tally[c] = tally.get(c, 0) + 1
        if ahead := loads_before_use(instructions):
            tally["global_loads_before_use"] = ahead
        return Counts(tuple(sorted(tally.items())))

    def as_dict(self) -> dict[str, int]:
        return dict(self.items)


@dataclass(frozen=True)
class Loop:
    """A loop that survives in the binary: a backward branch and the code it repeats.

    `step` is what the loop counter adds per pass of the binary loop, when the
    SASS shows it as an immediate: for a source loop of step 1 it is the unroll
    factor. None when the counter steps by a register (a grid-stride loop) or
    cannot be found.
    """

    start: int  # address of the first instruction of the body
    end: int  # address of the backward branch
    depth: int  # 0 for an outermost loop
    counts: Counts
    step: int | None


@dataclass(frozen=True)
class KernelProfile:
    kernel: str
    arch: str
    counts: Counts
    loops: tuple[Loop, ...]

    def as_dict(self) -> dict:
        return {
            "counts": self.counts.as_dict(),
            "loops": [
                {"start": f"0x{lp.start:04x}", "end": f"0x{lp.end:04x}", "depth": lp.depth,
                 "step": lp.step, "counts": lp.counts.as_dict()}
                for lp in self.loops
            ],
        }


# -- issue order -----------------------------------------------------------------

_REGNUM = re.compile(r"(?<![\w.])R(\d+)(\.64)?\b")
_NO_DEST = ("STG", "STS", "STL", "ST", "RED", "REDG", "BRA", "EXIT", "BAR", "MEMBAR", "FENCE", "WARPSYNC")


def _registers(text: str) -> set[int]:
    """R numbers an operand text names; `R2.64` (an address pair) names R2 and R3."""
    out: set[int] = set()
    for m in _REGNUM.finditer(text):
        n = int(m.group(1))
        out.update((n, n + 1) if m.group(2) else (n,))
    return out


def loads_before_use(instructions: Iterable[Instruction]) -> int:
    """How many global loads issue, in address order, before an instruction reads
    the result of one of them: the loads a thread has in flight at once when the
    code runs straight through. Why: "N loads in flight" is a claim about order,
    which counts alone cannot prove (a compiler may interleave each load's use)."""
    pending: set[int] = set()
    issued = 0
    for ins in instructions:
        ops = _operands(ins)
        sources = ops if ins.opcode in _NO_DEST else ops[1:]
        if pending & _registers(" ".join([ins.predicate, *sources])):
            break
        if ins.opcode == "LDG":
            first = _registers(ops[0]) if ops else set()
            if first:
                base = min(first)
                pending.update(range(base, base + max(1, access_width(ins.modifiers) // 32)))
            issued += 1
    return issued


# -- parsing nvdisasm ------------------------------------------------------------

_SECTION = re.compile(r"^\s*\.section\s+\.text\.([A-Za-z_$][\w$]*)")
_LABEL = re.compile(r"^\s*(\.L_[\w$]+|[A-Za-z_$][\w$.]*):\s*$")
_INSN = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)\s*(.*?)\s*;")
_TARGET = re.compile(r"`\((\.L_[\w$]+)\)")
_NEVER = ("@!PT", "@!UPT")  # predicates that are constant false


@dataclass(frozen=True)
class Function:
    """One `.text.NAME` section: its instructions in address order and its labels."""

    name: str
    instructions: tuple[Instruction, ...]
    labels: tuple[tuple[str, int], ...]


def parse_nvdisasm(text: str) -> tuple[Function, ...]:
    """nvdisasm's text (`nvdisasm -c`) into functions.

    NOPs are dropped, and so is any instruction guarded by `@!PT` or `@!UPT`:
    its predicate is constant false, so it never executes (ptxas leaves such
    `@!PT LDS RZ, [RZ]` beside the DEPBAR waits of cp.async pipelines).
    """
    funcs: list[Function] = []
    name: str | None = None
    insns: list[Instruction] = []
    labels: dict[str, int] = {}
    pending: list[str] = []

    def close() -> None:
        if name is not None:
            funcs.append(Function(name, tuple(insns), tuple(sorted(labels.items()))))

    for line in text.splitlines():
        if m := _SECTION.match(line):
            close()
            name, insns, labels, pending = m.group(1), [], {}, []
            continue
        if name is None:
            continue
        if m := _INSN.match(line):
            addr = int(m.group(1), 16)
            for lab in pending:
                labels[lab] = addr
            pending = []
            opcode = m.group(3)
            if opcode == "NOP" or (m.group(2) or "").strip() in _NEVER:
                continue
            mods = tuple(x for x in m.group(4).split(".") if x)
            insns.append(Instruction(addr, (m.group(2) or "").strip(), opcode, mods, m.group(5)))
        elif m := _LABEL.match(line):
            pending.append(m.group(1))
    close()
    if not funcs:
        raise SassError("no .text.<kernel> section in the disassembly; expected nvdisasm -c output of a cubin")
    return tuple(funcs)


# -- loops -----------------------------------------------------------------------

_PRED = re.compile(r"^@?(!?)(U?P\d)$")
_REG = re.compile(r"^U?R\d+$")
_IMM = re.compile(r"^-?0x[0-9a-fA-F]+$|^-?\d+$")
_COMPARES = ("ISETP", "UISETP")
_ADDS = ("IADD3", "UIADD3", "VIADD", "IADD")


def _int(tok: str) -> int:
    """An immediate as a signed 32-bit value (0xfffffffc is -4: a counter stepping down)."""
    neg = tok.startswith("-")
    tok = tok.lstrip("-")
    v = int(tok, 16) if tok.lower().startswith("0x") else int(tok)
    if v >= 2**31:
        v -= 2**32
    return -v if neg else v


def _operands(ins: Instruction) -> list[str]:
    return [o.strip() for o in ins.operands.split(",")]


def _branch_predicate(branch: Instruction) -> str | None:
    """P0 for `@P0 BRA`, UP1 for `BRA.U UP1, ...` (the uniform datapath's form)."""
    if m := _PRED.match(branch.predicate):
        return m.group(2)
    first = _operands(branch)[0]
    if m := _PRED.match(first):
        return m.group(2)
    return None


def _counter_step(body: tuple[Instruction, ...], branch: Instruction) -> int | None:
    """What the loop's counter adds per pass, when an immediate shows it."""
    pred = _branch_predicate(branch)
    if pred is None:
        return None
    compare = None
    for ins in body:
        if ins.opcode in _COMPARES and _operands(ins)[:1] == [pred]:
            compare = ins
    if compare is None:
        return None
    counters = {o.split(".")[0] for o in _operands(compare)[2:] if _REG.match(o.split(".")[0])}
    step = None
    for ins in body:
        ops = _operands(ins)
        if ins.opcode not in _ADDS or not ops or ops[0] not in counters:
            continue
        srcs = [o for o in ops[1:] if o not in ("PT", "UPT", "!PT", "!UPT", "RZ", "URZ")]
        if len(srcs) == 2 and ops[0] in srcs:
            other = srcs[1] if srcs[0] == ops[0] else srcs[0]
            if _IMM.match(other):
                step = abs(_int(other))
    return step or None


def loops_of(func: Function) -> tuple[Loop, ...]:
    """Loops that survive: each backward branch, merged per loop head.

    The spin `BRA` to itself that ends every kernel (after its EXIT) is not a loop.
    """
    at = dict(func.labels)
    spans: dict[int, Instruction] = {}
    for ins in func.instructions:
        if ins.opcode != "BRA":
            continue
        m = _TARGET.search(ins.operands)
        if not m or m.group(1) not in at:
            continue
        target = at[m.group(1)]
        if target > ins.address:
            continue
        if target == ins.address and not ins.predicate:
            continue
        if target not in spans or spans[target].address < ins.address:
            spans[target] = ins
    out = []
    for start, branch in sorted(spans.items()):
        body = tuple(i for i in func.instructions if start <= i.address <= branch.address)
        depth = sum(1 for s, b in spans.items() if s <= start and branch.address <= b.address and (s, b.address) != (start, branch.address))
        out.append(Loop(start, branch.address, depth, Counts.of(body), _counter_step(body, branch)))
    return tuple(out)


def profile_functions(funcs: Iterable[Function], arch: str) -> tuple[KernelProfile, ...]:
    """One profile per function, sorted by name."""
    return tuple(
        KernelProfile(f.name, arch, Counts.of(f.instructions), loops_of(f))
        for f in sorted(funcs, key=lambda f: f.name)
    )


def profile_text(text: str, arch: str) -> tuple[KernelProfile, ...]:
    return profile_functions(parse_nvdisasm(text), arch)


def by_kernel(profiles: Iterable[KernelProfile]) -> Mapping[str, KernelProfile]:
    return {p.kernel: p for p in profiles}
