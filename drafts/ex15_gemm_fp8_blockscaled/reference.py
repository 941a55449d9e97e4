"""Oracle for ex15_gemm_fp8_blockscaled (DRAFT): block-scaled FP8 GEMM in float64.

D[m, n] = sum over k-blocks kb of sa[m, kb] * sb[n // 128, kb] * sum_{k in kb} A[m, k] B[n, k],
A (M, K) and B (N, K) FP8 e4m3 (OCP "OFP8 Formats for Deep Learning" v1.0, 2023: E4M3, bias 7, no
infinities, NaN only S.1111.111, largest finite 448; NVIDIA's __nv_fp8_e4m3, torch.float8_e4m3fn),
sa (M, K/128) and sb (ceil(N/128), K/128) float32.

FP8 arrays arrive as uint8 arrays of the raw bits (CuPy has no FP8 dtype) and are decoded here with
an exact table; already-decoded float arrays (what a grader that decodes FP8 itself would pass, as
it does for bfloat16) are taken as they are. In float64 every A[m, k] * sa[m, kb] (4 + 24
significant bits) and B[n, k] * sb[.., kb] is exact; their product and the sums round at 2^-53.
"""
import numpy as np

SCALE_BLOCK = 128


def _e4m3_table():
    """float64 value of each of the 256 e4m3 codes (index = the byte)."""
    t = np.empty(256, dtype=np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exp = (code >> 3) & 0xF
        man = code & 0x7
        if exp == 0xF and man == 0x7:
            t[code] = np.nan                                    # S.1111.111: the only NaN; no infinities
        elif exp == 0:
            t[code] = sign * man * 2.0 ** -9                    # subnormal: (man / 8) 2^(1 - 7)
        else:
            t[code] = sign * (1.0 + man / 8.0) * 2.0 ** (exp - 7)
    return t


E4M3 = _e4m3_table()


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


def encode_e4m3(xp, x):
    """e4m3 bit patterns (uint8) of the float array x: round to nearest, ties to the even code,
    saturating to +-448 (cvt.rn.satfinite.e4m3x2.f32's rounding; what the grader's encoder needs
    to do, as grader.dtypes.encode does for bfloat16); NaN -> 0x7F. Used by verify.py and the tests."""
    x = xp.asarray(x, dtype=xp.float64)
    pos = xp.asarray(E4M3[:0x7F])                       # codes 0x00..0x7E: 0 .. 448, increasing
    mag = xp.minimum(xp.abs(x), 448.0)
    hi = xp.clip(xp.searchsorted(pos, mag, side="left"), 1, 0x7E)   # pos[hi - 1] < mag <= pos[hi] (mag > 0)
    lo = hi - 1
    dlo, dhi = mag - pos[lo], pos[hi] - mag
    code = xp.where((dhi < dlo) | ((dhi == dlo) & (hi % 2 == 0)), hi, lo)
    code = xp.where(mag == 0, 0, code)
    code = code | xp.where(xp.signbit(x), 0x80, 0)
    return xp.where(xp.isnan(x), 0x7F, code).astype(xp.uint8)
