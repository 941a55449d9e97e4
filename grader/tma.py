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
``cuda.h``), through cuda-python's driver binding when it is installed, else through ctypes on
``libcuda.so.1``. The driver requires the descriptor's address to be 64-byte aligned: it is encoded
in place into a 128-byte-aligned host buffer (CUDA 13's ``CUtensorMap`` is ``alignas(128)``).

What :func:`tensor_map` returns is a numpy array of one element of dtype ``V128`` (128 raw bytes)
viewing that aligned buffer. CuPy passes a numpy array of size one to a ``RawKernel`` by value
(``cupy.cuda.function._pointer``: ``CNumpyArray``, CuPy >= 13; checked in CuPy 14.2's compiled module):
the driver copies the 128 bytes into the kernel's parameter space, where the kernel's declaration
(``alignas(64)``, as ``__grid_constant__`` needs) sets the 64-byte alignment. Keep the returned
object alive until the launch call has returned (CuPy holds it during the call).
"""
from __future__ import annotations

import ctypes
from collections.abc import Sequence
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
    dtype = np.dtype(array.dtype)
    shape = tuple(int(n) for n in cai["shape"])
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
    contiguous = [item * int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(rank)]
    strides = cai.get("strides")
    if strides is not None and tuple(int(s) for s in strides) != tuple(contiguous):
        raise ValueError(f"array: strides {tuple(strides)} are not C-contiguous ({tuple(contiguous)} for shape "
                         f"{shape}); fix: pass cupy.ascontiguousarray(array)")
    address = int(cai["data"][0])
    if address % 16:
        raise ValueError(f"array: data address {address:#x} is not 16-byte aligned (a tensor map needs it); "
                         f"fix: start the view at an element offset that is a multiple of {16 // np.gcd(16, item)}")
    # innermost first, as the driver takes them
    global_dim = list(shape[::-1])
    global_strides = [contiguous[i] for i in range(rank - 2, -1, -1)]   # bytes of dims 1..rank-1, innermost first
    for s in global_strides:
        if s % 16:
            raise ValueError(f"array: a row of {shape[-1]} {dtype.name} elements is {s} bytes, not a multiple of 16 "
                             f"(a tensor map's strides must be); fix: pad the innermost dimension to a multiple of "
                             f"{16 // np.gcd(16, item)} elements")
        if s >= 2**40:
            raise ValueError(f"array: stride {s} bytes is 2^40 or more, more than a tensor map takes")

    box_dim = _ints(box, "box", rank)
    for b in box_dim:
        if not 1 <= b <= MAX_BOX:
            raise ValueError(f"box: {tuple(box_dim)} has an extent {b} outside 1..{MAX_BOX}")
    if swizzle is None:
        swizzle = 0
    if swizzle not in SWIZZLES:
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
    if l2_promotion not in L2_PROMOTIONS:
        raise ValueError(f"l2_promotion: {l2_promotion!r} is not one of 0, 64, 128, 256 (bytes)")
    if oob_nan and code not in FLOAT_DATA_TYPES:
        raise ValueError(f"oob_nan: needs a float16, bfloat16, float32 or float64 array, not {dtype.name}")

    raw = np.zeros(TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN, dtype=np.uint8)
    skip = (-raw.ctypes.data) % TENSOR_MAP_ALIGN
    desc = raw[skip:skip + TENSOR_MAP_BYTES].view(np.dtype((np.void, TENSOR_MAP_BYTES)))
    assert desc.shape == (1,) and desc.ctypes.data % TENSOR_MAP_ALIGN == 0
    _encode(desc.ctypes.data, code, rank, address, global_dim, global_strides, box_dim[::-1], steps[::-1],
            INTERLEAVE_NONE, SWIZZLES[swizzle], L2_PROMOTIONS[l2_promotion], OOB_FILL_NAN if oob_nan else OOB_FILL_NONE)
    return desc


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


def _encode(tensor_map_ptr: int, data_type: int, rank: int, global_address: int, global_dim: list[int],
            global_strides: list[int], box_dim: list[int], element_strides: list[int], interleave: int,
            swizzle: int, l2_promotion: int, oob_fill: int) -> None:
    """Call the driver's ``cuTensorMapEncodeTiled`` to write the descriptor at ``tensor_map_ptr`` (a
    64-byte-aligned host address of 128 bytes); arrays are innermost first, strides in bytes (rank - 1
    of them). Raises :class:`TensorMapError` when the driver refuses. Tests replace this function."""
    via_binding = _cuda_python_encoder()
    if via_binding is not None:
        try:
            via_binding(tensor_map_ptr, data_type, rank, global_address, global_dim, global_strides, box_dim,
                        element_strides, interleave, swizzle, l2_promotion, oob_fill)
            return
        except (TypeError, AttributeError):   # a binding whose signature differs: the driver itself, below
            pass
    lib = _libcuda()
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    dims = (u64 * rank)(*global_dim)
    strides = (u64 * max(1, rank - 1))(*(global_strides or [0]))   # never a NULL pointer, even for rank 1
    boxes = (u32 * rank)(*box_dim)
    steps = (u32 * rank)(*element_strides)
    result = lib.cuTensorMapEncodeTiled(ctypes.c_void_p(tensor_map_ptr), data_type, rank,
                                        ctypes.c_void_p(global_address), dims, strides, boxes, steps,
                                        interleave, swizzle, l2_promotion, oob_fill)
    if result != 0:
        raise TensorMapError(f"cuTensorMapEncodeTiled failed: {_error_name(lib, result)} ({result}) for "
                             f"globalDim={global_dim}, globalStrides={global_strides}, boxDim={box_dim}, "
                             f"elementStrides={element_strides}, swizzle={swizzle}")


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

    def encode(tensor_map_ptr: int, data_type: int, rank: int, global_address: int, global_dim: list[int],
               global_strides: list[int], box_dim: list[int], element_strides: list[int], interleave: int,
               swizzle: int, l2_promotion: int, oob_fill: int) -> None:
        err, tmap = driver.cuTensorMapEncodeTiled(
            driver.CUtensorMapDataType(data_type), rank, global_address, global_dim, global_strides, box_dim,
            element_strides, driver.CUtensorMapInterleave(interleave), driver.CUtensorMapSwizzle(swizzle),
            driver.CUtensorMapL2promotion(l2_promotion), driver.CUtensorMapFloatOOBfill(oob_fill))
        if int(err) != 0:
            raise TensorMapError(f"cuTensorMapEncodeTiled failed: {getattr(err, 'name', err)} ({int(err)}) for "
                                 f"globalDim={global_dim}, globalStrides={global_strides}, boxDim={box_dim}, "
                                 f"elementStrides={element_strides}, swizzle={swizzle}")
        ctypes.memmove(tensor_map_ptr, int(tmap.getPtr()), TENSOR_MAP_BYTES)

    return encode
