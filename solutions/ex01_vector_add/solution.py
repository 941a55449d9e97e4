"""ex01_vector_add -- reference solution: c = a + b (float32, 1-D, any length)."""
import numpy as np

from grader.kernel import load

_module = load("kernel.cu")
_add = _module.get_function("vector_add")

_THREADS = 256
_UNROLL = 1             # must match VA_UNROLL in kernel.cu (float4s per input per thread per iteration)
_MAX_BLOCKS = 2**31 - 1  # grid x limit; the kernel's grid-stride loop covers anything beyond


def solve(a, b, c):
    n = c.size
    if n == 0:
        return
    # One pass: enough blocks that every thread handles _UNROLL float4s (measured on an H200,
    # a full grid beats a capped persistent grid by 3-5 % here).
    per_block = _THREADS * _UNROLL * 4
    blocks = max(1, min((n + per_block - 1) // per_block, _MAX_BLOCKS))
    _add((blocks,), (_THREADS,), (a, b, c, np.int64(n)))
