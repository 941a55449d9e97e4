"""Dtypes that numpy and CuPy lack: bfloat16 and FP8 e4m3 travel as their raw bits.

CuPy has no bfloat16 dtype, so a ``bfloat16`` tensor of a spec is stored in a ``uint16`` array
holding the bit patterns (the upper half of the float32 with the same value); in CUDA it is read
through ``const __nv_bfloat16*``. The oracle and the comparisons see the decoded float32 values,
which represent every bfloat16 exactly. bfloat16 is the top 16 bits of IEEE float32: 1 sign,
8 exponent and 7 mantissa bits (Intel, "BFLOAT16 - Hardware Numerics Definition", 2018).

``float8_e4m3fn`` (the name torch and ml_dtypes use; CUDA's ``__nv_fp8_e4m3``) is stored as one
``uint8`` byte: 1 sign, 4 exponent (bias 7) and 3 mantissa bits, no infinities, the only NaN
S.1111.111, largest finite 448 (0x7E), smallest normal 2^-6, smallest subnormal 2^-9 (OCP "OFP8
Formats for Deep Learning" v1.0, 2023). Inputs only: with a single NaN code there is none to spare
for the poison that marks an unwritten output element (``grader.spec`` refuses FP8 outputs).
"""
from __future__ import annotations

from typing import Any

import numpy as np

STORAGE = {"bfloat16": "uint16", "float8_e4m3fn": "uint8"}


def _e4m3_table() -> np.ndarray:
    """float32 value of each of the 256 e4m3 codes (index = the byte); exact."""
    code = np.arange(256)
    exp, man = (code >> 3) & 0xF, code & 0x7
    mag = np.where(exp == 0, man * 2.0 ** -9, (1.0 + man / 8.0) * 2.0 ** (exp - 7))   # subnormals: (m/8) 2^(1-7)
    table = np.where(code & 0x80, -mag, mag)
    table[(exp == 0xF) & (man == 0x7)] = np.nan
    return table.astype(np.float32)


E4M3 = _e4m3_table()
E4M3_MAX = 448.0


def value_dtype(dtype: str) -> str:
    """The numpy dtype whose range a spec dtype's values are drawn in (float32 for the bits dtypes)."""
    return "float32" if dtype in STORAGE else dtype


def is_float(dtype: str) -> bool:
    """Whether spec dtype ``dtype`` holds real numbers (float16/32/64 and bfloat16): drawn from real
    distributions, compared with a tolerance; every other spec dtype is an integer, compared exactly."""
    return dtype.startswith("float") or dtype == "bfloat16"


def storage_dtype(dtype: str) -> str:
    """The numpy/CuPy dtype an array of spec dtype ``dtype`` is stored in."""
    return STORAGE.get(dtype, dtype)


def encode(xp: Any, values: Any, dtype: str) -> Any:
    """``values`` (any float array) as a C-contiguous array of spec dtype ``dtype``, in its storage
    dtype. bfloat16 rounds to nearest, ties to even (from float32; NaN stays a quiet NaN);
    float8_e4m3fn: see :func:`encode_e4m3`."""
    if dtype == "float8_e4m3fn":
        return encode_e4m3(xp, values)
    if dtype != "bfloat16":
        return xp.ascontiguousarray(values.astype(dtype))
    f = xp.ascontiguousarray(values, dtype=xp.float32)
    u = f.view(xp.uint32)
    rounded = (u + (((u >> 16) & 1) + 0x7FFF)) >> 16
    bits = xp.where(xp.isnan(f), xp.uint32(0x7FC0), rounded)
    return xp.ascontiguousarray(bits.astype(xp.uint16))


def encode_e4m3(xp: Any, values: Any) -> Any:
    """e4m3 codes (uint8) of the float array ``values``: round to nearest, ties to the even code,
    saturating to +-448 (PTX ``cvt.rn.satfinite.e4m3x2.f32``'s rounding); NaN -> 0x7F. Rounding
    is done on the values as float64, so a float64 value is rounded once."""
    x = xp.asarray(values, dtype=xp.float64)
    pos = xp.asarray(E4M3[:0x7F].astype(np.float64))           # codes 0x00..0x7E: 0 .. 448, increasing
    mag = xp.minimum(xp.abs(x), E4M3_MAX)
    hi = xp.clip(xp.searchsorted(pos, mag, side="left"), 1, 0x7E)   # pos[hi - 1] < mag <= pos[hi] for mag > 0
    lo = hi - 1
    dlo, dhi = mag - pos[lo], pos[hi] - mag
    code = xp.where((dhi < dlo) | ((dhi == dlo) & (hi % 2 == 0)), hi, lo)
    code = xp.where(mag == 0, 0, code) | xp.where(xp.signbit(x), 0x80, 0)
    return xp.ascontiguousarray(xp.where(xp.isnan(x), 0x7F, code).astype(xp.uint8))


def decode(xp: Any, array: Any, dtype: str) -> Any:
    """The numeric values of an array of spec dtype ``dtype`` (float32 for bfloat16 bits and for
    float8_e4m3fn bytes: every value of both is exact in float32)."""
    if dtype == "float8_e4m3fn":
        return xp.asarray(E4M3)[array]
    if dtype != "bfloat16":
        return array
    return (array.astype(xp.uint32) << 16).view(xp.float32)
