"""ex03_transpose -- your solution: y = x.T for float32 (rows, cols) -> (cols, rows).

The launch code below is complete (one block of 256 threads per 32 x 32 tile, 1-D grid); write
the kernel body in kernel.cu. You may change kernels and launch as you like, as long as solve()
keeps its signature.
"""
import numpy as np

from grader.kernel import load

_transpose = load("kernel.cu").get_function("transpose")

_TILE = 32              # = TILE in kernel.cu
_THREADS = 256


def solve(x, y):
    rows, cols = x.shape
    tiles_r = (rows + _TILE - 1) // _TILE
    tiles_c = (cols + _TILE - 1) // _TILE
    _transpose((tiles_r * tiles_c,), (_THREADS,), (x, y, np.int32(rows), np.int32(cols)))
