"""Oracle for ex17_flash_attention_hopper, the same as ex14_flash_attention's (tests/test_ex17_host.py
checks that the code below this docstring is identical): attention in float64, one (batch, head) at
a time (the score matrix of a whole benchmark shape would not fit), the row max subtracted before exp.

causal = 1 masks key j for query i when j > i (top-left aligned, as torch's is_causal=True).
"""


def _mask(xp, sq: int, sk: int):
    """True where query i may not see key j (j > i)."""
    return xp.arange(sk)[None, :] > xp.arange(sq)[:, None]


def _heads(xp, q, k, v, causal):
    """(o, lse, weights) per (batch, head), in float64: weights = softmax(scores)."""
    b, h, sq, d = q.shape
    sk = k.shape[2]
    mask = _mask(xp, sq, sk) if causal else None
    scale = 1.0 / float(d) ** 0.5
    for i in range(b):
        for j in range(h):
            s = (q[i, j].astype(xp.float64) @ k[i, j].astype(xp.float64).T) * scale
            if mask is not None:
                s = xp.where(mask, -xp.inf, s)
            m = s.max(axis=1, keepdims=True)
            e = xp.exp(s - m)
            total = e.sum(axis=1, keepdims=True)
            yield i, j, e / total, (m + xp.log(total))[:, 0]


def reference(xp, q, k, v, causal):
    b, h, sq, d = q.shape
    o = xp.empty((b, h, sq, d), xp.float64)
    lse = xp.empty((b, h, sq), xp.float64)
    for i, j, w, row_lse in _heads(xp, q, k, v, causal):
        o[i, j] = w @ v[i, j].astype(xp.float64)
        lse[i, j] = row_lse
    return o, lse


def magnitude(xp, q, k, v, causal):
    """The allowed error of each element (see spec.toml, [tolerance.float32]): with
    ds = D eps32 max_j (|q_i| . |k_j|) / sqrt(D), a bound on the float32 score's error, for o
    (2^-6 + 2 ds) P |V|, plus for float16 inputs 2^-24 sum_{j: 0 < p_j < 2^-14} |v_j| with
    p_j = exp(s_ij - m_i) <= 1 (a weight rounded to float16 below its normal range errs by up to
    2^-25 absolutely, not relatively), and for lse (Sk + 8) eps32 + 4 eps32 |lse| + 2 ds. float16
    inputs arrive as float16 arrays; bfloat16 ones decoded to float32 (no subnormal term: bfloat16
    has float32's exponent range)."""
    import numpy as np
    b, h, sq, d = q.shape
    sk = k.shape[2]
    eps32 = 2.0 ** -23
    fp16 = q.dtype == np.float16
    o = xp.empty((b, h, sq, d), xp.float64)
    lse = xp.empty((b, h, sq), xp.float64)
    for i, j, w, row_lse in _heads(xp, q, k, v, causal):
        sens = xp.abs(q[i, j].astype(xp.float64)) @ xp.abs(k[i, j].astype(xp.float64)).T / float(d) ** 0.5
        ds = d * eps32 * sens.max(axis=1)
        av = xp.abs(v[i, j].astype(xp.float64))
        o[i, j] = (2.0 ** -6 + 2 * ds[:, None]) * (w @ av)
        if fp16:
            o[i, j] += 2.0 ** -24 * (_subnormal_weights(xp, w) @ av)
        lse[i, j] = (sk + 8) * eps32 + 4 * eps32 * xp.abs(row_lse) + 2 * ds
    return o, lse


def _subnormal_weights(xp, w):
    """1.0 where key j's unnormalised weight p_j = exp(s_ij - m_i) = w_ij / max_j w_ij lies in
    (0, 2^-14), float16's subnormal range (masked keys, weight 0, excluded), else 0.0."""
    p = w / w.max(axis=1, keepdims=True)
    return ((p > 0) & (p < 2.0 ** -14)).astype(xp.float64)
