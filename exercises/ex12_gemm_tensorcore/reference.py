"""Oracle for ex12_gemm_tensorcore: C = A @ B in float64 (half-precision inputs arrive decoded to float32)."""


def reference(xp, a, b):
    return a.astype(xp.float64) @ b.astype(xp.float64)


def magnitude(xp, a, b):
    """|A| |B| in float64: the scale of each element's rounding error (see spec.toml)."""
    return xp.abs(a.astype(xp.float64)) @ xp.abs(b.astype(xp.float64))
