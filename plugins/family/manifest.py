"""A family directory read into frozen dataclasses, or one clear error.

A family is data: `family.toml`, `kernel.cu`, `rewrites/*.cu`, `wrong/*.cu`
and `reference.py`. Every check that needs no compiler and no GPU happens
here, so that a malformed family fails once, naming the file, the field, what
is wrong and how to fix it, and never hides the other families.
"""
from __future__ import annotations

import importlib.util
import os
import re
import stat
import sys
import tomllib
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterable, Mapping

from plugins.cache import store
from plugins.family.compile import ARCHS
from plugins.family import needs as needs_mod
from plugins.family.cuda_source import (
    CTYPE_DTYPES,
    POINTER_ONLY_CTYPES,
    KernelSignature,
    SourceError,
    check_brackets,
    kernel_signatures,
    restricted_constructs,
    strip_comments,
    surviving_comment_markers,
)
from plugins.family.dtypes import DTYPE_NAMES
from plugins.family.plan import (
    BufferArg,
    ExprError,
    Number,
    ResolvedLaunch,
    ScalarArg,
    dims3,
    evaluate,
    evaluate_int,
)
from plugins.family.profile_checks import CheckSpecError, ProfileCheck, parse_profile_checks

DTYPES = DTYPE_NAMES  # float32 ... uint64, and bfloat16, float16, float8_e4m3, int8 (plugins/family/dtypes.py)
ROLES = ("input", "output", "scratch")
BOUNDS = ("memory", "compute")
TOLERANCE_KINDS = ("exact", "elementwise", "scaled", "e4m3_step")
N_REWRITES = 4
MAX_THREADS = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_DYNAMIC_SHARED = 48 * 1024
# The CPU stages evaluate persistent grids at the SM counts of the GPUs users own:
# RTX 4070 46, GB10 48, RTX 3090 82, RTX A6000 84, A100 108, RTX 4090 128,
# H100/H200 SXM 132, L40S 142, B200 148, RTX 5090 170, RTX PRO 6000 188; a plan
# that only works on some of them is caught.
SM_COUNTS_CHECKED = (46, 48, 82, 84, 108, 128, 132, 142, 148, 170, 188)

# Words and patterns that would tell a reader which option is quick: one list,
# in leak_words.toml beside this module (families/README.md links to it).
LEAK_WORDS_FILE = Path(__file__).with_name("leak_words.toml")


def _load_leak_words() -> tuple[tuple[str, ...], tuple[re.Pattern[str], ...], tuple[str, ...]]:
    raw = tomllib.loads(LEAK_WORDS_FILE.read_text(encoding="utf-8"))
    return (tuple(raw["text"]["words"]), tuple(re.compile(p, re.I) for p in raw["text"]["patterns"]),
            tuple(raw["identifiers"]["segments"]))


LEAK_WORDS, LEAK_PATTERNS, IDENT_LEAK_SEGMENTS = _load_leak_words()

# Family sets: `classic` is the seed's fifteen, `hard` the set for frontier
# models, `diagnose` the data groups whose winner only the slip reveals. A family
# says which it belongs to (`set = "hard"`); classic is the default.
SETS = ("classic", "hard", "diagnose")
DIAGNOSE_SET = "diagnose"
SET_CHOICES = (*SETS, "all")
DEFAULT_SET = "classic"

TOP_FIELDS = {
    "name", "set", "computes", "bound", "constraints", "sizes", "params", "buffers",
    "start", "rewrites", "wrong", "intended",
    "profile_checks",  # optional: claims about the binary (plugins/family/profile_checks.py)
}
OPTIONAL_HARD_FIELDS = {"needs", "gpu_gate_only", "pair"}  # optional, for the hard set
TOP_FIELDS |= OPTIONAL_HARD_FIELDS | {"targets"}  # targets: retired, one clear error in _needs
# Data groups (the diagnose set): members share every file a model reads and differ
# only in the run-time data make_inputs draws (`[data]`); `[slip]` names the cue rows.
GROUP_FIELDS = {"group", "data", "slip"}
TOP_FIELDS |= GROUP_FIELDS
SLIP_FIELDS = {"extra_metrics", "cue_metrics", "cue_rules", "cue_rule_text"}
GROUP_SIZES = (2, 3)
CANDIDATE_FIELDS = {"id", "file", "text", "defect", "launch", "zero_before"}
CANDIDATE_FIELDS |= {"allow_local"}  # opt-in to local memory (a stack frame): see families/README.md
CANDIDATE_FIELDS |= {"allow_spills"}  # optional: spills by design (recorded, not failed)
CANDIDATE_FIELDS |= {"faults"}  # [[wrong]] only: it faults (out of bounds) on purpose; the GPU gate isolates it
NEEDS_FIELDS = {"compute_capability", "why"}  # [needs]: the lowest compute capability (default 8.0)
MAX_CLUSTER = 8  # portable cluster size; larger needs a non-portable launch attribute
LAUNCH_FIELDS = {"kernel", "grid", "block", "shared_bytes", "args", "cooperative"}
BUFFER_FIELDS = {"dtype", "count", "role", "tolerance"}
TOLERANCE_FIELDS = {"kind", "rtol", "atol", "steps"}
INTENDED_FIELDS = {"winner", "reasoning", "cue"}  # cue: diagnose set only, what the slip shows in words
SIZES_FIELDS = {"timing", "gate", "tiny"}
SIZES_OPTIONAL = {"l2_per_gpu"}  # GPU -> what a working set under 4x its L2 means there (families/README.md, Sizes)
# The L2 each GPU enables (NVIDIA's published sizes; the H200 row takes GH100's full
# 60 MiB die, a margin over its 50 MB). A memory-bound family moves 4x the L2 of every
# GPU at [sizes.timing], or states per GPU in [sizes.l2_per_gpu] what its smaller working set means there.
GPU_L2_BYTES: Mapping[str, int] = {
    "A100": 40 * 10**6, "RTX 4090": 72 * 10**6, "L40S": 96 * 10**6, "RTX 5090": 96 * 10**6,
    "H200": 60 * 2**20, "B200": 126 * 10**6,
}
REFERENCE_FUNCS = ("make_inputs", "reference", "naive")


# An option is one line a model compares with three others (the longest committed is 252 characters).
MAX_OPTION_TEXT = 400


class FamilyError(ValueError):
    """One clear problem in a family: the file, the field, what, and the fix."""

    def __init__(self, file: Path | str, field: str, problem: str, fix: str, line: int | None = None):
        self.file = str(file)
        self.field = field
        self.problem = problem
        self.fix = fix
        self.line = line
        where = f"{self.file}:{line}" if line else self.file
        where = f"{where}: field '{field}'" if field else where
        super().__init__(f"{where}: {problem}. Fix: {fix}")


@dataclass(frozen=True)
class Tolerance:
    """exact: ==; elementwise: |d| <= atol + rtol*|ref|; scaled: |d| <= atol + rtol*scale;
    e4m3_step: every e4m3 code within `steps` adjacent codes of the reference's code."""

    kind: str
    rtol: float = 0.0
    atol: float = 0.0
    steps: int = 1


@dataclass(frozen=True)
class Buffer:
    name: str
    dtype: str
    count: str | int
    role: str
    tolerance: Tolerance | None = None


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: tuple[str | int, ...]
    block: tuple[str | int, ...]
    shared_bytes: str | int
    args: tuple[str, ...]
    cooperative: bool = False


@dataclass(frozen=True)
class Candidate:
    """The starting kernel, a rewrite or a deliberately wrong variant."""

    id: str
    role: str  # "start" | "rewrite" | "wrong"
    path: Path
    source: str
    launches: tuple[Launch, ...]
    zero_before: tuple[str, ...] = ()
    text: str = ""  # option text for rewrites, the defect for wrong variants
    signatures: Mapping[str, KernelSignature] = field(default_factory=dict, compare=False)
    allow_local: bool = False  # the family declares this candidate's local memory on purpose
    allow_spills: bool = False  # spills by design: ptxas spill bytes are recorded instead of failing
    faults: str = ""  # a wrong variant that faults (how): the GPU gate runs it in its own process

    @property
    def code(self) -> str:
        """The source as a model sees it: comments stripped."""
        return strip_comments(self.source)


