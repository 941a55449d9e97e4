"""TMA tensor maps for kernels that copy tiles with ``cp.async.bulk.tensor`` (Hopper, sm_90 on).

In ``solution.py``::

    from grader.kernel import load, tensor_map
    a_map = tensor_map(a, box=(64, 64))          # a: a C-contiguous cupy array, e.g. (M, K) float16
    kernel((grid,), (128,), (a_map, c, M, K))      # by value: const __grid_constant__ CUtensorMap

and in ``kernel.cu`` (NVRTC finds no ``<cuda.h>`` without a CUDA toolkit, so declare the type)::

    struct alignas(64) CUtensorMap { unsigned long long opaque[16]; };
    extern "C" __global__ void k(const __grid_constant__ CUtensorMap a_map, ...) {
        ... "l"(reinterpret_cast<unsigned long long>(&a_map)) as the tensor-map operand ...
    }

The descriptor is encoded by the CUDA driver's ``cuTensorMapEncodeTiled`` (CUDA Driver API, "Tensor
Map Object Management"; the requirements checked here are those listed there, as in CUDA 13's
``cuda.h``), through ctypes on ``libcuda.so.1`` with argument arrays built once per layout (a
solution encodes a descriptor per call when its inputs move, so the cost is part of its timed call;
cuda-python's binding, which converts every argument on every call, is the fallback where
``libcuda.so.1`` cannot be loaded by name). The driver requires the descriptor's address to be
64-byte aligned: it is encoded in place into a 128-byte-aligned host buffer (CUDA 13's
``CUtensorMap`` is ``alignas(128)``).

What :func:`tensor_map` returns is a numpy array of one element of dtype ``V128`` (128 raw bytes)
viewing that aligned buffer. CuPy passes a numpy array of size one to a ``RawKernel`` by value
(``cupy.cuda.function._pointer``: ``CNumpyArray``, CuPy >= 13; checked in CuPy 14.2's compiled module):
the driver copies the 128 bytes into the kernel's parameter space, where the kernel's declaration
(``alignas(64)``, as ``__grid_constant__`` needs) sets the 64-byte alignment. Keep the returned
object alive until the launch call has returned (CuPy holds it during the call).
"""
from __future__ import annotations

import ctypes
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

TENSOR_MAP_BYTES = 128      # sizeof(CUtensorMap): CU_TENSOR_MAP_NUM_QWORDS (16) x 8 bytes
TENSOR_MAP_ALIGN = 128      # the driver needs 64; CUDA 13's CUtensorMap is declared alignas(128)
MAX_RANK = 5                # cuTensorMapEncodeTiled: tensorRank in 1..5
MAX_BOX = 256               # boxDim[i] in 1..256
MAX_ELEMENT_STRIDE = 8      # elementStrides[i] in 1..8

# CUtensorMapDataType (cuda.h, CUDA 13) by numpy dtype name. TMA copies bits without converting, so
# signed 8/16-bit integers and the FP8 formats (ml_dtypes names) travel as the unsigned type of their size.
DATA_TYPES: dict[str, int] = {
    "uint8": 0, "int8": 0, "float8_e4m3fn": 0, "float8_e5m2": 0, "float8_e4m3": 0, "float8_e4m3fnuz": 0,
    "float8_e5m2fnuz": 0,
    "uint16": 1, "int16": 1,
    "uint32": 2, "int32": 3, "uint64": 4, "int64": 5,
    "float16": 6, "float32": 7, "float64": 8, "bfloat16": 9,
}
FLOAT_DATA_TYPES = (6, 7, 8, 9)   # the codes NaN out-of-bounds fill may be used with
INTERLEAVE_NONE = 0                                   # CU_TENSOR_MAP_INTERLEAVE_NONE
SWIZZLES: dict[int, int] = {0: 0, 32: 1, 64: 2, 128: 3}   # span in bytes -> CU_TENSOR_MAP_SWIZZLE_{NONE,32B,64B,128B}
L2_PROMOTIONS: dict[int, int] = {0: 0, 64: 1, 128: 2, 256: 3}   # bytes -> CU_TENSOR_MAP_L2_PROMOTION_*
OOB_FILL_NONE = 0                                     # out-of-bounds elements read as zero
OOB_FILL_NAN = 1                                      # CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA


