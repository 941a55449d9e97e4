"""Oracle for ex07_softmax: row-wise softmax in float64, with the row max subtracted first.

Infinities follow IEEE arithmetic (the spec's policy): -inf entries give 0 when the row has a
finite maximum; a row of all -inf gives NaN (-inf - -inf); a row containing +inf gives NaN
everywhere (inf - inf).
"""
import numpy as np


def reference(xp, x):
    x = x.astype(xp.float64)
    with np.errstate(invalid="ignore"):   # NaN rows are the policy, not an accident (numpy only)
        e = xp.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
