"""ex09_gemm_naive -- your solution: c = a @ b for float32 a (M, K), b (K, N), c (M, N).

The launch code below is complete: blocks of 32 x 8 threads, one thread per element of c, a 1-D
grid over the tiles (M and N can each exceed the 65535 limit of gridDim.y). Write the kernel body
in kernel.cu; you may change the launch too, as long as solve() keeps its signature.
"""
import numpy as np

from grader.kernel import load

_module = load("kernel.cu")
_kernel = _module.get_function("gemm_naive")

_BX, _BY = 32, 8          # threads per block in x (columns of c) and y (rows of c)


def _cdiv(a, b):
    return -(-a // b)


def solve(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0:
        return
    tiles_n = _cdiv(N, _BX)
    grid = (_cdiv(M, _BY) * tiles_n,)
    _kernel(grid, (_BX, _BY), (a, b, c, np.int64(M), np.int64(N), np.int64(K), np.int64(tiles_n)))
