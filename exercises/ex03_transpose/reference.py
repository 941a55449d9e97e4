"""Oracle for ex03_transpose: y = x.T (exact), as a C-contiguous float64 array.

``xp`` is numpy or cupy.
"""


def reference(xp, x):
    return xp.ascontiguousarray(x.T, dtype=xp.float64)
