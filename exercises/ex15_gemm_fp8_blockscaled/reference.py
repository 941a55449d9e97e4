"""Oracle for ex15_gemm_fp8_blockscaled (DRAFT): block-scaled FP8 GEMM in float64.

D[m, n] = sum over k-blocks kb of sa[m, kb] * sb[n // 128, kb] * sum_{k in kb} A[m, k] B[n, k],
A (M, K) and B (N, K) FP8 e4m3 (OCP "OFP8 Formats for Deep Learning" v1.0, 2023: E4M3, bias 7, no
infinities, NaN only S.1111.111, largest finite 448; NVIDIA's __nv_fp8_e4m3, torch.float8_e4m3fn),
sa (M, K/128) and sb (ceil(N/128), K/128) float32.

FP8 inputs reach the oracle decoded to float32 by the grader (grader/dtypes.py), as bfloat16 ones
do; raw uint8 bit patterns (what verify.py passes) are decoded here with the same exact table. In float64 every A[m, k] * sa[m, kb] (4 + 24
significant bits) and B[n, k] * sb[.., kb] is exact; their product and the sums round at 2^-53.
"""
import numpy as np

from grader import dtypes as _dtypes

SCALE_BLOCK = 128


# The format's table and encoder are the grader's (grader/dtypes.py); kept under these names for
# verify.py and tests/test_ex15_draft.py.
E4M3 = _dtypes.E4M3.astype(np.float64)
encode_e4m3 = _dtypes.encode_e4m3


def decode_e4m3(xp, bits):
    """The float64 values of an array of e4m3 bit patterns (uint8); float arrays pass through."""
    if bits.dtype.kind == "f":
        return bits.astype(xp.float64)
    return xp.asarray(E4M3)[bits.astype(xp.int32)]


def _scaled(xp, a, sa, b, sb):
    """A and B decoded to float64 with their scales applied per element (exact products)."""
    a64 = decode_e4m3(xp, a)
    b64 = decode_e4m3(xp, b)
    M, K = a64.shape
    N = b64.shape[0]
    rows = xp.arange(N) // SCALE_BLOCK
    sa_full = xp.repeat(sa.astype(xp.float64), SCALE_BLOCK, axis=1)            # (M, K)
    sb_full = xp.repeat(sb.astype(xp.float64)[rows], SCALE_BLOCK, axis=1)      # (N, K)
    return a64 * sa_full, b64 * sb_full


def reference(xp, a, sa, b, sb):
    a_s, b_s = _scaled(xp, a, sa, b, sb)
    return a_s @ b_s.T


def magnitude(xp, a, sa, b, sb):
    """sum_kb |sa| |sb| (|A_kb| |B_kb|^T) in float64: the scale of each element's rounding error (spec.toml)."""
    a_s, b_s = _scaled(xp, a, sa, b, sb)
    return xp.abs(a_s) @ xp.abs(b_s).T
