"""Reading CUDA source as text: comments, entry points and their parameters.

Why: the validator must check launch plans against the kernels without a
compiler, and prompts must show code without comments (comments leak intent).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# C scalar spellings a kernel parameter may use, mapped to NumPy dtype names.
CTYPE_DTYPES: dict[str, str] = {
    "float": "float32",
    "double": "float64",
    "int": "int32",
    "unsigned": "uint32",
    "unsigned int": "uint32",
    "uint32_t": "uint32",
    "long long": "int64",
    "long long int": "int64",
    "unsigned long long": "uint64",
    "unsigned long long int": "uint64",
    "unsigned char": "uint8",
    "uint8_t": "uint8",
    # low-precision element types: pointer parameters only (buffers of 1- and 2-byte values)
    "__nv_bfloat16": "bfloat16",
    "nv_bfloat16": "bfloat16",
    "__half": "float16",
    "half": "float16",
    "__nv_fp8_e4m3": "float8_e4m3",
    "__nv_fp8_storage_t": "float8_e4m3",
    "signed char": "int8",
    "int8_t": "int8",
}
# C types a kernel may point to but never take by value (no scalar of these is passed).
POINTER_ONLY_CTYPES = frozenset({"__nv_bfloat16", "nv_bfloat16", "__half", "half", "__nv_fp8_e4m3",
                                 "__nv_fp8_storage_t", "signed char", "int8_t"})


@dataclass(frozen=True)
class Param:
    """One kernel parameter: `const float* __restrict__ x` -> ctype float, pointer, const."""

    name: str
    ctype: str
    pointer: bool
    const: bool

    @property
    def dtype(self) -> str | None:
        return CTYPE_DTYPES.get(self.ctype)


@dataclass(frozen=True)
class KernelSignature:
    name: str
    params: tuple[Param, ...]
    # __cluster_dims__(x, y, z) on the kernel: the thread-block cluster shape, else None
    cluster: tuple[int, int, int] | None = None

    @property
    def cluster_size(self) -> int:
        return 1 if self.cluster is None else self.cluster[0] * self.cluster[1] * self.cluster[2]


class SourceError(ValueError):
    """A kernel source that cannot be read as SparkTrace expects."""

    def __init__(self, message: str, line: int | None = None, fix: str | None = None):
        self.line = line
        self.fix = fix  # how to correct it, when it differs from the caller's general advice
        super().__init__(message)


# --------------------------------------------------------------------------- lexing

# Why a lexer and not a few regexes: a C++14 digit separator (1'024), a raw
# string (R"x(//)x") or a line continuation inside a // comment each fool a
# quote-pairing scanner, and then a comment survives into a prompt.
_RAW_PREFIXES = ("R", "u8R", "uR", "UR", "LR")
_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_IDENT_CHARS = _IDENT_START | frozenset("0123456789")
_DIGITS = frozenset("0123456789")


@dataclass(frozen=True)
class Segment:
    """A stretch of source: `code`, `comment`, `string` (raw strings too) or `char`."""

    kind: str
    start: int
    end: int


def _line_of(src: str, pos: int) -> int:
    return src.count("\n", 0, pos) + 1


@lru_cache(maxsize=2048)
def segments(src: str) -> tuple[Segment, ...]:
    """The source cut into code, comments and literals, following C++17's lexical rules.

    Raises SourceError (with the line) for an unterminated /* comment or raw string.
    Cached: every check of a source reads the same cut (immutable segments).
    """
    out: list[Segment] = []
    i, n = 0, len(src)
    code_start = 0

    def emit(kind: str, start: int, end: int) -> None:
        nonlocal code_start
        if start > code_start:
            out.append(Segment("code", code_start, start))
        out.append(Segment(kind, start, end))
        code_start = end

    while i < n:
        c = src[i]
        if c == "/" and src.startswith("//", i):
            j = i + 2
            while j < n and src[j] != "\n":
                # a backslash-newline continues a // comment onto the next line
                if src[j] == "\\" and src.startswith("\n", j + 1):
                    j += 2
                elif src[j] == "\\" and src.startswith("\r\n", j + 1):
                    j += 3
                else:
                    j += 1
            emit("comment", i, j)
            i = j
        elif c == "/" and src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                raise SourceError("unterminated /* comment", _line_of(src, i))
            emit("comment", i, j + 2)
            i = j + 2
        elif c in _IDENT_START:
            j = i + 1
            while j < n and src[j] in _IDENT_CHARS:
                j += 1
            word = src[i:j]
            if word in _RAW_PREFIXES and src.startswith('"', j):
                k = src.find("(", j + 1)
                delim = src[j + 1 : k] if k >= 0 else ""
                end = src.find(")" + delim + '"', k + 1) if k >= 0 and len(delim) <= 16 and "\n" not in delim else -1
                if end < 0:
                    raise SourceError("unterminated raw string literal", _line_of(src, i))
                emit("string", i, end + len(delim) + 2)
                i = end + len(delim) + 2
            else:
                i = j  # an identifier; a prefix like L or u8 before a quote is read with the literal next
        elif c in _DIGITS or (c == "." and i + 1 < n and src[i + 1] in _DIGITS):
            # a pp-number: digits, letters, '.', e+/p- exponents and ' digit separators
            j = i + 1
            while j < n:
                d = src[j]
                if d in "+-" and src[j - 1] in "eEpP":
                    j += 1
                elif d in _IDENT_CHARS or d == ".":
                    j += 1
                elif d == "'" and j + 1 < n and src[j + 1] in _IDENT_CHARS:
                    j += 2
                else:
                    break
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            emit("string" if c == '"' else "char", i, j)
            i = j
        else:
            i += 1
    if n > code_start:
        out.append(Segment("code", code_start, n))
    return tuple(out)


def blank_comments(src: str) -> str:
    """Comments replaced by spaces, newlines kept: offsets and line numbers stay those of `src`."""
    parts = []
    for seg in segments(src):
        text = src[seg.start : seg.end]
        if seg.kind == "comment":
            text = "".join(ch if ch == "\n" else " " for ch in text)
        parts.append(text)
    return "".join(parts)


def _stripped_lines(src: str) -> list[str]:
    """The source with comments removed, one entry per line of `src` (same numbering)."""
    parts = []
    for seg in segments(src):
        text = src[seg.start : seg.end]
        if seg.kind == "comment":
            # keep line structure so that line numbers stay meaningful
            text = "\n" * text.count("\n") or (" " if text.startswith("/*") else "")
        parts.append(text)
    return [line.rstrip() for line in "".join(parts).split("\n")]


def strip_comments(src: str) -> str:
    """Remove // and /* */ comments, keeping string, character and raw-string literals intact.

    Blank lines left behind by removed comment lines are dropped, and trailing
    whitespace is trimmed, so the result reads like hand-written code.
    """
    lines = _stripped_lines(src)
    kept: list[str] = []
    original = src.split("\n")
    for k, line in enumerate(lines):
        # drop lines that held only a comment; keep deliberate blank lines
        if not line and k < len(original) and original[k].strip():
            continue
        if not line and kept and not kept[-1]:
            continue
        kept.append(line)
    return "\n".join(kept).strip("\n") + "\n"


COMMENT_MARKERS = ("//", "/*", "*/")


def surviving_comment_markers(src: str) -> list[tuple[int, str, str]]:
    """(line in `src`, marker, stripped line) for every comment marker left after stripping.

    Why: the prompt shows stripped code; a marker there (a stripping bug, or
    one inside a string literal) would show the model a comment's text.
    """
    found = []
    for k, line in enumerate(_stripped_lines(src), 1):
        for marker in COMMENT_MARKERS:
            if marker in line:
                found.append((k, marker, line.strip()))
                break
    return found


_CLOSERS = {")": "(", "]": "[", "}": "{"}


def check_brackets(src: str) -> None:
    """Raise SourceError naming the line of the first unbalanced (, [ or { in the code.

    Why: a missing brace otherwise fails once per target, once in the emulator
    and once more in every later check; read here, it is one error with a line.
    Preprocessor lines are skipped: a macro body may hold half a pair.
    """
    stack: list[tuple[str, int]] = []
    line = 1
    at_line_start = True
    in_directive = False
    for seg in segments(src):
        text = src[seg.start : seg.end]
        if seg.kind != "code":
            newlines = text.count("\n")
            if newlines:
                line += newlines
                at_line_start = True
                in_directive = in_directive and seg.kind == "comment" and text.startswith("/*")
            continue
        prev = ""
        for ch in text:
            if ch == "\n":
                if prev != "\\":
                    in_directive = False
                line += 1
                at_line_start = True
            elif ch in " \t\r":
                pass
            else:
                if at_line_start and ch == "#":
                    in_directive = True
                at_line_start = False
                if not in_directive:
                    if ch in "([{":
                        stack.append((ch, line))
                    elif ch in _CLOSERS:
                        if not stack:
                            raise SourceError(f"'{ch}' closes nothing (an extra '{ch}' or a missing '{_CLOSERS[ch]}' before it)", line)
                        opener, oline = stack.pop()
                        if opener != _CLOSERS[ch]:
                            raise SourceError(
                                f"'{ch}' closes the '{opener}' opened on line {oline} "
                                f"(a missing or extra bracket between lines {oline} and {line})", line)
            prev = ch
    if stack:
        opener, oline = stack[-1]
        raise SourceError(f"this '{opener}' is never closed (a missing closing bracket after it)", oline)


# Kernel attributes that may stand around `void`: __launch_bounds__(...), __cluster_dims__(...).
_ATTR = r"(?:(?:__launch_bounds__|__cluster_dims__|__maxnreg__)\s*\([^()]*\)\s*)*"
_ENTRY = re.compile(
    r'extern\s+"C"\s+' + _ATTR + r"__global__\s+" + _ATTR + r"void\s+" + _ATTR + r"([A-Za-z_]\w*)\s*\(([^)]*)\)", re.S
)
_CLUSTER = re.compile(r"__cluster_dims__\s*\(([^()]*)\)")
_QUALIFIERS = {"const", "__restrict__", "__restrict", "restrict", "volatile"}


def _parse_param(text: str, kernel: str) -> Param:
    raw = " ".join(text.replace("*", " * ").split())
    if not raw:
        raise SourceError(f"kernel {kernel}: empty parameter")
    tokens = raw.split(" ")
    name = tokens[-1]
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise SourceError(f"kernel {kernel}: cannot read parameter {text.strip()!r}")
    head = tokens[:-1]
    pointer = head.count("*")
    if pointer > 1:
        raise SourceError(f"kernel {kernel}: parameter {name} is a pointer to pointer")
    const = "const" in head
    base = " ".join(t for t in head if t not in _QUALIFIERS and t != "*")
    if base not in CTYPE_DTYPES:
        raise SourceError(
            f"kernel {kernel}: parameter {name} has type {base!r}, which SparkTrace does not pass",
            fix=f"use one of {sorted(set(CTYPE_DTYPES))} (families/README.md, 'Pointer and scalar types'); "
            "long long for a count past 2^31",
        )
    return Param(name=name, ctype=base, pointer=bool(pointer), const=const)


def _cluster_dims(head: str, kernel: str) -> tuple[int, int, int] | None:
    m = _CLUSTER.search(head)
    if m is None:
        return None
    parts = [p.strip() for p in m.group(1).split(",") if p.strip()]
    if not 1 <= len(parts) <= 3 or not all(re.fullmatch(r"\d+", p) for p in parts):
        raise SourceError(f"kernel {kernel}: __cluster_dims__({m.group(1).strip()}) must list 1 to 3 integer literals")
    dims = tuple(int(p) for p in parts) + (1,) * (3 - len(parts))
    if min(dims) < 1:
        raise SourceError(f"kernel {kernel}: __cluster_dims__{dims} has an empty dimension")
    return (dims[0], dims[1], dims[2])


def kernel_signatures(src: str) -> dict[str, KernelSignature]:
    """Every `extern "C" __global__ void` entry point, in source order."""
    code = blank_comments(src)  # same offsets as src, so errors carry src's line numbers
    found: dict[str, KernelSignature] = {}
    for m in _ENTRY.finditer(code):
        name, plist = m.group(1), m.group(2).strip()
        line = _line_of(src, m.start())
        try:
            params = tuple(
                _parse_param(p, name) for p in plist.split(",") if p.strip() and p.strip() != "void"
            )
        except SourceError as exc:
            raise SourceError(str(exc), line, exc.fix) from None
        if name in found:
            raise SourceError(f"kernel {name} is defined twice", line)
        try:
            cluster = _cluster_dims(m.group(0), name)
        except SourceError as exc:
            raise SourceError(str(exc), line) from None
        found[name] = KernelSignature(name=name, params=params, cluster=cluster)
    return found


# Constructs the source conventions restrict (families/README.md): each as
# (kind, pattern over code without comments or literals, what it is). The
# manifest decides per family set and candidate which kinds are errors.
_RESTRICTED = (
    ("launch_bounds", re.compile(r"\b(?:__launch_bounds__|__maxnreg__)\b"), "__launch_bounds__ / __maxnreg__"),
    ("asm", re.compile(r"\b(?:asm|__asm__|__asm)\b"), "inline assembly (asm)"),
)
_GLOBAL = re.compile(r"\b__global__\b")
_EXTERN_C_GLOBAL = re.compile(r'extern\s+"C"\s+' + _ATTR + r"__global__$")


def restricted_constructs(src: str) -> list[tuple[int, str, str]]:
    """(line, kind, what) for each restricted construct, in source order: kinds
    `launch_bounds`, `asm` and `not_extern_c` (a __global__ without extern "C").

    Why: inline PTX otherwise surfaces as an assembler error from the emulator,
    and a __global__ without extern "C" as a kernel "not defined".
    """
    code = blank_comments(src)
    code_only = "".join(
        code[s.start:s.end] if s.kind == "code" else " " * (s.end - s.start) for s in segments(code)
    )  # string and character literals blanked too: "asm" in a string is not assembly
    found = []
    for kind, pattern, what in _RESTRICTED:
        for m in pattern.finditer(code_only):
            found.append((_line_of(src, m.start()), kind, what))
    for m in _GLOBAL.finditer(code_only):
        if not _EXTERN_C_GLOBAL.search(" ".join(code[max(0, m.start() - 200):m.end()].split())):
            found.append((_line_of(src, m.start()), "not_extern_c", '__global__ without extern "C"'))
    return sorted(found)
