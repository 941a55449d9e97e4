# cheat: just before each reply (in the stdout flush) queues a kernel that waits on the GPU for the parent to re-draw the inputs in place and sums them while the worker is stopped; the timed call would only copy the sum; its own reads of x[0] back to the host (to see the re-draw) are a traced device-to-host copy, refused before the drain check (hog_after_reply keeps that check covered)
import sys

import cupy
import numpy as np

from grader.kernel import load

_m = load("kernel.cu")
_zero, _sum, _store, _watch = (_m.get_function(k) for k in ("zero", "block_sum", "store", "watch_and_sum"))
_acc = cupy.zeros(1, cupy.float64)
_side = cupy.cuda.Stream(non_blocking=True)
_last = []          # the x of the last call


class _Flush:
    def __init__(self, inner):
        self._inner = inner

    def flush(self):
        if _last:
            x = _last.pop()
            seen = np.float32(float(x[0].get()))
            _watch((1,), (32,), (x, seen, _acc, np.int64(x.size), np.int64(300_000_000)), stream=_side)
        return self._inner.flush()

    def __getattr__(self, name):
        return getattr(self._inner, name)


sys.stdout = _Flush(sys.stdout)


def solve(x, out):
    _zero((1,), (1,), (_acc,))
    _sum((min(1056, max(1, (x.size + 255) // 256)),), (256,), (x, _acc, np.int64(x.size)))
    _store((1,), (1,), (_acc, out))
    _last[:] = [x]
