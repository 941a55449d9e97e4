"""ex02_saxpy -- reference solution: y = a * x + y in place (float32, 1-D, any length, any
4-byte aligned views). See kernel.cu for the design."""
import numpy as np

from grader.kernel import load

_saxpy = load("kernel.cu").get_function("saxpy")

_THREADS = 256          # = SX_THREADS in kernel.cu
_MAX_BLOCKS = 2**31 - 1  # grid x limit; the kernel's grid-stride loop covers anything beyond


def solve(a, x, y):
    n = y.size
    if n == 0:
        return
    # One float4 of y per thread, the whole array in one pass. The body has at most n // 4
    # float4s whatever y's alignment, so n / 1024 blocks of 256 threads cover it.
    blocks = max(1, min((n + 4 * _THREADS - 1) // (4 * _THREADS), _MAX_BLOCKS))
    _saxpy((blocks,), (_THREADS,), (np.float32(a), x, y, np.int64(n)))
