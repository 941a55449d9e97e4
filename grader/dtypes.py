"""Dtypes that numpy and CuPy lack: bfloat16 travels as its raw bits.

CuPy has no bfloat16 dtype, so a ``bfloat16`` tensor of a spec is stored in a ``uint16`` array
holding the bit patterns (the upper half of the float32 with the same value); in CUDA it is read
through ``const __nv_bfloat16*``. The oracle and the comparisons see the decoded float32 values,
which represent every bfloat16 exactly. bfloat16 is the top 16 bits of IEEE float32: 1 sign,
8 exponent and 7 mantissa bits (Intel, "BFLOAT16 - Hardware Numerics Definition", 2018).
"""
from __future__ import annotations

from typing import Any

STORAGE = {"bfloat16": "uint16"}


def is_float(dtype: str) -> bool:
    """Whether spec dtype ``dtype`` holds real numbers (float16/32/64 and bfloat16): drawn from real
    distributions, compared with a tolerance; every other spec dtype is an integer, compared exactly."""
    return dtype.startswith("float") or dtype == "bfloat16"


def storage_dtype(dtype: str) -> str:
    """The numpy/CuPy dtype an array of spec dtype ``dtype`` is stored in."""
    return STORAGE.get(dtype, dtype)


def encode(xp: Any, values: Any, dtype: str) -> Any:
    """``values`` (any float array) as a C-contiguous array of spec dtype ``dtype``, in its storage
    dtype. bfloat16 rounds to nearest, ties to even (from float32; NaN stays a quiet NaN)."""
    if dtype != "bfloat16":
        return xp.ascontiguousarray(values.astype(dtype))
    f = xp.ascontiguousarray(values, dtype=xp.float32)
    u = f.view(xp.uint32)
    rounded = (u + (((u >> 16) & 1) + 0x7FFF)) >> 16
    bits = xp.where(xp.isnan(f), xp.uint32(0x7FC0), rounded)
    return xp.ascontiguousarray(bits.astype(xp.uint16))


def decode(xp: Any, array: Any, dtype: str) -> Any:
    """The numeric values of an array of spec dtype ``dtype`` (float32 for bfloat16 bits)."""
    if dtype != "bfloat16":
        return array
    return (array.astype(xp.uint32) << 16).view(xp.float32)
