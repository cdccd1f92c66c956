"""Buffer dtypes by their manifest names, including the low-precision ones NumPy lacks.

Why a module: bfloat16 and float8 e4m3 come from ml_dtypes, whose NumPy dtypes
report kind 'V' and names that differ from the manifest's (`float8_e4m3fn`),
and CuPy cannot hold them. Every stage asks here instead of calling np.dtype.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

# manifest name -> NumPy dtype. float8_e4m3 is CUDA's __nv_fp8_e4m3 (ml_dtypes'
# e4m3fn: no infinities, 0x7F/0xFF are NaN, largest finite 448).
_DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "int32": np.dtype(np.int32),
    "uint32": np.dtype(np.uint32),
    "uint8": np.dtype(np.uint8),
    "int64": np.dtype(np.int64),
    "uint64": np.dtype(np.uint64),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float16": np.dtype(np.float16),
    "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "int8": np.dtype(np.int8),
}
DTYPE_NAMES: tuple[str, ...] = tuple(_DTYPES)
# Floating types stored in fewer than 4 bytes: poisoned with 0xFF bytes (NaN in each).
LOW_PRECISION = ("bfloat16", "float16", "float8_e4m3")
E4M3_MAX = 448.0


def np_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a manifest dtype name."""
    try:
        return _DTYPES[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not supported; use one of {DTYPE_NAMES}") from None


def dtype_name(dtype: np.dtype | type) -> str:
    """The manifest name of a NumPy dtype (the reverse of np_dtype)."""
    dt = np.dtype(dtype)
    for name, d in _DTYPES.items():
        if d == dt:
            return name
    raise ValueError(f"NumPy dtype {dt} has no manifest name; supported: {DTYPE_NAMES}")


def is_float(dtype: np.dtype | str) -> bool:
    """Floating point, including bfloat16 and float8 (which NumPy reports as kind 'V')."""
    dt = np_dtype(dtype) if isinstance(dtype, str) else np.dtype(dtype)
    return dt.kind == "f" or dt in (_DTYPES["bfloat16"], _DTYPES["float8_e4m3"])


def device_view(arr: np.ndarray) -> np.ndarray:
    """The array as CuPy can hold it: ml_dtypes arrays as their raw bytes (kernels take pointers)."""
    arr = np.asarray(arr)
    if arr.dtype in (_DTYPES["bfloat16"], _DTYPES["float8_e4m3"]):
        return np.ascontiguousarray(arr).view(np.uint8)
    return arr


def host_view(raw: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Undo device_view: raw bytes back as the buffer's dtype."""
    raw = np.asarray(raw)
    return raw if raw.dtype == dtype else np.ascontiguousarray(raw).view(dtype)


def e4m3_round(values: np.ndarray) -> np.ndarray:
    """float64 values rounded once to e4m3 (nearest, ties to even), saturated to +-448 like
    CUDA's __NV_SATFINITE conversions; returned as float64. Why not ml_dtypes alone: it
    rounds float64 through float32 (a double rounding) and turns overflow into NaN."""
    v = np.asarray(values, dtype=np.float64)
    a = np.abs(v)
    _, ex = np.frexp(a)  # a = m * 2**ex, m in [0.5, 1)
    quantum = np.ldexp(1.0, np.maximum(ex - 1, -6) - 3)  # 3 mantissa bits; subnormal step 2**-9
    r = np.rint(a / quantum) * quantum  # exact: the division is by a power of two
    r = np.minimum(r, E4M3_MAX)
    return np.where(np.isnan(v), v, np.copysign(r, v))


def e4m3_codes(values: np.ndarray) -> np.ndarray:
    """Values as e4m3 codes (uint8): float8 arrays as they are, anything else through e4m3_round."""
    arr = np.asarray(values)
    if arr.dtype == _DTYPES["float8_e4m3"]:
        return arr.view(np.uint8)
    exact = e4m3_round(arr)  # every value is now an e4m3 value, so the casts below are exact
    return exact.astype(np.float32).astype(_DTYPES["float8_e4m3"]).view(np.uint8)


def e4m3_ordinal(codes: np.ndarray) -> np.ndarray:
    """e4m3 codes as positions on the number line (adjacent values differ by 1; +0 and -0
    are both 0). NaN codes (0x7F, 0xFF) map to a sentinel far from every value."""
    c = np.asarray(codes).view(np.uint8).astype(np.int64)
    mag = c & 0x7F
    ordv = np.where(c & 0x80, -mag, mag)
    return np.where(mag == 0x7F, 1 << 20, ordv)
