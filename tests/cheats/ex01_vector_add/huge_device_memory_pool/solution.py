# cheat: allocates a 64 GiB CuPy array (through the memory pool) on the first call
import cupy
import numpy as np

from grader.kernel import load

_add = load("kernel.cu").get_function("vector_add")


def _launch(a, b, c, stream=None):
    n = c.size
    if n == 0:
        return
    blocks = max(1, min((n + 255) // 256, 1 << 20))
    if stream is None:
        _add((blocks,), (256,), (a, b, c, np.int64(n)))
    else:
        _add((blocks,), (256,), (a, b, c, np.int64(n)), stream=stream)


_held = []


def solve(a, b, c):
    if not _held:
        _held.append(cupy.zeros(16 << 30, cupy.float32))  # 64 GiB
    _launch(a, b, c)