class TensorMapError(RuntimeError):
    """The driver refused to encode the descriptor (its CUresult and name in the message)."""


def tensor_map(array: Any, box: Sequence[int], swizzle: int | None = 128, *,
               element_strides: Sequence[int] | None = None, l2_promotion: int = 128,
               oob_nan: bool = False) -> np.ndarray:
    """The ``CUtensorMap`` (TMA descriptor) of ``array`` for tiles of shape ``box``, to be passed by
    value to a kernel taking ``const __grid_constant__ CUtensorMap``.

    Args:
        array: a C-contiguous CuPy array (device memory) of 1 to 5 dimensions, whose data address is
            16-byte aligned; dtype one of :data:`DATA_TYPES` (FP8 and int8/int16 travel as raw bytes).
        box: the tile one copy moves, in elements, in the array's own dimension order (outermost
            first, like ``array.shape``; e.g. ``(64, 64)`` rows x columns); each 1..256; the innermost
            extent times the element size must be a multiple of 16 bytes and, with a swizzle, at most
            the swizzle span. A box may hang over the array's edges: the elements outside read as
            zero (``oob_nan``: as NaN where a floating-point load asks for it).
        swizzle: the shared-memory swizzle span in bytes: 128 (default), 64, 32, or 0 / None for none.
        element_strides: the traversal step per dimension (same order as ``box``), each 1..8;
            default all 1 (the innermost one is ignored by the hardware).
        l2_promotion: L2 fetch granularity in bytes: 0 (none), 64, 128 (default) or 256.
        oob_nan: fill out-of-bounds elements with NaN (``CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA``,
            floating-point dtypes only) instead of zero.

    Returns:
        A numpy array of one element of dtype ``V128`` whose 128 bytes (at a 128-byte-aligned host
        address) are the descriptor; CuPy passes it by value (see the module docstring). The driver
        receives the dimensions innermost first: ``globalDim = shape[::-1]``, ``globalStrides`` =
        the byte strides of dimensions 1.. (innermost first, the innermost's own omitted),
        ``boxDim = box[::-1]``.

    Cost: everything but the address is validated and converted once per layout (shape, dtype, box,
    options; an LRU cache of :data:`LAYOUT_CACHE` entries), so a call for an array at a new address
    (the grader hands every timed call fresh buffers) costs the driver's encode and little more:
    6 us a call on the H200 against 58 us before the cache (benchmarks/tensor_map_cost.py,
    benchmarks/RESULTS.md, 2026-12-03). That time is part of a solution's timed call.

    Raises:
        TypeError: ``array`` is not a CUDA array (no ``__cuda_array_interface__``), or its dtype has
            no TMA data type; ``box`` or ``element_strides`` are not sequences of integers.
        ValueError: naming the argument: not C-contiguous, empty or of more than 5 dimensions, address
            not 16-byte aligned, a stride not a multiple of 16 bytes or >= 2^40, a dimension > 2^32,
            ``box`` of the wrong length or out of 1..256, the innermost box bytes not a multiple of 16
            or over the swizzle span, an unknown ``swizzle`` or ``l2_promotion``, ``oob_nan`` on an
            integer dtype.
        TensorMapError: the driver refused (e.g. no CUDA context), with its error name.
    """
    cai = getattr(array, "__cuda_array_interface__", None)
    if not isinstance(cai, dict):
        raise TypeError(f"array: expected a CuPy array in device memory, got {type(array).__name__} "
                        "(no __cuda_array_interface__); fix: pass cupy.asarray(...) of it")
    strides = cai.get("strides")
    args = (tuple(cai["shape"]), np.dtype(array.dtype), None if strides is None else tuple(strides), box, swizzle,
            element_strides, l2_promotion, bool(oob_nan))
    box_key = _int_tuple(box)
    steps_key = None if element_strides is None else _int_tuple(element_strides)
    if (box_key is None or (element_strides is not None and steps_key is None)
            or not (_hashable(swizzle) and _hashable(l2_promotion))):
        layout = _layout.__wrapped__(*args)     # not plain integers, or unhashable: validated uncached (it names the argument)
    else:
        layout = _layout(*args[:3], box_key, swizzle, steps_key, l2_promotion, bool(oob_nan))
    address = int(cai["data"][0])
    if address % 16:
        raise ValueError(f"array: data address {address:#x} is not 16-byte aligned (a tensor map needs it); "
                         f"fix: start the view at an element offset that is a multiple of {layout.align_elements}")
    raw = _BUFFER()                             # zeroed host bytes; the numpy view below keeps them alive
    at = ctypes.addressof(raw)
    skip = (-at) % TENSOR_MAP_ALIGN
    desc = np.frombuffer(raw, dtype=_V128, count=1, offset=skip)
    _encode(at + skip, layout, address)
    return desc


