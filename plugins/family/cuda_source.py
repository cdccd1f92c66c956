"""Reading CUDA source as text: comments, entry points and their parameters.

Why: the validator must check launch plans against the kernels without a
compiler, and prompts must show code without comments (comments leak intent).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

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


def strip_comments(src: str) -> str:
    """Remove // and /* */ comments, keeping string and char literals intact.

    Blank lines left behind by removed comment lines are dropped, and trailing
    whitespace is trimmed, so the result reads like hand-written code.
    """
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(src[i : j + 1])
            i = j + 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                raise SourceError("unterminated /* comment")
            # keep line structure so that error line numbers stay meaningful
            out.append("\n" * src.count("\n", i, j + 2) or " ")
            i = j + 2
        else:
            out.append(c)
            i += 1
    lines = [line.rstrip() for line in "".join(out).split("\n")]
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
            f"kernel {kernel}: parameter {name} has type {base!r}; "
            f"use one of {sorted(set(CTYPE_DTYPES))}"
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
    code = strip_comments(src)
    found: dict[str, KernelSignature] = {}
    for m in _ENTRY.finditer(code):
        name, plist = m.group(1), m.group(2).strip()
        params = tuple(
            _parse_param(p, name) for p in plist.split(",") if p.strip() and p.strip() != "void"
        )
        if name in found:
            raise SourceError(f"kernel {name} is defined twice")
        found[name] = KernelSignature(name=name, params=params, cluster=_cluster_dims(m.group(0), name))
    return found
