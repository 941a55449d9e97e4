"""ex03_transpose candidate (benchmarks only): y = x.T for float32 (rows, cols) -> (cols, rows), with
the writes of each tile aligned to ALIGN floats of y (kernel.cu); rows == 1 or cols == 1 (a plain
copy): the reference (solutions/ex03_transpose).

benchmarks/bench_references.py --tune checks every variant on edge shapes and times it next to
the reference (rows "ex03 candidate").

Knobs: _KERNEL = (TR, TC, ALIGN, MINB), a transpose_aligned_r{TR}_c{TC}_a{ALIGN}_b{MINB} of
kernel.cu; _GROUP as in the reference (tile columns per group; 1 = down one tile column after the
other). VARIANTS: the knob settings bench_references.py times.
"""
import numpy as np

from benchmarks.candidates import reference
from grader.kernel import load

_KERNEL = (128, 64, 8, 4)
_GROUP = 1
VARIANTS = [{"_KERNEL": k, "_GROUP": 1} for k in
            ((128, 64, 8, 1), (128, 64, 8, 4), (128, 64, 8, 5), (128, 64, 32, 4), (128, 32, 8, 5), (256, 32, 8, 1))]
_THREADS = 256            # = TR_THREADS in kernel.cu
_MAX_BLOCKS = 2**31 - 1

_module = load("kernel.cu")
_kernels = {}
_ref = reference("ex03_transpose")


def _cdiv(a, b):
    return -(-a // b)


def solve(x, y):
    rows, cols = x.shape
    tr, tc, align, minb = _KERNEL
    if rows <= 1 or cols <= 1 or rows % align == 0:     # a copy, or every shift 0: the reference
        return _ref.solve(x, y)
    name = f"transpose_aligned_r{tr}_c{tc}_a{align}_b{minb}"
    kernel = _kernels.get(name)
    if kernel is None:
        kernel = _kernels[name] = _module.get_function(name)
    tiles_r, tiles_c = _cdiv(rows + align - 1, tr), _cdiv(cols, tc)
    group = tiles_c if _GROUP <= 0 else min(_GROUP, tiles_c)
    blocks = min(tiles_r * tiles_c, _MAX_BLOCKS)
    kernel((blocks,), (_THREADS,), (x, y, np.int32(rows), np.int32(cols), np.int32(tiles_r),
                                    np.int32(tiles_c), np.int32(group)))
