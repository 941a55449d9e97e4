"""ex03_transpose -- reference solution: y = x.T for float32 (rows, cols) -> (cols, rows).

See kernel.cu for the design. Knobs (module constants, for benchmarks/bench_references.py
--tune): _TILE ((rows, columns) of x per tile, a transpose_r{rows}_c{cols} kernel of kernel.cu),
_ALIGN (when rows % _ALIGN != 0, each tile's writes start on an _ALIGN-float boundary of y:
transpose_r{rows}_c{cols}_a{_ALIGN}; 0 = never) and _GROUP (tile columns per group of the tile
order; 1 = down one tile column after the other, 0 = plain row-major order).
"""
import numpy as np

from grader.kernel import load

_module = load("kernel.cu")
_kernels = {}
_copy = _module.get_function("transpose_copy")

_THREADS = 256          # = TR_THREADS in kernel.cu
_TILE = (128, 64)
_ALIGN = 8              # 32-byte sectors; kernel.cu has 8 for every tile and 32 for 128 x 64
_GROUP = 1
_MAX_BLOCKS = 2**31 - 1


def _cdiv(a, b):
    return -(-a // b)


def solve(x, y):
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return
    if rows == 1 or cols == 1:
        # Same memory layout: a copy. One float4 per thread.
        n = rows * cols
        vec = int(x.data.ptr % 16 == 0 and y.data.ptr % 16 == 0)
        blocks = max(1, min(_cdiv(max(n // 4, 1), _THREADS), _MAX_BLOCKS))
        _copy((blocks,), (_THREADS,), (x, y, np.int64(n), np.int32(vec)))
        return
    tr, tc = _TILE
    aligned = _ALIGN and rows % _ALIGN
    name = f"transpose_r{tr}_c{tc}" + (f"_a{_ALIGN}" if aligned else "")
    kernel = _kernels.get(name)
    if kernel is None:
        kernel = _kernels[name] = _module.get_function(name)
    tiles_r, tiles_c = _cdiv(rows + _ALIGN - 1 if aligned else rows, tr), _cdiv(cols, tc)
    group = tiles_c if _GROUP <= 0 else min(_GROUP, tiles_c)
    blocks = min(tiles_r * tiles_c, _MAX_BLOCKS)   # one block per tile
    kernel((blocks,), (_THREADS,), (x, y, np.int32(rows), np.int32(cols), np.int32(tiles_r),
                                    np.int32(tiles_c), np.int32(group)))
