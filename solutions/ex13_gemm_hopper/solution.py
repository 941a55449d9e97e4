"""ex13_gemm_hopper -- the reference solution (exercises/ex13_gemm_hopper/README.md has its speed on an H200).

c = a b^T: a (M, K) and b (N, K) row-major (both K-major, "TN"), float16, or bfloat16 given as
uint16 arrays of bf16 bit patterns (CuPy has no bfloat16 dtype); c (M, N) in the inputs' dtype.
TMA loads into a 4-stage shared-memory ring, two consumer warpgroups on wgmma m64n256k16, a
producer warpgroup, one persistent CTA per SM (kernel.cu).

What solve does on the host, per call:
- K % 8 != 0 (or an input not 16-byte aligned): the TMA needs row strides that are multiples of
  16 bytes, so a and/or b are copied into zero-padded scratch buffers of Kp = K rounded up to 8
  columns (pad_rows_u16 in kernel.cu; the buffers are cached per shape, the zero columns stay).
  This copy is timed: it is the reference's cost.
- one CUtensorMap per operand (grader.kernel.tensor_map: 2-D, box 128 x 64 for a and 256 x 64 for b,
  128-byte swizzle, out-of-bounds elements zero-filled), passed by value; cached per
  (pointer, shape, dtype).
- a persistent grid of min(#SMs, #tiles) CTAs of 384 threads.

Knobs (module constants): _GROUP_M (tile rows per group of the tile order); _MAX_CTAS (caps the
persistent grid, so small shapes give each CTA several tiles: benchmarks/verify_ex13.py uses it);
_VEC16 (False: the 4-byte epilogue stores everywhere, for comparison; benchmarks/RESULTS.md,
twenty-third session).
"""
import cupy as cp
import numpy as np

from grader.kernel import load, tensor_map

_BM, _BN, _BK = 128, 256, 64           # = H_BM, H_BN, H_BK in kernel.cu
_STAGES = 4                            # = H_STAGES
_THREADS = 384                         # = H_THREADS
_SMEM = 1024 + _STAGES * (_BM + _BN) * _BK * 2 + 2 * _STAGES * 8   # = H_SMEM_BYTES (197696)
_GROUP_M = 16
_MAX_CTAS = None                       # a smaller persistent grid (tests: several tiles per CTA)
_VEC16 = True                          # 16-byte epilogue stores where N % 8 == 0 (kernel.cu: vec_store 2)
_KINDS = {np.dtype(np.float16): "f16", np.dtype(np.uint16): "bf16"}   # uint16 = bfloat16 bits

_state = {}        # device -> (module, {kernel name: function}, number of SMs)
_scratch = {}
_maps = {}


def _cdiv(a, b):
    return -(-a // b)


# ---- index math (replayed on the CPU by tests/test_ex13_host.py) ----------------------------

def _tile_coords(t, tiles_m, tiles_n, group_m):
    """(tile row, tile column) of tile t in the grouped order: groups of group_m tile rows walked
    column by column (tile_coords in kernel.cu)."""
    width = group_m * tiles_n
    first_m = (t // width) * group_m
    gsz = min(tiles_m - first_m, group_m)
    return first_m + (t % width) % gsz, (t % width) // gsz


def _plan(M, N, K, num_sms, group_m=_GROUP_M):
    """What one call launches: Kp (K padded to 8), k_tiles, tiles_m, tiles_n, group_m, grid."""
    kp = _cdiv(K, 8) * 8
    tiles_m, tiles_n = _cdiv(M, _BM), _cdiv(N, _BN)
    return {"kp": kp, "k_tiles": _cdiv(kp, _BK), "tiles_m": tiles_m, "tiles_n": tiles_n,
            "group_m": min(group_m, tiles_m), "grid": min(num_sms, _MAX_CTAS or num_sms, tiles_m * tiles_n)}


# ---- tensor maps ----------------------------------------------------------------------------

def _tensor_map(arr, kind, box_rows, box_cols):
    """The tensor map of the 2-D C-contiguous array arr with box (box_rows, box_cols)."""
    key = (cp.cuda.runtime.getDevice(), arr.data.ptr, arr.shape, arr.dtype, box_rows, box_cols)
    m = _maps.get(key)
    if m is None:
        if len(_maps) > 64:
            _maps.clear()
        # box in the array's own order (rows, columns); bfloat16 bits travel as uint16 (the TMA
        # copies bytes); L2 promotion 256 B: a box row of 64 x 2 bytes spans two 128-byte lines
        m = tensor_map(arr, (box_rows, box_cols), swizzle=128, l2_promotion=256)
        _maps[key] = m
    return m


# ---- the module -----------------------------------------------------------------------------

def _load_module():
    """kernel.cu compiled for the spec's [features] arch (sm_90a), which the grader's worker sets
    through grader.kernel.configure before the submission runs (benchmarks/verify_ex13.py sets it itself)."""
    return load("kernel.cu")


def _device_state():
    dev = cp.cuda.runtime.getDevice()
    st = _state.get(dev)
    if st is None:
        module = _load_module()
        funcs = {}
        for kind in ("f16", "bf16"):
            f = module.get_function(f"gemm_hopper_{kind}")
            f.max_dynamic_shared_size_bytes = _SMEM           # above the default 48 KB
            funcs[kind] = f
        funcs["pad"] = module.get_function("pad_rows_u16")
        sms = cp.cuda.runtime.getDeviceProperties(dev)["multiProcessorCount"]
        st = _state[dev] = (module, funcs, sms)
    return st


def _padded(name, src, rows, cols, cols_p, pad):
    """A zero-padded (rows, cols_p) copy of src (rows, cols), one buffer per shape and dtype."""
    key = (cp.cuda.runtime.getDevice(), name, rows, cols_p, src.dtype)
    buf = _scratch.get(key)
    if buf is None:
        buf = _scratch[key] = cp.zeros((rows, cols_p), dtype=src.dtype)
    pad((min(_cdiv(cols_p, 256), 8), min(rows, 65535)), (256,),
        (src, buf, np.int32(rows), np.int32(cols), np.int32(cols_p)))
    return buf


def solve(a, b, c):
    M, K = a.shape
    N = b.shape[0]
    if M == 0 or N == 0:
        return
    if K == 0:
        c.fill(0)
        return
    kind = _KINDS.get(a.dtype)
    if kind is None or b.dtype != a.dtype or c.dtype != a.dtype:
        raise TypeError(f"expected float16 or uint16 (bfloat16 bits) a, b and c, got {a.dtype}, {b.dtype}, {c.dtype}")
    _module, funcs, sms = _device_state()
    p = _plan(M, N, K, sms, _GROUP_M)
    kp = p["kp"]
    if kp != K or a.data.ptr % 16:
        a = _padded("a", a, M, K, kp, funcs["pad"])
    if kp != K or b.data.ptr % 16:
        b = _padded("b", b, N, K, kp, funcs["pad"])
    map_a = _tensor_map(a, kind, _BM, _BK)
    map_b = _tensor_map(b, kind, _BN, _BK)
    vec = 2 if (_VEC16 and N % 8 == 0 and c.data.ptr % 16 == 0) else int(N % 2 == 0 and c.data.ptr % 4 == 0)
    funcs[kind]((p["grid"],), (_THREADS,),
                (map_a, map_b, c, np.int32(M), np.int32(N), np.int32(p["k_tiles"]), np.int32(p["tiles_m"]),
                 np.int32(p["tiles_n"]), np.int32(p["group_m"]), np.int32(vec)),
                shared_mem=_SMEM)
