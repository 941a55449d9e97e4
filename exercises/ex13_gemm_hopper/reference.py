"""Oracle for ex13_gemm_hopper: C = A @ B^T in float64; A (M, K) and B (N, K), both
K-major ("TN"). Half-precision inputs arrive decoded to float32."""


def reference(xp, a, b):
    return a.astype(xp.float64) @ b.astype(xp.float64).T


def magnitude(xp, a, b):
    """|A| |B|^T in float64: the scale of each element's rounding error (see spec.toml)."""
    return xp.abs(a.astype(xp.float64)) @ xp.abs(b.astype(xp.float64)).T
