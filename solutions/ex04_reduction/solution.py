"""ex04_reduction -- reference solution: out[0] = sum(x) (float32, 1-D, any length).

solve() uses the single-pass kernels (reduce_onepass_u8 / _u4). The two-kernel version that the
student template asks for (reduce_partial + reduce_final) is in the same kernel.cu; set
_ONE_PASS = False to time it instead (on an H200 it is ~1 % slower at n = 2^28 and ~5 % slower
at n = 2^24, the cost of the second launch).
"""
import cupy as cp
import numpy as np

from grader.kernel import load

_module = load("kernel.cu")
_partial = _module.get_function("reduce_partial")
_final = _module.get_function("reduce_final")
_onepass = {8: _module.get_function("reduce_onepass_u8"), 4: _module.get_function("reduce_onepass_u4")}

_ONE_PASS = True
_THREADS = 256          # = RD_THREADS in kernel.cu
_FINAL_THREADS = 1024   # = FINAL_THREADS in kernel.cu
_PARTIAL_UNROLL = 8     # = RD_UNROLL in kernel.cu (reduce_partial)
_BIG_N = 1 << 25        # single pass: 8 float4s in flight per thread from here on, else 4
# Blocks per SM (measured best on an H200): 8 (two waves of 4 resident 62-register blocks)
# with 8 float4s per thread for large n; 6 (one wave of 40-register blocks) with 4 float4s.
_BLOCKS_PER_SM = {8: 8, 4: 6}

_sm_count_cache = {}
_scratch = {}           # (device, kind, size) -> cached scratch buffers


def _sm_count(dev):
    n = _sm_count_cache.get(dev)
    if n is None:
        n = cp.cuda.runtime.getDeviceProperties(dev)["multiProcessorCount"]
        _sm_count_cache[dev] = n
    return n


def _grid(n, unroll, dev):
    per_block = _THREADS * unroll * 4       # elements a block consumes in one loop iteration
    blocks = (n + per_block - 1) // per_block
    return max(1, min(blocks, _sm_count(dev) * _BLOCKS_PER_SM[unroll]))


def solve(x, out):
    n = x.size
    dev = cp.cuda.runtime.getDevice()
    if _ONE_PASS:
        unroll = 8 if n >= _BIG_N else 4
        blocks = _grid(n, unroll, dev)
        bufs = _scratch.get((dev, "onepass", 0))
        if bufs is None:
            # zeroed once; the last block of every launch resets them to zero
            bufs = (cp.zeros(1, dtype=cp.float64), cp.zeros(1, dtype=cp.uint32))
            _scratch[(dev, "onepass", 0)] = bufs
        _onepass[unroll]((blocks,), (_THREADS,), (x, bufs[0], bufs[1], out, np.int64(n)))
    else:
        blocks = _grid(n, _PARTIAL_UNROLL, dev)
        partials = _scratch.get((dev, "partials", blocks))
        if partials is None:
            partials = cp.empty(blocks, dtype=cp.float32)
            _scratch[(dev, "partials", blocks)] = partials
        _partial((blocks,), (_THREADS,), (x, partials, np.int64(n)))
        _final((1,), (_FINAL_THREADS,), (partials, out, np.int32(blocks)))
