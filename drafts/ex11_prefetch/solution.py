"""drafts/ex11_prefetch -- candidate ex11 reference: c = a @ b (float32), register-tiled SGEMM with
register double buffering of the fragments and cp.async for B (see kernel.cu). Same contract as
solutions/ex11_gemm_regtile/solution.py (any M, N, K >= 1; c float32 M x N, written whole).

Knob (module constant, for benchmarks/bench_gemm.py --tune): _VEC_KERNEL, the kernel used when
every row of a, b and c starts 16-byte aligned (K % 4 == 0 and N % 4 == 0, aligned bases):
"w_k16_async" (128 threads, 8 x 16 outputs each, K step 16), "w_k8_async" (K step 8) or
"k8_async" (256 threads, 8 x 8 each). Other shapes: "k8_v1" (scalar guarded loads). Not yet
run on a GPU.
"""
import numpy as np

from grader.kernel import load

_module = load("kernel.cu")
_kernels = {}
_plans = {}

_BM, _BN = 128, 128                  # = P_BM, P_BN in kernel.cu
_VEC_KERNEL = "w_k16_async"
_THREADS = {"w_k16_async": 128, "w_k8_async": 128, "k8_async": 256, "k8_v1": 256}
_GROUP_M = 8                         # tile rows per group of the tile order


def _fn(name):
    f = _kernels.get(name)
    if f is None:
        f = _kernels[name] = _module.get_function("gemm_pf_" + name)
    return f


def _cdiv(a, b):
    return -(-a // b)


def solve(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0:
        return
    if K == 0:
        c.fill(0)
        return
    vec = (K % 4 == 0 and N % 4 == 0 and a.data.ptr % 16 == 0 and b.data.ptr % 16 == 0
           and c.data.ptr % 16 == 0)
    name = _VEC_KERNEL if vec else "k8_v1"
    key = (M, N, K, name, _GROUP_M)
    plan = _plans.get(key)
    if plan is None:
        tiles_m, tiles_n = _cdiv(M, _BM), _cdiv(N, _BN)
        args = (np.int32(M), np.int32(N), np.int64(K), np.int32(tiles_m), np.int32(tiles_n),
                np.int32(min(_GROUP_M, tiles_m)))
        plan = _plans[key] = (_fn(name), (tiles_m * tiles_n,), _THREADS[name], args)
    kernel, grid, threads, tail = plan
    kernel(grid, (threads,), (a, b, c) + tail)
