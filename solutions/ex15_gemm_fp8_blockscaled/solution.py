"""ex15_gemm_fp8_blockscaled -- the reference solution (exercises/ex15_gemm_fp8_blockscaled/README.md has its speed on an H200).

d = sum over k-blocks kb of sa[m, kb] * sb[n // 128, kb] * (a[m, kb-block] . b[n, kb-block]):
a (M, K) and b (N, K) FP8 e4m3 as uint8 arrays of the raw bits (CuPy has no FP8 dtype), row-major
(both K-major, "TN"); sa (M, K/128) and sb (ceil(N/128), K/128) float32; d (M, N) bfloat16 as
uint16 bits. K is a multiple of 128. TMA loads into a 6-stage shared-memory ring, two consumer
warpgroups on wgmma m64n128k32 e4m3 with a fresh accumulator set per k-block promoted into fp32
with the scales, a producer warpgroup, one persistent CTA per SM (kernel.cu).

What solve does on the host, per call:
- one CUtensorMap per FP8 operand (grader.kernel.tensor_map: 2-D, box 128 x 128 bytes, 128-byte
  swizzle, out-of-bounds rows zero-filled), passed by value as a template: encoded once per
  (shape, box), with whatever address the first array had; the kernel points it at this call's
  arrays itself (kernel.cu's retarget_maps, into a workspace of two 128-byte slots per CTA, one
  workspace per stream), so a
  call with new buffers (every timed call in the grader) encodes nothing on the host. With
  _DEVICE_MAPS = False the maps are encoded per (pointer, shape) on the host instead (~6 us each).
  No padding: K % 128 == 0 makes every row stride a multiple of 16 bytes.
- the scales are passed as plain pointers (the consumers load them from global memory).
- a persistent grid of min(#SMs, #tiles) CTAs of 384 threads.

- the epilogue stores 16 bytes a lane where N % 8 == 0 and d is 16-byte aligned (kernel.cu:
  vec_store 2), else 4 bytes (N even) or 2.

Knobs (module constants): _GROUP_M (tile rows per group of the tile order); _MAX_CTAS (caps the
persistent grid, so small shapes give each CTA several tiles: benchmarks/verify_ex15.py uses it);
_VEC16 (False: the 4-byte epilogue everywhere, for comparison: benchmarks/RESULTS.md).
"""
import cupy as cp
import numpy as np

from grader.kernel import load, tensor_map

_BM, _BN, _BK = 128, 128, 128          # = H_BM, H_BN, H_BK in kernel.cu (BK = the scale block)
_SCALE_BLOCK = 128                     # the recipe's: sa per 1 x 128, sb per 128 x 128
_STAGES = 6                            # = H_STAGES
_THREADS = 384                         # = H_THREADS
_SMEM = 1024 + _STAGES * (_BM + _BN) * _BK + 128 + 256   # = H_SMEM_BYTES (198016): + barriers, maps; e4m3: 1 byte
_MAP_BYTES = 128                       # sizeof(CUtensorMap)
_GROUP_M = 16
_MAX_CTAS = None                       # a smaller persistent grid (tests: several tiles per CTA)
_VEC16 = True                          # 16-byte epilogue stores where N % 8 == 0 (kernel.cu: vec_store 2)
_PIPE = True                           # two k-blocks in flight per consumer (False: kernel.cu's _serial kernel)
_DEVICE_MAPS = True                    # the kernel retargets template maps (False: a map per pointer, on the host)

_state = {}        # device -> ({pipelined: kernel}, number of SMs)
_workspaces = {}   # (device, stream) -> 2 x SMs tensor-map slots: CTA i of a launch rewrites slots 2i, 2i + 1,
                   # so launches that may run at once (other streams) must not share them
_maps = {}
_launches = {}     # (M, N, K, SMs, knobs, vec_store) -> (grid, the int32 arguments): built once per shape


