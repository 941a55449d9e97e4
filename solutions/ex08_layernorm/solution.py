"""ex08_layernorm -- reference solution: y = layernorm(x) * gamma + beta over the rows of a
float32 (rows, cols) matrix, eps a float32 scalar.

Dispatch (see kernel.cu):
  * rows that fit in one warp's registers -> ln_warp_v{4,1}_n{N}  (a group of g lanes per row)
  * longer rows (up to 16384)              -> ln_block_v{4,1}_n{N} (one block per row)
v4 when cols % 4 == 0 and every pointer is 16-byte aligned, else v1.
"""
import cupy as cp
import numpy as np

from grader.kernel import load

_module = load("kernel.cu")
_fns = {}

_WARP_THREADS = 256
_WARP_NS = {4: (1, 2, 4, 8), 1: (1, 4, 16)}        # instantiated slot counts of the warp kernels
_WARP_MAX_COLS = {4: 32 * 8 * 4, 1: 32 * 16}        # 1024 / 512 columns
_BLOCK_NS = {4: (4, 8), 1: (8, 16)}
_BLOCK_N = {4: 4, 1: None}                          # v4: 4 float4 per thread; v1: chosen from cols
_MAX_THREADS = 1024
_WARP_BLOCKS_PER_SM = 64                            # caps of the (grid-stride) grids
_BLOCK_BLOCKS_PER_SM = 256

_sm_count_cache = {}
_plans = {}


def _fn(name):
    f = _fns.get(name)
    if f is None:
        f = _fns[name] = _module.get_function(name)
    return f


def _sm_count(dev):
    n = _sm_count_cache.get(dev)
    if n is None:
        n = _sm_count_cache[dev] = cp.cuda.runtime.getDeviceProperties(dev)["multiProcessorCount"]
    return n


def _cdiv(a, b):
    return -(-a // b)


def _next_pow2(v):
    return 1 << max(0, int(v) - 1).bit_length()


def _plan(dev, rows, cols, vec):
    sms = _sm_count(dev)
    units = cols // vec
    if cols <= _WARP_MAX_COLS[vec]:
        if units <= 32:
            n, g = 1, _next_pow2(units)
        else:
            g = 32
            need = _cdiv(units, 32)
            n = next(k for k in _WARP_NS[vec] if k >= need)
        rows_per_block = _WARP_THREADS // g
        blocks = max(1, min(_cdiv(rows, rows_per_block), sms * _WARP_BLOCKS_PER_SM))
        return _fn(f"ln_warp_v{vec}_n{n}"), (blocks,), (_WARP_THREADS,), (np.int32(g.bit_length() - 1),)
    n = _BLOCK_N[vec] or (8 if units <= 8 * _MAX_THREADS else 16)
    threads = min(_MAX_THREADS, _cdiv(_cdiv(units, n), 32) * 32)
    assert threads * n >= units
    blocks = max(1, min(rows, sms * _BLOCK_BLOCKS_PER_SM))
    return _fn(f"ln_block_v{vec}_n{n}"), (blocks,), (threads,), ()


def solve(x, gamma, beta, y, eps):
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return
    aligned = all(a.data.ptr % 16 == 0 for a in (x, gamma, beta, y))
    vec = 4 if cols % 4 == 0 and aligned else 1
    key = (cp.cuda.runtime.getDevice(), rows, cols, vec)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _plan(*key)
    kernel, grid, block, extra = plan
    kernel(grid, block, (x, gamma, beta, y, np.int64(rows), np.int32(cols)) + extra + (np.float32(eps),))