_V128 = np.dtype((np.void, TENSOR_MAP_BYTES))
_BUFFER = ctypes.c_char * (TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN)   # room for a 128-byte-aligned descriptor


def _hashable(value: Any) -> bool:
    """Whether ``value`` can be a cache key (a list given as ``swizzle`` cannot)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _int_tuple(values: Any) -> tuple[int, ...] | None:
    """``values`` as a tuple of Python ints when it is a sequence of integers (not bools), else None.
    A cache key must not let 8.0 or True stand for 8 or 1 (equal keys) past the validation."""
    if isinstance(values, (tuple, list)) and all(type(v) is int or isinstance(v, np.integer) for v in values):
        return tuple(int(v) for v in values)
    return None


LAYOUT_CACHE = 256   # layouts kept by tensor_map (each one a few hundred bytes)


@dataclass(frozen=True)
class Layout:
    """Everything ``cuTensorMapEncodeTiled`` takes except the address, validated: the enums as the
    driver's codes, the arrays innermost first (``global_strides`` in bytes, rank - 1 of them) and
    the same arrays as ctypes ``cuuint64_t`` / ``cuuint32_t`` arrays (``c_args``: dims, strides,
    boxes, steps), built once. ``align_elements``: the element count that is 16 bytes."""
    data_type: int
    rank: int
    global_dim: tuple[int, ...]
    global_strides: tuple[int, ...]
    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int
    align_elements: int
    c_args: tuple[Any, ...] = field(compare=False, repr=False)


@functools.lru_cache(maxsize=LAYOUT_CACHE)
def _layout(shape: tuple[int, ...], dtype: np.dtype, strides: Any, box: tuple[Any, ...], swizzle: int | None,
            element_strides: tuple[Any, ...] | None, l2_promotion: int, oob_nan: bool) -> Layout:
    """The validated :class:`Layout` of one tensor_map call (its arguments but the address; the
    errors are tensor_map's, which an LRU cache does not keep)."""
    shape = tuple(int(n) for n in shape)
    rank = len(shape)
    code = DATA_TYPES.get(dtype.name)
    if code is None:
        raise TypeError(f"array: dtype {dtype.name} has no TMA data type; use one of {', '.join(DATA_TYPES)}")
    if not 1 <= rank <= MAX_RANK:
        raise ValueError(f"array: has {rank} dimensions; a tensor map takes 1 to {MAX_RANK}")
    if any(n == 0 for n in shape):
        raise ValueError(f"array: shape {shape} is empty; a tensor map needs at least one element per dimension")
    if any(n > 2**32 for n in shape):
        raise ValueError(f"array: shape {shape} has a dimension over 2^32 elements, more than a tensor map takes")
    item = dtype.itemsize
    contiguous = [item * math.prod(shape[i + 1:]) for i in range(rank)]
    if strides is not None and tuple(int(s) for s in strides) != tuple(contiguous):
        raise ValueError(f"array: strides {tuple(strides)} are not C-contiguous ({tuple(contiguous)} for shape "
                         f"{shape}); fix: pass cupy.ascontiguousarray(array)")
    align_elements = 16 // math.gcd(16, item)
    # innermost first, as the driver takes them
    global_dim = shape[::-1]
    global_strides = tuple(contiguous[i] for i in range(rank - 2, -1, -1))   # bytes of dims 1..rank-1
    for s in global_strides:
        if s % 16:
            raise ValueError(f"array: a row of {shape[-1]} {dtype.name} elements is {s} bytes, not a multiple of 16 "
                             f"(a tensor map's strides must be); fix: pad the innermost dimension to a multiple of "
                             f"{align_elements} elements")
        if s >= 2**40:
            raise ValueError(f"array: stride {s} bytes is 2^40 or more, more than a tensor map takes")

    box_dim = _ints(box, "box", rank)
    for b in box_dim:
        if not 1 <= b <= MAX_BOX:
            raise ValueError(f"box: {tuple(box_dim)} has an extent {b} outside 1..{MAX_BOX}")
    if swizzle is None:
        swizzle = 0
    if not _hashable(swizzle) or swizzle not in SWIZZLES:
        raise ValueError(f"swizzle: {swizzle!r} is not a swizzle span; use 128, 64, 32 or 0 (none)")
    inner = box_dim[-1] * item
    if inner % 16:
        raise ValueError(f"box: its innermost extent {box_dim[-1]} x {item} bytes = {inner} bytes is not a multiple of 16")
    if swizzle and inner > swizzle:
        raise ValueError(f"box: its innermost extent {box_dim[-1]} x {item} bytes = {inner} bytes is more than the "
                         f"{swizzle}-byte swizzle span; fix: at most {swizzle // item} elements, or a larger swizzle")
    steps = _ints(element_strides, "element_strides", rank) if element_strides is not None else [1] * rank
    for e in steps:
        if not 1 <= e <= MAX_ELEMENT_STRIDE:
            raise ValueError(f"element_strides: {tuple(steps)} has a step {e} outside 1..{MAX_ELEMENT_STRIDE}")
    if not _hashable(l2_promotion) or l2_promotion not in L2_PROMOTIONS:
        raise ValueError(f"l2_promotion: {l2_promotion!r} is not one of 0, 64, 128, 256 (bytes)")
    if oob_nan and code not in FLOAT_DATA_TYPES:
        raise ValueError(f"oob_nan: needs a float16, bfloat16, float32 or float64 array, not {dtype.name}")
    box_in, steps_in = tuple(box_dim[::-1]), tuple(steps[::-1])
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    c_args = ((u64 * rank)(*global_dim), (u64 * max(1, rank - 1))(*(global_strides or (0,))),   # never NULL
              (u32 * rank)(*box_in), (u32 * rank)(*steps_in))
    return Layout(code, rank, global_dim, global_strides, box_in, steps_in, INTERLEAVE_NONE, SWIZZLES[swizzle],
                  L2_PROMOTIONS[l2_promotion], OOB_FILL_NAN if oob_nan else OOB_FILL_NONE, align_elements, c_args)


def _ints(values: Any, name: str, rank: int) -> list[int]:
    """``values`` as a list of ``rank`` ints (TypeError / ValueError naming ``name`` otherwise)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) and not hasattr(values, "__iter__"):
        raise TypeError(f"{name}: expected a sequence of {rank} integers, got {type(values).__name__}")
    out = list(values)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in out):
        raise TypeError(f"{name}: expected integers, got {out!r}")
    if len(out) != rank:
        raise ValueError(f"{name}: has {len(out)} entries for an array of {rank} dimensions (one per dimension, "
                         f"outermost first like array.shape)")
    return [int(v) for v in out]


def _encode(tensor_map_ptr: int, layout: Layout, global_address: int) -> None:
    """Call the driver's ``cuTensorMapEncodeTiled`` to write the descriptor of ``layout`` at
    ``global_address`` into ``tensor_map_ptr`` (a 128-byte-aligned host address of 128 bytes):
    through ctypes on libcuda.so.1 with the layout's prebuilt arrays (2.3 us a call on the H200;
    cuda-python's binding, 4.1 us, converts its arguments on every call and is used only where
    libcuda.so.1 cannot be loaded by name). Raises :class:`TensorMapError` when the driver refuses. Tests
    replace this function."""
    try:
        lib = _libcuda()
    except TensorMapError:
        via_binding = _cuda_python_encoder()
        if via_binding is None:
            raise
        try:
            via_binding(tensor_map_ptr, layout, global_address)
        except TensorMapError:
            raise
        except Exception as exc:   # e.g. the binding's own "driver library not found"
            raise TensorMapError(f"cuTensorMapEncodeTiled through cuda-python failed: {type(exc).__name__}: {exc} "
                                 "(tensor maps need an NVIDIA driver)") from None
        return
    dims, strides, boxes, steps = layout.c_args
    result = lib.cuTensorMapEncodeTiled(ctypes.c_void_p(tensor_map_ptr), layout.data_type, layout.rank,
                                        ctypes.c_void_p(global_address), dims, strides, boxes, steps,
                                        layout.interleave, layout.swizzle, layout.l2_promotion, layout.oob_fill)
    if result != 0:
        raise TensorMapError(f"cuTensorMapEncodeTiled failed: {_error_name(lib, result)} ({result}) for "
                             f"{_describe(layout)}")


def _describe(layout: Layout) -> str:
    return (f"globalDim={list(layout.global_dim)}, globalStrides={list(layout.global_strides)}, "
            f"boxDim={list(layout.box_dim)}, elementStrides={list(layout.element_strides)}, swizzle={layout.swizzle}")


_LIBCUDA: Any = None


def _libcuda() -> Any:
    """libcuda.so.1 with ``cuTensorMapEncodeTiled``'s prototype (CUDA 13 ``cuda.h``): CUresult
    (CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
    const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
    CUtensorMapL2promotion, CUtensorMapFloatOOBfill); the enums are C ints."""
    global _LIBCUDA
    if _LIBCUDA is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise TensorMapError(f"the CUDA driver library libcuda.so.1 cannot be loaded ({exc}): tensor maps "
                                 "need an NVIDIA driver") from None
        fn = lib.cuTensorMapEncodeTiled
        u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
                       ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        fn.restype = ctypes.c_int
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.cuGetErrorName.restype = ctypes.c_int
        _LIBCUDA = lib
    return _LIBCUDA


def _error_name(lib: Any, result: int) -> str:
    name = ctypes.c_char_p()
    if lib.cuGetErrorName(result, ctypes.byref(name)) == 0 and name.value:
        return name.value.decode(errors="replace")
    return "CUresult"


def _cuda_python_encoder() -> Callable[..., None] | None:
    """An encoder through cuda-python's driver binding (``cuda.bindings.driver``), or None when it is
    not installed. Its ``cuTensorMapEncodeTiled`` returns its own ``CUtensorMap``, whose 128 bytes
    are copied into the aligned buffer."""
    try:
        from cuda.bindings import driver   # cuda-python >= 12.6
    except ImportError:
        return None

    def encode(tensor_map_ptr: int, layout: Layout, global_address: int) -> None:
        u64, u32 = driver.cuuint64_t, driver.cuuint32_t   # the binding takes its own integer types
        err, tmap = driver.cuTensorMapEncodeTiled(
            driver.CUtensorMapDataType(layout.data_type), u32(layout.rank), global_address,
            [u64(v) for v in layout.global_dim], [u64(v) for v in layout.global_strides],
            [u32(v) for v in layout.box_dim], [u32(v) for v in layout.element_strides],
            driver.CUtensorMapInterleave(layout.interleave), driver.CUtensorMapSwizzle(layout.swizzle),
            driver.CUtensorMapL2promotion(layout.l2_promotion), driver.CUtensorMapFloatOOBfill(layout.oob_fill))
        if int(err) != 0:
            raise TensorMapError(f"cuTensorMapEncodeTiled failed: {getattr(err, 'name', err)} ({int(err)}) for "
                                 f"{_describe(layout)}")
        ctypes.memmove(tensor_map_ptr, int(tmap.getPtr()), TENSOR_MAP_BYTES)

    return encode
