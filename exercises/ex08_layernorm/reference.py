"""Oracle for ex08_layernorm: row-wise layer normalisation in float64 (biased variance).

``xp`` is numpy or cupy; ``eps`` is a Python float (the float32 scalar, exactly).
"""


def reference(xp, x, gamma, beta, eps):
    x = x.astype(xp.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / xp.sqrt(var + eps) * gamma.astype(xp.float64) + beta.astype(xp.float64)


def magnitude(xp, x, gamma, beta, eps):
    """Each output's sensitivity to rounding: |gamma| (|x| + mean_row|x|) / sqrt(var + eps) + |beta|,
    in float64 (the tolerance is a multiple of eps times this; see spec.toml)."""
    x = x.astype(xp.float64)
    ax = xp.abs(x)
    mean = x.mean(axis=-1, keepdims=True)
    rstd = 1.0 / xp.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps)
    return xp.abs(gamma.astype(xp.float64)) * (ax + ax.mean(axis=-1, keepdims=True)) * rstd \
        + xp.abs(beta.astype(xp.float64))
