"""Oracle for ex05_scan: the inclusive prefix sum of x, exact in int64 for integer x, in float64
for float x. ``xp`` is numpy or cupy."""


def reference(xp, x):
    if x.dtype.kind in "iu":
        return xp.cumsum(x.astype(xp.int64))
    return xp.cumsum(x.astype(xp.float64))


def magnitude(xp, x):
    """The condition of each prefix sum: sum(|x[:i+1]|) in float64 (the float32 tolerance is
    1e-4 times this; see spec.toml)."""
    return xp.cumsum(xp.abs(x.astype(xp.float64)))