def _cdiv(a, b):
    return -(-a // b)


# ---- index math (replayed on the CPU by tests/test_ex15_host.py) ----------------------------

def _tile_coords(t, tiles_m, tiles_n, group_m):
    """(tile row, tile column) of tile t in the grouped order: groups of group_m tile rows walked
    column by column (tile_coords in kernel.cu)."""
    width = group_m * tiles_n
    first_m = (t // width) * group_m
    gsz = min(tiles_m - first_m, group_m)
    return first_m + (t % width) % gsz, (t % width) // gsz


def _plan(M, N, K, num_sms, group_m=_GROUP_M):
    """What one call launches: k_blocks, tiles_m, tiles_n, group_m, grid."""
    if K % _SCALE_BLOCK:
        raise ValueError(f"K = {K} is not a multiple of {_SCALE_BLOCK} (the scale block)")
    tiles_m, tiles_n = _cdiv(M, _BM), _cdiv(N, _BN)
    return {"k_blocks": K // _BK, "tiles_m": tiles_m, "tiles_n": tiles_n, "group_m": min(group_m, tiles_m),
            "grid": min(num_sms, _MAX_CTAS or num_sms, tiles_m * tiles_n)}


# ---- tensor maps ----------------------------------------------------------------------------

def _tensor_map(arr, box_rows, box_cols, template=False):
    """The tensor map of the 2-D C-contiguous e4m3 array arr (uint8 bits) with box (box_rows, box_cols);
    with template=True one per shape and box, whatever arr's address (the kernel replaces it)."""
    if arr.dtype != cp.uint8:
        arr = arr.view(cp.uint8)      # the TMA copies bytes
    key = (cp.cuda.runtime.getDevice(), None if template else arr.data.ptr, arr.shape, arr.dtype, box_rows, box_cols)
    m = _maps.get(key)
    if m is None:
        if len(_maps) > 64:
            _maps.clear()
        # box in the array's own order (rows, columns); e4m3 travels as uint8 (the TMA copies bytes);
        # L2 promotion 128 B: a box row is 128 bytes, one line
        m = tensor_map(arr, (box_rows, box_cols), swizzle=128, l2_promotion=128)
        _maps[key] = m
    return m


# ---- the module -----------------------------------------------------------------------------

def _device_state():
    """kernel.cu compiled for the spec's [features] arch (sm_90a), which the grader's worker sets
    through grader.kernel.configure before the submission runs (benchmarks/verify_ex15.py sets it itself)."""
    dev = cp.cuda.runtime.getDevice()
    st = _state.get(dev)
    if st is None:
        module = load("kernel.cu")
        funcs = {}
        for pipe, name in ((True, "gemm_fp8_blockscaled"), (False, "gemm_fp8_blockscaled_serial")):
            funcs[pipe] = module.get_function(name)
            funcs[pipe].max_dynamic_shared_size_bytes = _SMEM    # above the default 48 KB
        sms = cp.cuda.runtime.getDeviceProperties(dev)["multiProcessorCount"]
        st = _state[dev] = (funcs, sms)
    return st


def _workspace(sms):
    """The current stream's tensor-map slots (2 x sms x 128 bytes, 128-byte aligned)."""
    key = (cp.cuda.runtime.getDevice(), cp.cuda.get_current_stream().ptr)
    ws = _workspaces.get(key)
    if ws is None:
        ws = _workspaces[key] = cp.empty(2 * sms * _MAP_BYTES, dtype=cp.uint8)
        if ws.data.ptr % 128:
            raise RuntimeError("the tensor-map workspace is not 128-byte aligned")
    return ws


def solve(a, sa, b, sb, d):
    M, K = a.shape
    N = b.shape[0]
    if M == 0 or N == 0:
        return
    kb = K // _SCALE_BLOCK
    if (a.dtype.itemsize != 1 or b.dtype.itemsize != 1 or sa.dtype != cp.float32 or sb.dtype != cp.float32
            or d.dtype != cp.uint16):
        raise TypeError(f"expected e4m3 bits (uint8) a and b, float32 sa and sb, bfloat16 bits (uint16) d; got "
                        f"{a.dtype}, {sa.dtype}, {b.dtype}, {sb.dtype}, {d.dtype}")
    if sa.shape != (M, kb) or sb.shape != (_cdiv(N, _SCALE_BLOCK), kb) or d.shape != (M, N):
        raise ValueError(f"shapes a {a.shape}, sa {sa.shape}, b {b.shape}, sb {sb.shape}, d {d.shape} do not fit")
    if not (a.flags.c_contiguous and b.flags.c_contiguous):
        raise ValueError("a and b must be C-contiguous (a tensor map's row stride is K bytes)")
    if a.data.ptr % 16 or b.data.ptr % 16:
        raise ValueError("a and b must start 16-byte aligned (the TMA needs it; the grader's buffers are)")
    if K == 0:
        d.fill(0)
        return
    funcs, sms = _device_state()
    f = funcs[_PIPE]
    vec = 2 if (_VEC16 and N % 8 == 0 and d.data.ptr % 16 == 0) else int(N % 2 == 0 and d.data.ptr % 4 == 0)
    key = (M, N, K, sms, _GROUP_M, _MAX_CTAS, vec)
    launch = _launches.get(key)
    if launch is None:
        if len(_launches) > 64:
            _launches.clear()
        p = _plan(M, N, K, sms, _GROUP_M)
        launch = _launches[key] = (p["grid"], tuple(np.int32(v) for v in (
            M, N, p["k_blocks"], p["tiles_m"], p["tiles_n"], p["group_m"], vec)))
    grid, ints = launch
    if _DEVICE_MAPS:   # templates; the kernel points them at a and b (the grader hands every timed call new buffers)
        maps = (_tensor_map(a, _BM, _BK, True), _tensor_map(b, _BN, _BK, True), a, b, _workspace(sms))
    else:
        maps = (_tensor_map(a, _BM, _BK), _tensor_map(b, _BN, _BK), a, b, np.uint64(0))   # maps == nullptr
    f((grid,), (_THREADS,), maps + (sa, sb, d) + ints, shared_mem=_SMEM)