@dataclass(frozen=True)
class SlipCues:
    """A data group's `[slip]`: metrics added to the capture, and the rows that carry the
    hidden property, which the ablated condition deletes (regexes on row names, rule ids, rule text)."""

    extra_metrics: tuple[str, ...] = ()
    cue_metrics: tuple[str, ...] = ()
    cue_rules: tuple[str, ...] = ()
    cue_rule_text: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    name: str
    path: Path
    computes: str
    bound: str
    constraints: tuple[str, ...]
    timing: Mapping[str, Number]
    gate: tuple[Mapping[str, Number], ...]
    tiny: tuple[Mapping[str, Number], ...]
    params: Mapping[str, Number]
    buffers: tuple[Buffer, ...]
    start: Candidate
    rewrites: tuple[Candidate, ...]
    wrong: tuple[Candidate, ...]
    intended_winner: str
    intended_reasoning: str
    set: str = DEFAULT_SET
    profile_checks: tuple[ProfileCheck, ...] = ()  # claims about the binary (plugins/family/profile_checks.py)
    targets: tuple[str, ...] = ARCHS  # compiled and profiled for these: ARCHS at or above `needs`
    l2_per_gpu: Mapping[str, str] = field(default_factory=dict)  # [sizes.l2_per_gpu]
    needs: str = "8.0"  # the lowest compute capability every candidate runs on ([needs] in family.toml)
    needs_why: str = ""  # what needs it ("thread block clusters"), "" at the floor
    gpu_gate_only: Mapping[str, str] = field(default_factory=dict)  # candidate id -> why the emulator cannot gate it
    pair: str = ""  # the family sharing this one's kernel sources, differing only in shape
    group: tuple[str, ...] = ()  # a data group's members, this one included (diagnose set)
    data: Mapping[str, Any] = field(default_factory=dict)  # make_inputs' third argument: the hidden property
    slip: SlipCues | None = None  # the rows of the start's slip that carry the hidden property
    intended_cue: str = ""  # what the slip shows for this member, in words (never shown to a model)

    @property
    def group_id(self) -> str:
        """A data group's id, its members joined by '+' in their declared order ("" outside a group).
        Why the names: a score record then says which items form the group, with nothing else to read."""
        return "+".join(self.group)

    @property
    def pair_id(self) -> str:
        """A shape pair's id, both names sorted and joined by '+' ("" outside a pair)."""
        return "+".join(sorted((self.name, self.pair))) if self.pair else ""

    def make_inputs(self, rng: Any, shape: Mapping[str, Number]) -> dict[str, Any]:
        """The reference's inputs for `shape`; a data group's member also passes its `[data]`."""
        module = self.reference_module()
        return module.make_inputs(rng, dict(shape), dict(self.data)) if self.group else module.make_inputs(rng, dict(shape))

    def targets_gpu(self, compute_capability: str) -> bool:
        """Whether a GPU of compute capability "8.9" can run every candidate (cc >= `needs`)."""
        return needs_mod.parse_cc(compute_capability) >= needs_mod.parse_cc(self.needs)

    @property
    def needs_text(self) -> str:
        """'compute capability 9.0 (thread block clusters)': the skip reason's middle."""
        return f"compute capability {self.needs}" + (f" ({self.needs_why})" if self.needs_why else "")

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        """What gets timed: the start, then the rewrites in forward option order."""
        return (self.start, *self.rewrites)

    @property
    def all_candidates(self) -> tuple[Candidate, ...]:
        return (self.start, *self.rewrites, *self.wrong)

    def candidate(self, cid: str) -> Candidate:
        for c in self.all_candidates:
            if c.id == cid:
                return c
        raise KeyError(f"{self.name} has no candidate {cid!r}")

    def buffer(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    @property
    def outputs(self) -> tuple[Buffer, ...]:
        return tuple(b for b in self.buffers if b.role == "output")

    def shape(self, sizes: Mapping[str, Number]) -> dict[str, Number]:
        """Params as defaults, overridden by a size set's own entries."""
        return {**self.params, **sizes}

    def shapes(self, kind: str) -> tuple[dict[str, Number], ...]:
        if kind == "timing":
            return (self.shape(self.timing),)
        return tuple(self.shape(s) for s in getattr(self, kind))

    def buffer_counts(self, shape: Mapping[str, Number]) -> dict[str, int]:
        return {b.name: evaluate_int(b.count, shape) for b in self.buffers}

    def resolve(self, cand: Candidate, shape: Mapping[str, Number], sm_count: int) -> tuple[ResolvedLaunch, ...]:
        """Concrete launches for one shape on a GPU with `sm_count` SMs."""
        names = {**shape, "sm_count": sm_count}
        out = []
        for launch in cand.launches:
            sig = cand.signatures[launch.kernel]
            args: list[BufferArg | ScalarArg] = []
            for p, a in zip(sig.params, launch.args):
                if p.pointer:
                    args.append(BufferArg(a))
                else:
                    args.append(ScalarArg(a, p.ctype, shape[a]))
            out.append(
                ResolvedLaunch(
                    kernel=launch.kernel,
                    grid=dims3(tuple(evaluate_int(g, names) for g in launch.grid)),
                    block=dims3(tuple(evaluate_int(b, names) for b in launch.block)),
                    shared_bytes=evaluate_int(launch.shared_bytes, names),
                    args=tuple(args),
                    cooperative=launch.cooperative,
                )
            )
        return tuple(out)

    def reference_module(self) -> ModuleType:
        return load_reference(self.path / "reference.py")


# --------------------------------------------------------------------------- loading


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def read_text(path: Path) -> str:
    """A family file as UTF-8 text, or one FamilyError naming the first bad byte."""
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        raise FamilyError(_rel(path), "", "starts with a UTF-8 byte-order mark (bytes EF BB BF), which TOML, NVRTC "
                          "and the prompts do not expect", "save the file as UTF-8 without a BOM", 1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FamilyError(
            _rel(path), "", f"byte 0x{data[exc.start]:02X} at byte offset {exc.start} (line {line}, column {column}) "
            f"is not UTF-8", "save the file as UTF-8 (or replace that character with ASCII)", line,
        ) from None


def _check_fields(table: Mapping[str, Any], allowed: set[str], required: set[str], file: str, where: str) -> None:
    for key in table:
        if key not in allowed:
            raise FamilyError(file, f"{where}{key}", f"unknown field {key!r}", f"use one of {sorted(allowed)}")
    for key in sorted(required):
        if key not in table:
            how = f"a [[{where.split('[')[0].rstrip('.')}.launch]] table" if key == "launch" else _TABLE_FIELDS.get(key, repr(key + " = ..."))
            raise FamilyError(file, f"{where}{key}", "missing required field", f"add {how}")


# Required fields that are tables: how to add one (families/README.md, family.toml).
_TABLE_FIELDS = {
    "sizes": "[sizes.timing], [[sizes.gate]] and [[sizes.tiny]] tables", "buffers": "a [buffers.NAME] table",
    "start": "a [start] table with file = \"kernel.cu\" and its [[start.launch]]",
    "rewrites": "four [[rewrites]] tables", "wrong": "at least one [[wrong]] table (and its file under wrong/)",
    "intended": "an [intended] table with winner and reasoning",
    "timing": "a [sizes.timing] table", "gate": "one to three [[sizes.gate]] tables",
    "tiny": "one to three [[sizes.tiny]] tables",
}


def _expect(value: Any, kind: type | tuple[type, ...], file: str, field_: str, what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise FamilyError(file, field_, f"expected {what}, got {type(value).__name__} {value!r}", f"write {what}")
    return value


def load_reference(path: Path) -> ModuleType:
    """Import a family's reference.py under a private module name."""
    name = f"sparktrace_reference_{path.parent.name}"
    read_text(path)  # a non-UTF-8 byte: named with its offset, not as a SyntaxError
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FamilyError(_rel(path), "", "cannot be imported", "make it a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a family's own code: report it, never crash collection
        line = _reference_line(path, exc)
        raise FamilyError(_rel(path), "", f"import failed: {type(exc).__name__}: {_exc_text(exc)}",
                          "fix that line (python " + _rel(path) + " shows the full traceback)", line) from None
    for fn in REFERENCE_FUNCS:
        if not callable(getattr(module, fn, None)):
            raise FamilyError(_rel(path), fn, "function is missing", f"define {fn}(...) as documented in families/README.md")
    sys.modules.setdefault(name, module)
    return module


def _check_reference(fam: Family, module: ModuleType) -> None:
    """make_inputs, reference, naive (and error_scale) keep their contract on the first tiny size set.

    Why at load time: a wrong key, dtype or length otherwise fails every gate
    case of the family with a bare KeyError, once per candidate.
    """
    import numpy as np

    from plugins.family.dtypes import np_dtype

    path = fam.path / "reference.py"
    rel, where = _rel(path), "sizes.tiny[0]"
    shape = fam.shapes("tiny")[0]
    counts = fam.buffer_counts(shape)
    doc = "families/README.md, 'reference.py'"
    inputs = _call_reference(module, path, "make_inputs", where, shape, np.random.default_rng(0), dict(shape),
                             *((dict(fam.data),) if fam.group else ()))
    want = sorted(b.name for b in fam.buffers if b.role == "input")
    if not isinstance(inputs, dict) or sorted(inputs) != want:
        got = sorted(inputs) if isinstance(inputs, dict) else type(inputs).__name__
        raise FamilyError(rel, "make_inputs", f"returns {got}, but the input buffers are {want}",
                          f"return a dict with one array per input buffer ({doc})", _def_line(module, "make_inputs"))
    for name in want:
        arr, b = np.asarray(inputs[name]), fam.buffer(name)
        if arr.dtype != np_dtype(b.dtype):
            raise FamilyError(rel, "make_inputs", f"returns {name} as {arr.dtype}, but [buffers.{name}] is {b.dtype}",
                              f"return it as {b.dtype} (.astype({_dtype_spelling(np_dtype(b.dtype))}))",
                              _def_line(module, "make_inputs"))
        if arr.size != counts[name]:
            raise FamilyError(rel, "make_inputs", f"returns {arr.size} elements of {name} for {where} {shape}, but its "
                              f"count {b.count!r} is {counts[name]}", "return exactly count elements", _def_line(module, "make_inputs"))
    scaled = sorted(b.name for b in fam.outputs if b.tolerance is not None and b.tolerance.kind == "scaled")
    outs = sorted(b.name for b in fam.outputs)
    for fn, keys in (("reference", outs), ("naive", outs), *((("error_scale", scaled),) if scaled else ())):
        if not callable(getattr(module, fn, None)):
            raise FamilyError(rel, fn, f"function is missing (the tolerance of {scaled} is scaled)",
                              f"define {fn}(inputs, shape) ({doc})")
        copies = {k: np.array(v, copy=True) for k, v in inputs.items()}  # a reference that writes its inputs harms no one
        out = _call_reference(module, path, fn, where, shape, copies, dict(shape))
        missing = [k for k in keys if not isinstance(out, dict) or k not in out]
        if missing:
            got = sorted(out) if isinstance(out, dict) else type(out).__name__
            raise FamilyError(rel, fn, f"returns {got}, which lacks {missing}",
                              f"return a dict with one array per output buffer {keys} ({doc})", _def_line(module, fn))
        for k in keys if fn != "error_scale" else ():
            size = np.asarray(out[k]).size
            if size != counts[k]:
                raise FamilyError(rel, fn, f"returns {size} elements of {k} for {where} {shape}, but its count "
                                  f"{fam.buffer(k).count!r} is {counts[k]}", "return one value per element of the output",
                                  _def_line(module, fn))


def _def_line(module: ModuleType, fn: str) -> int | None:
    """The line of `def fn` in reference.py, for an error about what it returns."""
    code = getattr(getattr(module, fn, None), "__code__", None)
    return code.co_firstlineno if code is not None else None


def _dtype_spelling(dt: Any) -> str:
    """How reference.py names a dtype: np.float32, ml_dtypes.bfloat16."""
    module = dt.type.__module__.split(".")[0]
    return f"{'np' if module == 'numpy' else module}.{dt.type.__name__}"


def _call_reference(module: ModuleType, path: Path, fn: str, where: str, shape: Mapping[str, Any], *args: Any) -> Any:
    """A reference.py function called on a tiny size set; its exception becomes one FamilyError at its line."""
    try:
        return getattr(module, fn)(*args)
    except Exception as exc:  # a family's own code: report it with its line, never crash collection
        hint = f" (shape holds {sorted(shape)})" if isinstance(exc, KeyError) else ""
        raise FamilyError(_rel(path), fn, f"raised {type(exc).__name__}: {_exc_text(exc)} for {where} {dict(shape)}{hint}",
                          "fix that line (families/README.md, 'reference.py')", _reference_line(path, exc)) from None


def _reference_line(path: Path, exc: BaseException) -> int | None:
    """The line of `path` where importing it failed: the innermost frame in that file."""
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == path.resolve():
        return exc.lineno
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename and Path(frame.filename).resolve() == path.resolve():
            line = frame.lineno
    return line


def _exc_text(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return exc.msg
    return " ".join(str(exc).split()) or "(no message)"


def _l2_per_gpu(raw: Mapping[str, Any], file: str) -> dict[str, str]:
    tbl = _expect(raw.get("l2_per_gpu", {}), dict, file, "sizes.l2_per_gpu", '[sizes.l2_per_gpu] B200 = "..."')
    out = {}
    for gpu, text in tbl.items():
        if gpu not in GPU_L2_BYTES:
            raise FamilyError(file, f"sizes.l2_per_gpu.{gpu}", "is not a GPU the L2 rule knows", f"use one of {sorted(GPU_L2_BYTES)}")
        text = _expect(text, str, file, f"sizes.l2_per_gpu.{gpu}", "a statement").strip()
        if not text:
            raise FamilyError(file, f"sizes.l2_per_gpu.{gpu}", "is empty", "say what the working set means on that GPU")
        out[gpu] = text
    return out


def _size_sets(raw: Any, file: str) -> tuple[dict, tuple[dict, ...], tuple[dict, ...]]:
    _expect(raw, dict, file, "sizes", "a [sizes] table")
    _check_fields(raw, SIZES_FIELDS | SIZES_OPTIONAL, SIZES_FIELDS, file, "sizes.")
    timing = _expect(raw["timing"], dict, file, "sizes.timing", "a [sizes.timing] table")
    sets = {}
    for kind in ("gate", "tiny"):
        val = raw[kind]
        if isinstance(val, dict):
            val = [val]
        _expect(val, list, file, f"sizes.{kind}", f"one or more [[sizes.{kind}]] tables")
        if not 1 <= len(val) <= 3:
            raise FamilyError(file, f"sizes.{kind}", f"has {len(val)} entries", "declare 1 to 3")
        sets[kind] = tuple(_expect(v, dict, file, f"sizes.{kind}[{i}]", "a table") for i, v in enumerate(val))
    for key, value in timing.items():
        _expect(value, int, file, f"sizes.timing.{key}", "an integer size")
    return dict(timing), sets["gate"], sets["tiny"]


def _launches(raw: Any, file: str, where: str) -> tuple[Launch, ...]:
    if isinstance(raw, dict):
        raw = [raw]
    _expect(raw, list, file, where, "one or more [[...launch]] tables")
    if not raw:
        raise FamilyError(file, where, "the launch plan is empty", "add at least one launch")
    out = []
    for i, lt in enumerate(raw):
        w = f"{where}[{i}]."
        _expect(lt, dict, file, w[:-1], "a table")
        _check_fields(lt, LAUNCH_FIELDS, {"kernel", "grid", "block", "args"}, file, w)
        grid = lt["grid"] if isinstance(lt["grid"], list) else [lt["grid"]]
        block = lt["block"] if isinstance(lt["block"], list) else [lt["block"]]
        for name, dims in (("grid", grid), ("block", block)):
            if not 1 <= len(dims) <= 3:
                raise FamilyError(file, w + name, f"has {len(dims)} dimensions", "give 1 to 3")
            for d in dims:
                _expect(d, (int, str), file, w + name, "integers or expressions")
        args = _expect(lt["args"], list, file, w + "args", "a list of names")
        for a in args:
            _expect(a, str, file, w + "args", "a list of names")
        out.append(
            Launch(
                kernel=_expect(lt["kernel"], str, file, w + "kernel", "a kernel name"),
                grid=tuple(grid),
                block=tuple(block),
                shared_bytes=_expect(lt.get("shared_bytes", 0), (int, str), file, w + "shared_bytes", "an integer or expression"),
                args=tuple(args),
                cooperative=_expect(lt.get("cooperative", False), bool, file, w + "cooperative", "true or false"),
            )
        )
    return tuple(out)


def _candidate(fam_dir: Path, raw: Mapping[str, Any], role: str, where: str, file: str) -> Candidate:
    required = {"file", "launch"} | ({"id"} if role != "start" else set())
    required |= {"text"} if role == "rewrite" else ({"defect"} if role == "wrong" else set())
    allowed = set(CANDIDATE_FIELDS)
    if role == "start":
        allowed -= {"id", "text", "defect", "faults"}
    elif role == "rewrite":
        allowed -= {"defect", "faults"}
    else:
        allowed -= {"text"}
    _check_fields(raw, allowed, required, file, where)
    cid = "start" if role == "start" else _expect(raw["id"], str, file, where + "id", "an id")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", cid):
        raise FamilyError(file, where + "id", f"id {cid!r} is not lower snake case", "use letters, digits and _")
    rel = _expect(raw["file"], str, file, where + "file", "a path relative to the family")
    path = fam_dir / rel
    expected_dir = {"start": "", "rewrite": "rewrites", "wrong": "wrong"}[role]
    if role == "start" and rel != "kernel.cu":
        raise FamilyError(file, where + "file", f"is {rel!r}", "the starting kernel is kernel.cu")
    if role != "start" and Path(rel).parent.as_posix() != expected_dir:
        raise FamilyError(file, where + "file", f"{rel!r} is not under {expected_dir}/", f"move it to {expected_dir}/")
    if path.is_symlink():
        raise FamilyError(_rel(path), "", "is a symbolic link", f"copy the file into {expected_dir or 'the family'}/ as a regular file (a family is self-contained)")
    try:
        path.resolve().relative_to(fam_dir.resolve())
    except ValueError:
        raise FamilyError(file, where + "file", f"{rel!r} lies outside the family directory",
                          f"put the file under {fam_dir.name}/{expected_dir or ''} and name it relative to the family") from None
    if not path.is_file():
        raise FamilyError(_rel(path), "", "file is missing", f"create it or correct '{where}file' in family.toml")
    source = read_text(path)
    try:
        check_brackets(source)
    except SourceError as exc:
        raise FamilyError(_rel(path), "", str(exc), "add or remove the bracket so that every (, [ and { is closed", exc.line) from None
    if not source.strip():
        raise FamilyError(_rel(path), "", "file is empty", f"write the kernel(s) that '{where}launch' runs")
    for line, kind, what in restricted_constructs(source):
        if kind == "not_extern_c":
            raise FamilyError(_rel(path), "", f"uses {what}, so NVRTC mangles its name", 'declare every entry point as extern "C" __global__ void kN(...)', line)
    try:
        sigs = kernel_signatures(source)
    except SourceError as exc:
        raise FamilyError(_rel(path), "", str(exc), exc.fix or 'declare kernels as extern "C" __global__ void name(...)', exc.line) from None
    markers = surviving_comment_markers(source) if role != "wrong" else []  # only start and rewrites reach a prompt
    if markers:
        line, marker, text = markers[0]
        fix = ("C++ comments do not nest: the first '*/' ends the comment, so remove the inner '/*' or the extra '*/'"
               if marker == "*/" and '"' not in text else
               "move that text out of the string literal, or report the stripping bug")
        raise FamilyError(
            _rel(path), "", f"{marker!r} survives comment stripping in {text!r}, so the prompt would show it", fix, line,
        )
    text = raw.get("text", raw.get("defect", ""))
    _expect(text, str, file, where + ("text" if role == "rewrite" else "defect"), "a string")
    zero = _expect(raw.get("zero_before", []), list, file, where + "zero_before", "a list of buffer names")
    allow_local = _expect(raw.get("allow_local", False), bool, file, where + "allow_local", "true or false")
    return Candidate(
        id=cid,
        role=role,
        path=path,
        source=source,
        launches=_launches(raw["launch"], file, where + "launch"),
        zero_before=tuple(zero),
        text=text.strip(),
        signatures=sigs,
        allow_local=allow_local,
        allow_spills=_expect(raw.get("allow_spills", False), bool, file, where + "allow_spills", "true or false"),
        faults=_faults(raw, file, where),
    )


def _faults(raw: Mapping[str, Any], file: str, where: str) -> str:
    text = _expect(raw.get("faults", ""), str, file, where + "faults", "a string: how the variant faults").strip()
    if "faults" in raw and not text:
        raise FamilyError(file, where + "faults", "is empty", "say how the variant faults (what it reads or writes out of "
                          "bounds), or remove the field if it does not fault")
    return text


def _profile_checks(raw: Any, cands: tuple[Candidate, ...], file: str) -> tuple[ProfileCheck, ...]:
    try:
        return parse_profile_checks(raw, {c.id: tuple(c.signatures) for c in cands})
    except CheckSpecError as exc:
        raise FamilyError(file, f"profile_checks{exc.field}", exc.problem, exc.fix) from None


def _leaks(text: str) -> list[str]:
    """Listed words (as word prefixes) and ratio claims ("2x", "half the time") in `text`."""
    low = text.lower()
    found = {w for w in LEAK_WORDS if re.search(r"\b" + re.escape(w), low)}
    found |= {m.group(0) for p in LEAK_PATTERNS for m in p.finditer(text)}
    return sorted(found)


def _name_leaks(names: Iterable[str]) -> list[str]:
    """Names (buffers, sizes, params) with a listed identifier segment."""
    return sorted({n for n in names for part in re.split(r"_+|(?<=[a-z0-9])(?=[A-Z])", n) if part.lower() in IDENT_LEAK_SEGMENTS})


def _identifier_leaks(code: str) -> list[str]:
    code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
    found = set()
    for ident in set(re.findall(r"[A-Za-z_]\w*", code)):
        parts = re.split(r"_+|(?<=[a-z0-9])(?=[A-Z])", ident)
        for part in parts:
            if part.lower() in IDENT_LEAK_SEGMENTS:
                found.add(ident)
    return sorted(found)


def _validate_plan(fam: Family, cand: Candidate, file: str, where: str) -> None:
    buffers = {b.name: b for b in fam.buffers}
    scalars = set(fam.params) | set(fam.timing)
    for i, launch in enumerate(cand.launches):
        w = f"{where}launch[{i}]."
        sig = cand.signatures.get(launch.kernel)
        if sig is None:
            raise FamilyError(
                file, w + "kernel",
                f"names kernel {launch.kernel!r}, which {_rel(cand.path)} does not define "
                f"(it defines: {', '.join(cand.signatures) or 'nothing'})",
                'name a kernel the source defines as extern "C" __global__',
            )
        if len(sig.params) != len(launch.args):
            raise FamilyError(
                file, w + "args",
                f"passes {len(launch.args)} arguments {list(launch.args)} but {launch.kernel} takes "
                f"{len(sig.params)} ({', '.join(p.name for p in sig.params)})",
                "list one name per kernel parameter, in order",
            )
        for p, a in zip(sig.params, launch.args):
            if p.pointer:
                if a not in buffers:
                    raise FamilyError(file, w + "args", f"{a!r} is passed to pointer parameter {p.name} but is not a buffer", f"declare [buffers.{a}] or pass a buffer")
                b = buffers[a]
                if p.dtype != b.dtype:
                    raise FamilyError(file, w + "args", f"buffer {a} is {b.dtype} but {launch.kernel}'s {p.name} is {p.ctype}*", "make the dtype and the parameter type agree")
                if b.role == "input" and not p.const:
                    raise FamilyError(file, w + "args", f"input buffer {a} is passed to non-const {launch.kernel}({p.name}); inputs are never written", f"declare {p.name} as const")
            else:
                if p.ctype in POINTER_ONLY_CTYPES:
                    raise FamilyError(file, w + "args", f"{launch.kernel}'s scalar parameter {p.name} is {p.ctype}, which is passed only through buffers", "take a float (or int) and convert inside the kernel")
                if a not in scalars:
                    raise FamilyError(file, w + "args", f"{a!r} is passed to scalar parameter {p.name} but is neither a size nor a param", "pass a name from [sizes.timing] or [params]")
                value = fam.timing.get(a, fam.params.get(a))
                if p.ctype in ("float", "double") and not isinstance(value, (int, float)):
                    raise FamilyError(file, w + "args", f"{a} is not a number", "give it a numeric value")
                if p.ctype not in ("float", "double") and not isinstance(value, int):
                    raise FamilyError(file, w + "args", f"{a} = {value!r} is passed to integer parameter {p.ctype} {p.name}", "pass an integer size or param")
    launched = {launch.kernel for launch in cand.launches}
    for kname in cand.signatures:
        if kname not in launched:
            raise FamilyError(
                _rel(cand.path), "", f"defines entry point {kname}, which no launch of [{where[:-1]}] runs, so the prompt "
                "would show code that never runs", f"remove {kname}, or add a launch of it to [{where[:-1]}] in family.toml",
                _first_line(cand.source, kname),
            )
    for i, launch in enumerate(cand.launches):
        cluster = cand.signatures[launch.kernel].cluster
        if cluster is None:
            continue
        w = f"{where}launch[{i}]"
        size = cluster[0] * cluster[1] * cluster[2]
        if size > MAX_CLUSTER:
            raise FamilyError(file, w + ".kernel", f"{launch.kernel} declares __cluster_dims__{cluster}, {size} CTAs per cluster", f"use at most {MAX_CLUSTER} (the portable cluster size)")
        if launch.cooperative:
            raise FamilyError(file, w + ".cooperative", f"{launch.kernel} is a cluster kernel (__cluster_dims__{cluster}) launched cooperatively", "launch cluster kernels with a plain launch")
        for kind in ("timing", "gate", "tiny"):
            for k, shape in enumerate(fam.shapes(kind)):
                for sm in SM_COUNTS_CHECKED:
                    try:
                        grid = fam.resolve(cand, shape, sm)[i].grid
                    except (ExprError, KeyError, ZeroDivisionError, TypeError):
                        continue  # reported below with its reason
                    if any(g % c for g, c in zip(grid, cluster)):
                        raise FamilyError(file, w + ".grid", f"grid {grid} for sizes.{kind}[{k}] is not a multiple of {launch.kernel}'s __cluster_dims__{cluster}", "make every grid dimension a multiple of the cluster's")
    for z in cand.zero_before:
        if z not in buffers:
            raise FamilyError(file, where + "zero_before", f"{z!r} is not a buffer", "name a declared buffer")
    for kind in ("timing", "gate", "tiny"):
        for k, shape in enumerate(fam.shapes(kind)):
            for sm in SM_COUNTS_CHECKED:
                names = {**shape, "sm_count": sm}
                for i, launch in enumerate(cand.launches):
                    w = f"{where}launch[{i}]"
                    for fname, exprs in (("grid", launch.grid), ("block", launch.block), ("shared_bytes", (launch.shared_bytes,))):
                        for e in exprs:
                            try:
                                evaluate_int(e, names)
                            except (ExprError, ZeroDivisionError, TypeError, OverflowError) as exc:
                                raise FamilyError(file, f"{w}.{fname}", f"cannot be evaluated for sizes.{kind}[{k}]: {exc}", _expr_fix(exc)) from None
                try:
                    resolved = fam.resolve(cand, shape, sm)  # once per shape and SM count, not once per launch
                except (ExprError, KeyError, ZeroDivisionError, TypeError) as exc:
                    raise FamilyError(file, f"{where}launch", f"cannot be evaluated for sizes.{kind}[{k}]: {exc}", "use names from [sizes] and [params], or sm_count") from None
                for i, (launch, r) in enumerate(zip(cand.launches, resolved)):
                    w = f"{where}launch[{i}]"
                    if r.threads_per_block > MAX_THREADS or any(b > m for b, m in zip(r.block, MAX_BLOCK)):
                        raise FamilyError(file, w + ".block", f"block {r.block} exceeds CUDA's limits for sizes.{kind}[{k}]", "use at most 1024 threads per block")
                    if any(b < 1 for b in r.block):
                        raise FamilyError(file, w + ".block", f"block {r.block} has a dimension below 1 for sizes.{kind}[{k}]", "use 1 to 1024 threads per block")
                    if any(g < 1 for g in r.grid) or any(g > m for g, m in zip(r.grid, MAX_GRID)):
                        raise FamilyError(file, w + ".grid", f"grid {r.grid} is outside CUDA's limits for sizes.{kind}[{k}] with {sm} SMs", "keep every grid dimension >= 1, y and z <= 65535")
                    if not 0 <= r.shared_bytes <= MAX_DYNAMIC_SHARED:
                        raise FamilyError(file, w + ".shared_bytes", f"{r.shared_bytes} bytes for sizes.{kind}[{k}]", "use 0 to 49152 bytes of dynamic shared memory")
                    for arg in r.args:
                        lo_hi = _INT_RANGES.get(CTYPE_DTYPES.get(getattr(arg, "ctype", ""), ""))
                        if lo_hi and not lo_hi[0] <= arg.value <= lo_hi[1]:
                            raise FamilyError(
                                file, w + ".args", f"{arg.name} = {arg.value} at sizes.{kind}[{k}] does not fit the "
                                f"{arg.ctype} parameter of {launch.kernel}",
                                "declare that parameter long long (families/README.md, 'Pointer and scalar types'), "
                                "or use a smaller size")


def _expr_fix(exc: Exception) -> str:
    """How to correct a launch expression, by what went wrong with it."""
    text = str(exc)
    if isinstance(exc, ZeroDivisionError):
        return "keep every divisor non-zero at every size set (sizes.timing, gate and tiny)"
    if "not an integer" in text:
        return "divide with // or cdiv(a, b): a launch dimension is an integer"
    if "unknown name" in text:
        return "use names from [sizes.timing] and [params], or sm_count"
    if "cannot parse" in text:
        return "correct the expression's syntax (families/README.md: integers, sizes, params, cdiv, min, max)"
    return "use + - * // %, cdiv(a, b), min and max over sizes, params and sm_count"


_INT_RANGES = {
    "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1),
    "uint64": (0, 2**64 - 1), "uint8": (0, 255),
}


def _needs(raw: Mapping[str, Any], file: str, cands: tuple["Candidate", ...]) -> tuple[str, str, tuple[str, ...]]:
    """[needs] checked against the code: (compute capability, why, targets).

    A candidate using a feature above the declared level is one error naming its
    file and line; a level above what any code shows must say why.
    """
    if "targets" in raw:
        raise FamilyError(file, "targets", "lists chips; a family now declares what it needs",
                          'remove targets; add [needs] compute_capability = "9.0" if a candidate needs more than 8.0')
    tbl = _expect(raw.get("needs", {}), dict, file, "needs", '[needs] compute_capability = "9.0"')
    _check_fields(tbl, NEEDS_FIELDS, set(), file, "needs.")
    text = _expect(tbl.get("compute_capability", needs_mod.cc_text(needs_mod.FLOOR)), str, file,
                   "needs.compute_capability", 'a string such as "9.0"')
    try:
        cc = needs_mod.parse_cc(text)
    except ValueError as exc:
        raise FamilyError(file, "needs.compute_capability", str(exc), 'write it as "8.0", "8.9" or "9.0"') from None
    targets = tuple(a for a in ARCHS if needs_mod.arch_cc(a) >= cc)
    if cc < needs_mod.FLOOR or not targets:
        raise FamilyError(file, "needs.compute_capability", f"is {text}",
                          f"use a level from {needs_mod.cc_text(needs_mod.FLOOR)} to {needs_mod.cc_text(needs_mod.arch_cc(ARCHS[-1]))} "
                          f"(the targets are {list(ARCHS)})")
    why = _expect(tbl.get("why", ""), str, file, "needs.why", "what needs it, e.g. \"thread block clusters\"").strip()
    found, worst = [], None
    for c in cands:
        got = needs_mod.uses(c.source)
        found.append(got)
        for u in got:
            if u.feature.what in needs_mod.ARCH_SPECIFIC:
                raise FamilyError(_rel(c.path), "", f"uses {u.feature.what} (`{u.text[:60]}`), which runs on one "
                                  "chip only", "use portable instructions (every target must run every candidate)", line=u.line)
        top = needs_mod.highest(got)
        if top is not None and top.feature.cc > cc and (worst is None or top.feature.cc > worst[1].feature.cc):
            worst = (c, top)
    if worst is not None:
        c, top = worst
        raise FamilyError(_rel(c.path), "", f"uses {top.feature.what} (`{top.text[:60]}`), which needs compute "
                          f"capability {needs_mod.cc_text(top.feature.cc)}; the family declares {text}",
                          f'declare [needs] compute_capability = "{needs_mod.cc_text(top.feature.cc)}" in {file}, '
                          "or write the candidate without it", line=top.line)
    why = needs_mod.reason(cc, why, found)
    if cc > needs_mod.FLOOR and not why:
        raise FamilyError(file, "needs.why", f"is missing: compute capability {text} is above what any candidate's "
                          f"code shows ({needs_mod.cc_text(needs_mod.FLOOR)})", "say what needs it, or lower needs.compute_capability")
    return needs_mod.cc_text(cc), why if cc > needs_mod.FLOOR else "", targets


def _hard_fields(raw: Mapping[str, Any], file: str, name: str, ids: list[str]) -> tuple[dict[str, str], str]:
    """gpu_gate_only and pair: optional fields, read and checked on their own."""
    gpu_only: dict[str, str] = {}
    for i, entry in enumerate(_expect(raw.get("gpu_gate_only", []), list, file, "gpu_gate_only", '[{ id = "...", why = "..." }]')):
        w = f"gpu_gate_only[{i}]."
        _expect(entry, dict, file, w[:-1], '{ id = "...", why = "..." }')
        _check_fields(entry, {"id", "why"}, {"id", "why"}, file, w)
        cid = _expect(entry["id"], str, file, w + "id", "a candidate id")
        why = _expect(entry["why"], str, file, w + "why", "the reason the emulator cannot gate it").strip()
        if cid not in ids:
            raise FamilyError(file, w + "id", f"{cid!r} is not a candidate of {name}", f"use one of {ids}")
        if cid in gpu_only:
            raise FamilyError(file, w + "id", f"{cid!r} is listed twice", "list each candidate once")
        if not why:
            raise FamilyError(file, w + "why", "is empty", "say what the emulator cannot run (e.g. inline PTX mma)")
        gpu_only[cid] = why
    pair = _expect(raw.get("pair", ""), str, file, "pair", "the name of the family sharing this one's kernels")
    if pair and (pair == name or not re.fullmatch(r"[a-z][a-z0-9_]*", pair)):
        raise FamilyError(file, "pair", f"is {pair!r}", "name the other family of the pair (a directory under families/)")
    return gpu_only, pair


_METRIC_NAME = re.compile(r"[a-z0-9]+__[a-z0-9_]+(\.[a-z0-9_]+)+")


def _group_fields(raw: Mapping[str, Any], file: str, name: str, fam_set: str) -> tuple[tuple[str, ...], dict[str, Any], SlipCues | None, str]:
    """group, [data], [slip] and intended.cue: a data group's declaration (diagnose set only).

    Why one set: a data group is a question only a slip can answer, so it must be asked
    with its cue rows named (the ablation deletes them) and never mixed into sets whose
    third condition deletes the bank-conflict rows.
    """
    has = [k for k in ("group", "data", "slip") if k in raw]
    cue = raw.get("intended", {}).get("cue", "") if isinstance(raw.get("intended"), dict) else ""
    if fam_set != DIAGNOSE_SET:
        if has:
            raise FamilyError(file, has[0], f"belongs to a data group, but the family is in set {fam_set!r}",
                              f'put data groups in set = "{DIAGNOSE_SET}", or remove {has}')
        if cue:
            raise FamilyError(file, "intended.cue", f"is for data groups, but the family is in set {fam_set!r}", "remove it")
        return (), {}, None, ""
    for key, how in (("group", 'group = ["this_family", "its_partner"]'), ("data", "a [data] table naming the generator and its parameters"),
                     ("slip", "a [slip] table with cue_metrics (families/README.md, 'Data groups')")):
        if key not in raw:
            raise FamilyError(file, key, f"missing: every {DIAGNOSE_SET} family is a member of a data group", f"add {how}")
    group = _expect(raw["group"], list, file, "group", "a list of the group's family names, this one included")
    if len(group) not in GROUP_SIZES or len(set(group)) != len(group):
        raise FamilyError(file, "group", f"is {group}", f"name {GROUP_SIZES[0]} or {GROUP_SIZES[-1]} distinct families, this one included")
    for member in group:
        if not isinstance(member, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", member):
            raise FamilyError(file, "group", f"{member!r} is not a family name", "name family directories under families/")
    if name not in group:
        raise FamilyError(file, "group", f"{group} does not name {name!r}", "list every member, this one included, in the same order in each member")
    data = _expect(raw["data"], dict, file, "data", "a [data] table")
    if not isinstance(data.get("generator"), str) or not data["generator"].strip():
        raise FamilyError(file, "data.generator", "missing or empty", 'name the input distribution, e.g. generator = "power_law"')
    for key, value in data.items():
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(v, (str, int, float, bool)) for v in items):
            raise FamilyError(file, f"data.{key}", f"is {value!r}", "use a string, a number, a boolean or a list of them")
    slip = _expect(raw["slip"], dict, file, "slip", "a [slip] table")
    _check_fields(slip, SLIP_FIELDS, {"cue_metrics"}, file, "slip.")
    lists: dict[str, tuple[str, ...]] = {}
    for key in sorted(SLIP_FIELDS):
        values = _expect(slip.get(key, []), list, file, f"slip.{key}", "a list of strings")
        for i, v in enumerate(values):
            _expect(v, str, file, f"slip.{key}[{i}]", "a string")
            if key == "extra_metrics" and not _METRIC_NAME.fullmatch(v):
                raise FamilyError(file, f"slip.{key}[{i}]", f"{v!r} is not an ncu metric name", "write it as ncu names it, e.g. smsp__inst_executed.sum")
            if key in ("cue_metrics", "cue_rule_text"):
                try:
                    re.compile(v)
                except re.error as exc:
                    raise FamilyError(file, f"slip.{key}[{i}]", f"{v!r} is not a regular expression: {exc}", "fix the pattern") from None
        lists[key] = tuple(values)
    if not lists["cue_metrics"]:
        raise FamilyError(file, "slip.cue_metrics", "is empty", "name the rows (regexes on the row name) that show the hidden property")
    cue = _expect(cue, str, file, "intended.cue", "a sentence").strip()
    if not cue:
        raise FamilyError(file, "intended.cue", "missing", "say in words what the start's slip shows for this member's data (no runtimes)")
    return tuple(group), dict(data), SlipCues(**lists), cue


def _check_restricted(fam: Family, file: str) -> None:
    """Launch bounds and inline PTX where the source conventions allow them (families/README.md):
    launch bounds never in the classic set and, in the hard set, only in a rewrite
    whose option text names them; `asm` only in a candidate the emulator skips (`gpu_gate_only`)."""
    for c in fam.all_candidates:
        for line, kind, what in restricted_constructs(c.source):
            if kind == "asm" and c.id not in fam.gpu_gate_only:
                raise FamilyError(_rel(c.path), "", f"uses {what}, which the CPU emulator cannot run",
                                  "write it in CUDA C++, or (hard set) list the candidate in gpu_gate_only "
                                  "with the reason", line)
            if kind == "launch_bounds" and fam.set == DEFAULT_SET:
                raise FamilyError(_rel(c.path), "", f"uses {what} in a {DEFAULT_SET} family",
                                  "remove it: classic candidates differ in their code, not in compiler limits", line)
            if kind == "launch_bounds" and c.role == "rewrite" and not re.search(r"launch.?bounds|maxnreg", c.text, re.I):
                raise FamilyError(_rel(c.path), "", f"uses {what}, which its option text does not name",
                                  "say so in the option text (a model reads the text and the code)", line)


def _check_shown_text(fam: Family, file: str) -> None:
    """Every text a model reads, against the word list (leak_words.toml): one error for the first hit."""
    words = f"reword it without {LEAK_WORDS_FILE.name}'s words (families/README.md, 'Words a model must not read')"
    leaks = _leaks(fam.computes)
    if leaks:
        raise FamilyError(file, "computes", f"uses {leaks}, which tell the reader about speed", words)
    for i, r in enumerate(fam.rewrites):
        leaks = _leaks(r.text)
        if leaks:
            raise FamilyError(file, f"rewrites[{i}].text", f"option text uses {leaks}, which tell the reader about speed", f"describe the mechanism only; {words}")
        if not r.text:
            raise FamilyError(file, f"rewrites[{i}].text", "is empty", "describe the rewrite in one line")
        if "\n" in r.text:
            raise FamilyError(file, f"rewrites[{i}].text", f"spans {r.text.count(chr(10)) + 1} lines", "write the option on one line")
        if len(r.text) > MAX_OPTION_TEXT:
            raise FamilyError(file, f"rewrites[{i}].text", f"has {len(r.text)} characters, more than {MAX_OPTION_TEXT}",
                              "describe the mechanism in one sentence (families/README.md, 'Option texts')")
    for kind, names in (("buffers", [b.name for b in fam.buffers]), ("sizes.timing", list(fam.timing)), ("params", list(fam.params))):
        bad = _name_leaks(names)
        if bad:
            raise FamilyError(file, f"{kind}.{bad[0]}", f"names {bad} hint at intent", "use neutral names (x, out, n, ...)")
    for c in (fam.start, *fam.rewrites):
        code = c.code
        bad = _identifier_leaks(code)
        if bad:
            raise FamilyError(_rel(c.path), "", f"identifiers {bad} hint at intent", "use neutral names (k0, k1, v, t, ...)", _first_line(c.source, bad[0]))
        for lit in re.finditer(r'"(?:\\.|[^"\\\n])*"', code):
            leaks = _leaks(lit.group(0))
            if leaks:
                raise FamilyError(_rel(c.path), "", f"a string literal uses {leaks}", "remove it", _first_line(c.source, lit.group(0)))


def _first_line(source: str, needle: str) -> int | None:
    """The line of `source` where `needle` first appears as a whole word, if it does."""
    m = re.search(r"(?<![A-Za-z0-9_])" + re.escape(needle) + r"(?![A-Za-z0-9_])", source) or re.search(re.escape(needle), source)
    return source.count("\n", 0, m.start()) + 1 if m else None


_LOADED: dict[tuple[str, str], tuple[str, Family]] = {}
_LOADED_MAX = 512


def _dir_digest(fam_dir: Path) -> str:
    """The digest of every entry under a family directory, its kind, name and bytes (bytecode left
    out): what a validated Family depends on, since validation reads nothing outside its directory.
    Contents, not mtimes: a test rewrites a file within one clock tick and must see the change. A
    link is hashed by its target and anything but a file or a link by its name alone, never opened
    (a FIFO would block)."""
    parts: list[bytes] = []
    for dirpath, dirnames, filenames in os.walk(fam_dir):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                kind, data = b"L", os.fsencode(os.readlink(path))
            elif stat.S_ISREG(mode):
                with open(path, "rb") as fh:
                    kind, data = b"F", fh.read()
            else:
                kind, data = b"O", b""
            parts += [kind, os.fsencode(os.path.relpath(path, fam_dir)), data]
    return store.digest("family-dir/1", *parts)


def load_family(fam_dir: Path) -> Family:
    """Read and validate one family directory. Raises FamilyError.

    A directory validated before in this process, every file unchanged, gives the same Family
    back: a session discovers families/ for its catalog and again for its items (about 3 s each
    on 2 cores). Errors are never kept: a broken family is validated again, so it reports again."""
    fam_dir = Path(fam_dir)
    try:
        key, digest = (str(fam_dir), os.getcwd()), _dir_digest(fam_dir)
    except OSError:
        return _load_family(fam_dir)  # unreadable: the loader names the file
    hit = _LOADED.get(key)
    if hit is not None and hit[0] == digest:
        return hit[1]
    fam = _load_family(fam_dir)
    try:
        unchanged = _dir_digest(fam_dir) == digest  # not written to while it was validated
    except OSError:
        unchanged = False
    if unchanged:
        _LOADED.pop(key, None)
        if len(_LOADED) >= _LOADED_MAX:
            _LOADED.pop(next(iter(_LOADED)))
        _LOADED[key] = (digest, fam)
    return fam


def _load_family(fam_dir: Path) -> Family:
    file = _rel(fam_dir / "family.toml")
    for needed in ("family.toml", "kernel.cu", "reference.py"):
        if not (fam_dir / needed).is_file():
            raise FamilyError(_rel(fam_dir / needed), "", "file is missing", f"every family directory holds {needed}")
    if not (fam_dir / "rewrites").is_dir():
        raise FamilyError(_rel(fam_dir / "rewrites"), "", "directory is missing", "put the four rewrites in rewrites/")
    try:
        raw = tomllib.loads(read_text(fam_dir / "family.toml"))
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        raise FamilyError(file, "", f"is not valid TOML: {exc}", "correct the syntax at that line",
                          int(at.group(1)) if at else None) from None

    _check_fields(raw, TOP_FIELDS, TOP_FIELDS - {"constraints", "params", "set", "profile_checks", "targets"} - OPTIONAL_HARD_FIELDS - GROUP_FIELDS,
                  file, "")
    name = _expect(raw["name"], str, file, "name", "the family name")
    if name != fam_dir.name:
        raise FamilyError(file, "name", f"is {name!r} but the directory is {fam_dir.name!r}", "make them equal")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise FamilyError(file, "name", f"{name!r} is not lower snake case", "rename the family")
    fam_set = _expect(raw.get("set", DEFAULT_SET), str, file, "set", "a set name")
    if fam_set not in SETS:
        raise FamilyError(file, "set", f"is {fam_set!r}", f"use one of {SETS}")
    computes = _expect(raw["computes"], str, file, "computes", "a sentence")
    bound = _expect(raw["bound"], str, file, "bound", "'memory' or 'compute'")
    if bound not in BOUNDS:
        raise FamilyError(file, "bound", f"is {bound!r}", f"use one of {BOUNDS}")
    constraints = tuple(_expect(raw.get("constraints", []), list, file, "constraints", "a list of expressions"))
    timing, gate, tiny = _size_sets(raw["sizes"], file)
    l2_per_gpu = _l2_per_gpu(raw["sizes"], file)
    params = _expect(raw.get("params", {}), dict, file, "params", "a [params] table")
    for k, v in params.items():
        _expect(v, (int, float), file, f"params.{k}", "a number")
        if k in timing:
            raise FamilyError(file, f"params.{k}", "is also a size", "give sizes and params distinct names")
    for kind, sets in (("gate", gate), ("tiny", tiny)):
        for i, s in enumerate(sets):
            for key in s:
                if key not in timing and key not in params:
                    raise FamilyError(file, f"sizes.{kind}[{i}].{key}", "is neither a size in [sizes.timing] nor a param", "declare it in [sizes.timing] or [params]")
                if key in timing:
                    _expect(s[key], int, file, f"sizes.{kind}[{i}].{key}", "an integer size")
                else:
                    _expect(s[key], (int, float), file, f"sizes.{kind}[{i}].{key}", "a number")
            for key in timing:
                if key not in s:
                    raise FamilyError(file, f"sizes.{kind}[{i}].{key}", "missing size", f"every size set gives {sorted(timing)}")

    # buffers
    rawbuf = _expect(raw["buffers"], dict, file, "buffers", "[buffers.NAME] tables")
    buffers = []
    for bname, bt in rawbuf.items():
        w = f"buffers.{bname}."
        _expect(bt, dict, file, w[:-1], "a table")
        _check_fields(bt, BUFFER_FIELDS, {"dtype", "count", "role"}, file, w)
        if bt["dtype"] not in DTYPES:
            raise FamilyError(file, w + "dtype", f"{bt['dtype']!r} is not supported", f"use one of {DTYPES}")
        if bt["role"] not in ROLES:
            raise FamilyError(file, w + "role", f"{bt['role']!r} is not a role", f"use one of {ROLES}")
        tol = None
        if bt["role"] == "output":
            if "tolerance" not in bt:
                raise FamilyError(file, w + "tolerance", "an output needs a tolerance", "add tolerance = \"exact\" or { kind = \"elementwise\", rtol = ..., atol = ... }")
            t = bt["tolerance"]
            t = {"kind": t} if isinstance(t, str) else _expect(t, dict, file, w + "tolerance", "a string or table")
            _check_fields(t, TOLERANCE_FIELDS, {"kind"}, file, w + "tolerance.")
            if t["kind"] not in TOLERANCE_KINDS:
                raise FamilyError(file, w + "tolerance.kind", f"{t['kind']!r}", f"use one of {TOLERANCE_KINDS}")
            if t["kind"] not in ("exact", "e4m3_step") and "rtol" not in t:
                raise FamilyError(file, w + "tolerance.rtol", "missing", "give rtol (and atol) for a non-exact tolerance")
            if t["kind"] == "e4m3_step":
                if bt["dtype"] != "float8_e4m3":
                    raise FamilyError(file, w + "tolerance.kind", f"'e4m3_step' compares e4m3 codes, but {bname} is {bt['dtype']}", "use it only for float8_e4m3 outputs")
                if set(t) - {"kind", "steps"}:
                    raise FamilyError(file, w + "tolerance", f"'e4m3_step' takes only 'steps', not {sorted(set(t) - {'kind', 'steps'})}", "remove rtol/atol")
                steps = _expect(t.get("steps", 1), int, file, w + "tolerance.steps", "a whole number of e4m3 steps")
                if not 0 <= steps <= 2:
                    raise FamilyError(file, w + "tolerance.steps", f"is {steps}", "use 0, 1 or 2 steps (one step is the design tolerance)")
            elif "steps" in t:
                raise FamilyError(file, w + "tolerance.steps", f"only the 'e4m3_step' kind counts steps, this is {t['kind']!r}", "remove it")
            tol = Tolerance(t["kind"], float(t.get("rtol", 0.0)), float(t.get("atol", 0.0)), int(t.get("steps", 1)))
        elif "tolerance" in bt:
            raise FamilyError(file, w + "tolerance", f"only outputs are compared, and {bname} is {bt['role']}", "remove it")
        buffers.append(Buffer(bname, bt["dtype"], _expect(bt["count"], (int, str), file, w + "count", "an integer or expression"), bt["role"], tol))
    if not any(b.role == "output" for b in buffers):
        raise FamilyError(file, "buffers", "no buffer has role = \"output\"", "declare what the kernel writes")

    start = _candidate(fam_dir, _expect(raw["start"], dict, file, "start", "a [start] table"), "start", "start.", file)
    rw_raw = _expect(raw["rewrites"], list, file, "rewrites", "[[rewrites]] tables")
    if len(rw_raw) != N_REWRITES:
        raise FamilyError(file, "rewrites", f"declares {len(rw_raw)} rewrites", f"declare exactly {N_REWRITES}")
    rewrites = tuple(_candidate(fam_dir, r, "rewrite", f"rewrites[{i}].", file) for i, r in enumerate(rw_raw))
    wr_raw = _expect(raw["wrong"], list, file, "wrong", "[[wrong]] tables")
    if not wr_raw:
        raise FamilyError(file, "wrong", "no deliberately wrong variant", "add at least one [[wrong]] variant under wrong/")
    wrong = tuple(_candidate(fam_dir, r, "wrong", f"wrong[{i}].", file) for i, r in enumerate(wr_raw))
    ids = [c.id for c in (start, *rewrites, *wrong)]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise FamilyError(file, "rewrites/wrong id", f"ids {dup} are used twice", "give every candidate its own id")
    on_disk = sorted(p.name for p in (fam_dir / "rewrites").glob("*.cu"))
    declared = sorted(c.path.name for c in rewrites)
    if on_disk != declared:
        raise FamilyError(_rel(fam_dir / "rewrites"), "", f"holds {on_disk} but family.toml declares {declared}", "keep exactly the four declared rewrites there")

    intended = _expect(raw["intended"], dict, file, "intended", "an [intended] table")
    _check_fields(intended, INTENDED_FIELDS, INTENDED_FIELDS - {"cue"}, file, "intended.")
    if intended["winner"] not in [r.id for r in rewrites]:
        raise FamilyError(file, "intended.winner", f"{intended['winner']!r} is not a rewrite id", f"use one of {[r.id for r in rewrites]}")

    gpu_only, pair = _hard_fields(raw, file, name, [c.id for c in (start, *rewrites, *wrong)])
    needs_cc, needs_why, targets = _needs(raw, file, (start, *rewrites, *wrong))
    group, data, slip, cue = _group_fields(raw, file, name, fam_set)
    if pair and group:
        raise FamilyError(file, "pair", "a family is in a shape pair or a data group, not both", "remove pair or group")
    fam = Family(
        name=name, path=fam_dir, computes=computes.strip(), bound=bound, constraints=constraints,
        timing=timing, gate=gate, tiny=tiny, params=dict(params), buffers=tuple(buffers),
        start=start, rewrites=rewrites, wrong=wrong,
        intended_winner=intended["winner"], intended_reasoning=str(intended["reasoning"]).strip(), set=fam_set,
        l2_per_gpu=l2_per_gpu, targets=targets, needs=needs_cc, needs_why=needs_why, gpu_gate_only=gpu_only, pair=pair, group=group, data=data, slip=slip, intended_cue=cue,
        profile_checks=_profile_checks(raw.get("profile_checks", []), (start, *rewrites, *wrong), file),
    )

    for kind in ("timing", "gate", "tiny"):
        for k, shape in enumerate(fam.shapes(kind)):
            for c in constraints:
                try:
                    ok = evaluate(c, shape)
                except ExprError as exc:
                    raise FamilyError(file, "constraints", str(exc), "write constraints over sizes and params") from None
                if not ok:
                    raise FamilyError(file, f"sizes.{kind}[{k}]", f"violates constraint {c!r}", "change the size or the constraint")
            for b in buffers:
                try:
                    if evaluate_int(b.count, shape) < 1:
                        raise ExprError("count < 1")
                except (ExprError, ZeroDivisionError) as exc:
                    raise FamilyError(file, f"buffers.{b.name}.count", f"for sizes.{kind}[{k}]: {exc}", "use an expression over sizes") from None

    for c in (start, *rewrites, *wrong):
        where = "start." if c.role == "start" else f"{'rewrites' if c.role == 'rewrite' else 'wrong'}[{[x.id for x in (rewrites if c.role == 'rewrite' else wrong)].index(c.id)}]."
        _validate_plan(fam, c, file, where)
    _check_restricted(fam, file)
    _check_shown_text(fam, file)
    _check_reference_once(fam, load_reference(fam_dir / "reference.py"))
    return fam


def _check_reference_once(fam: Family, module: ModuleType) -> None:
    """_check_reference, skipped when these very files passed it before (.cache/sparktrace/).

    Why: it runs the family's naive loops, seconds per family, in every process that
    loads the catalog (each xdist worker and the controller). The key is every .py
    and the family.toml of the family, the checker's own source and NumPy's version;
    a failure is never stored, so a broken family reports its error every time.
    """
    import numpy as np

    files = sorted(p for p in fam.path.iterdir() if p.suffix == ".py" or p.name == "family.toml")
    key = store.digest("reference-contract/1", *(p.name.encode() + b"\0" + p.read_bytes() for p in files),
                       Path(__file__).read_bytes(), (Path(__file__).parent / "dtypes.py").read_bytes(), np.__version__)
    if store.load("reference_contract", key) is None:
        _check_reference(fam, module)
        store.store("reference_contract", key, b"ok")


@dataclass(frozen=True)
class Discovered:
    """A directory under families/: either a loaded family or its one error."""

    name: str
    path: Path
    family: Family | None
    error: FamilyError | None


def selected_sets(choice: str) -> tuple[str, ...]:
    """`--set` as the sets it selects: one set by name, or `all`."""
    if choice == "all":
        return SETS
    if choice not in SETS:
        raise ValueError(f"--set {choice!r} is not a family set; use one of {SET_CHOICES}")
    return (choice,)


def _declared_set(fam_dir: Path) -> str | None:
    """The `set` a family.toml names, read leniently: None when it cannot be read."""
    try:
        value = tomllib.loads((fam_dir / "family.toml").read_text()).get("set", DEFAULT_SET)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, str) else None


def discover(root: Path, sets: tuple[str, ...] | None = None) -> tuple[Discovered, ...]:
    """Every directory under `root` that is not hidden, sorted by name; with
    `sets`, only the families of those sets. A family whose set cannot be read
    is kept in every selection, so its error is never hidden."""
    found = []
    for d in sorted(p for p in Path(root).iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        if sets is not None and (declared := _declared_set(d)) is not None and declared in SETS and declared not in sets:
            continue
        try:
            found.append(Discovered(d.name, d, load_family(d), None))
        except FamilyError as exc:
            found.append(Discovered(d.name, d, None, exc))
        except OSError as exc:  # unreadable file or directory: that family's error, not the session's
            where = exc.filename or d
            found.append(Discovered(d.name, d, None, FamilyError(_rel(Path(where)), "", f"cannot be read: {exc.strerror or exc}", "make it readable")))
        except Exception as exc:  # a check that missed a case: still this family's error, never the session's
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            found.append(Discovered(d.name, d, None, FamilyError(
                _rel(d / "family.toml"), "", f"could not be validated: {type(exc).__name__}: {_exc_text(exc)} "
                f"(in {Path(frame.filename).name}:{frame.lineno})",
                "check the field types against families/README.md; the validator should have named the field, so "
                "please report this case")))
    return tuple(found)


def call_reference(fam: Family, fn: str, *args: Any) -> Any:
    func: Callable[..., Any] = getattr(fam.reference_module(), fn)
    return func(*args)
