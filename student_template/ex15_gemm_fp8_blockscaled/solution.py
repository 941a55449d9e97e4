"""ex15_gemm_fp8_blockscaled -- your solution: block-scaled FP8 GEMM with TMA and wgmma (write the
kernel in kernel.cu).

d[m, n] = sum over k-blocks kb of sa[m, kb] * sb[n // 128, kb] * (a[m, kb-block] . b[n, kb-block]).
a (M, K) and b (N, K): FP8 e4m3, row-major (K-major, "TN"), delivered as uint8 arrays of the raw
bits (CuPy has no FP8 dtype); sa (M, K/128) and sb (ceil(N/128), K/128): float32; d (M, N):
bfloat16 as a uint16 array of bf16 bit patterns. K is a multiple of 128.

The launch code below is complete. One CUtensorMap per operand (grader.kernel.tensor_map: box
128 x 128 bytes of a and of b, 128-byte swizzle, out-of-bounds rows zero-filled) is passed by
value, the scales as plain pointers; a persistent grid of min(#SMs, #tiles) CTAs of 384 threads
with _SMEM bytes of dynamic shared memory. No padding: K % 128 == 0 makes every row stride a
multiple of 16 bytes, as the TMA needs.
"""
import cupy as cp
import numpy as np

from grader.kernel import load, tensor_map

_BM, _BN, _BK = 128, 128, 128                   # = H_BM, H_BN, H_BK in kernel.cu (BK: the scale block)
_STAGES, _THREADS = 6, 384                      # = H_STAGES, H_THREADS
_SMEM = 1024 + _STAGES * (_BM + _BN) * _BK + 2 * _STAGES * 8   # = H_SMEM_BYTES (e4m3: 1 byte)
_GROUP_M = 16

_kernels = {}
_sms = {}
_maps = {}


def _cdiv(a, b):
    return -(-a // b)


def _kernel():
    """kernel.cu's gemm_fp8_blockscaled, compiled once per device (for sm_90a: the spec's arch)."""
    dev = cp.cuda.runtime.getDevice()
    if dev not in _kernels:
        f = _kernels[dev] = load("kernel.cu").get_function("gemm_fp8_blockscaled")
        f.max_dynamic_shared_size_bytes = _SMEM
        _sms[dev] = cp.cuda.runtime.getDeviceProperties(dev)["multiProcessorCount"]
    return _kernels[dev], _sms[dev]


def _map(arr, box):
    key = (cp.cuda.runtime.getDevice(), arr.data.ptr, arr.shape, arr.dtype, box)
    if key not in _maps:
        if len(_maps) > 64:
            _maps.clear()
        _maps[key] = tensor_map(arr, box, swizzle=128, l2_promotion=128)
    return _maps[key]


def _vec_store(N, out):
    """kernel.cu's vec_store for an output of N columns: 2 (8 elements a store: N % 8 == 0 and the
    output 16-byte aligned), 1 (pairs: N even, 4-byte aligned) or 0 (one element at a time)."""
    if N % 8 == 0 and out.data.ptr % 16 == 0:
        return 2
    return int(N % 2 == 0 and out.data.ptr % 4 == 0)


def solve(a, sa, b, sb, d):
    M, K = a.shape
    N = b.shape[0]
    if M == 0 or N == 0:
        return
    if K % _BK:
        raise ValueError(f"K = {K} is not a multiple of {_BK} (the scale block)")
    if K == 0:
        d.fill(0)
        return
    f, sms = _kernel()
    tiles_m, tiles_n = _cdiv(M, _BM), _cdiv(N, _BN)
    f((min(sms, tiles_m * tiles_n),), (_THREADS,),
      (_map(a.view(cp.uint8), (_BM, _BK)), _map(b.view(cp.uint8), (_BN, _BK)), sa, sb, d, np.int32(M), np.int32(N),
       np.int32(K // _BK), np.int32(tiles_m), np.int32(tiles_n), np.int32(min(_GROUP_M, tiles_m)),
       np.int32(_vec_store(N, d))),
      shared_mem=_SMEM)
