# cheat: launches the kernel on a non-blocking stream, invisible to the worker's events on the default stream
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


_side = cupy.cuda.Stream(non_blocking=True)


def solve(a, b, c):
    _launch(a, b, c, stream=_side)
