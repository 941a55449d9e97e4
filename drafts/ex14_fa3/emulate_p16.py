"""CPU model (numpy) of kernel.cu's arithmetic, to explain the 4x16x1024x1024x128 float16 causal "large"
failure (README, twenty-ninth session) without a GPU. Inputs are drawn like verify.py's (normal, q x 20)
but with numpy's generator (cupy's curand stream cannot be reproduced here), so this shows the failure
RATE per shape, not verify.py's exact rows.

Model, per (b, h): S in float32 (float64 product rounded once: the kernel's fp32 accumulation errs far
less than the tolerance's ds); key tiles of 128; the running max m_j after tile j (cummax of tile
maxima, masked keys -inf); P_j = exp2(s sl - m_j sl) in float32, rounded to the P type (`--p`):
  f16    numpy float16 (round to nearest even WITH fp16's subnormals, as cvt.rn.f16x2.f32 does)
  f16n   float16's 11-bit significand but an unbounded exponent (no subnormal range, no underflow)
  bf16   bfloat16 (8-bit significand, float32's exponent)
  f16ftz float16 with subnormal P flushed to zero
  f16s   float16 of P 2^15 (the fix in kernel.cu: P = exp2(s sl - m sl + 15), l and O scaled alike)
O = sum_j 2^((m_j - m) sl) P_j V_j / l, l = sum of the float32 P's (rescaled the same way); checked
against the float64 oracle under ex14's own bound (exercises/ex14_flash_attention/reference.py).

    python3 drafts/ex14_fa3/emulate_p16.py [--shape 4 16 1024 1024 128] [--seeds 3] [--p f16 f16n bf16 f16s]
"""
from __future__ import annotations

import argparse
import math

import numpy as np


def to_bf16(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32)


def round_p(p, kind):
    if kind == "f16":
        return p.astype(np.float16).astype(np.float32)
    if kind == "f16s":      # the fix: P 2^15 in float16 (P <= 1 + 2^-17, so P 2^15 rounds to <= 32768: no overflow)
        return (p * np.float32(32768.0)).astype(np.float16).astype(np.float32) / np.float32(32768.0)
    if kind == "f16ftz":    # float16 with subnormal results flushed to zero (a tensor core that flushed them)
        h = p.astype(np.float16).astype(np.float32)
        return np.where(h < np.float32(2.0 ** -14), np.float32(0), h)
    if kind == "f16n":      # 11 significant bits, any exponent
        m, e = np.frexp(p.astype(np.float64))
        return np.ldexp(np.round(m * 2048.0) / 2048.0, e).astype(np.float32)
    if kind == "bf16":
        return to_bf16(p)
    raise ValueError(kind)


def head(q, k, v, causal, kinds, bn=128):
    """worst err/bound of o per P kind, plus the oracle's lse, for one (b, h); q, k, v float64 arrays
    of the decoded half values."""
    sq, d = q.shape
    sk = k.shape[0]
    scale = 1.0 / math.sqrt(d)
    sl = np.float32(1.4426950408889634 / math.sqrt(d))
    s64 = q @ k.T
    mask = (np.arange(sk)[None, :] > np.arange(sq)[:, None]) if causal else np.zeros((sq, sk), bool)
    # oracle
    so = np.where(mask, -np.inf, s64 * scale)
    mo = so.max(axis=1, keepdims=True)
    e = np.exp(so - mo)
    w = e / e.sum(axis=1, keepdims=True)
    o_ref = w @ v
    sens = np.abs(q) @ np.abs(k).T * scale
    ds = d * 2.0 ** -23 * sens.max(axis=1)
    bound = (2.0 ** -6 + 2 * ds[:, None]) * (w @ np.abs(v))
    # kernel model
    s = np.where(mask, -np.inf, s64.astype(np.float32))
    nt = -(-sk // bn)
    pad = nt * bn - sk
    sp = np.pad(s, ((0, 0), (0, pad)), constant_values=-np.inf)
    tmax = sp.reshape(sq, nt, bn).max(axis=2)
    mrun = np.maximum.accumulate(tmax, axis=1)                    # m_j
    mfin = mrun[:, -1:]
    # causal rows whose keys run out before the last tile: the kernel stops at kv_end (same m)
    m_at = np.repeat(mrun, bn, axis=1)[:, :sk]
    b = (m_at * sl).astype(np.float32)
    p = np.exp2((s.astype(np.float64) * sl - b).astype(np.float32)).astype(np.float32)   # fma, then ex2
    resc = np.exp2((m_at * sl).astype(np.float32) - (mfin * sl).astype(np.float32)).astype(np.float64)
    l = (p * resc).sum(axis=1, keepdims=True)
    out = {}
    for kind in kinds:
        o = (round_p(p, kind).astype(np.float64) * resc) @ v / l
        r = np.abs(o - o_ref) / bound
        out[kind] = (float(r.max()), int((r > 1).any(axis=1).sum()), int((r > 1).sum()),
                     [int((r > x).sum()) for x in (0.5, 2, 8, 32)])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", type=int, nargs=5, default=[4, 16, 1024, 1024, 128])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--seed0", type=int, default=75)
    ap.add_argument("--causal", type=int, default=1)
    ap.add_argument("--qscale", type=float, default=20.0)
    ap.add_argument("--p", nargs="+", default=["f16", "f16n", "bf16", "f16s"])
    args = ap.parse_args()
    B, H, Sq, Sk, D = args.shape
    for seed in range(args.seed0, args.seed0 + args.seeds):
        rs = np.random.RandomState(seed)
        worst = {kd: [0.0, 0, 0, np.zeros(4, int)] for kd in args.p}
        for bh in range(B * H):
            q = (rs.standard_normal((Sq, D)) * args.qscale).astype(np.float16).astype(np.float64)
            k = rs.standard_normal((Sk, D)).astype(np.float16).astype(np.float64)
            v = rs.standard_normal((Sk, D)).astype(np.float16).astype(np.float64)
            for kd, (r, rows, elems, tail) in head(q, k, v, args.causal, args.p).items():
                worst[kd][0] = max(worst[kd][0], r)
                worst[kd][1] += rows
                worst[kd][2] += elems
                worst[kd][3] += tail
        print(f"seed {seed} {'x'.join(map(str, args.shape))} causal {args.causal} q x{args.qscale:g}: " +
              "; ".join(f"P {kd}: worst err/bound {w[0]:.3f}, {w[1]} rows / {w[2]} elements fail, "
                        f"elements past 0.5/2/8/32: {w[3].tolist()}"
                        for kd, w in worst.items()), flush=True)


if __name__ == "__main__":
    main()
