"""drafts/ex14_fa3/emulate_p16.py's numpy model of a FlashAttention kernel (P rounded to float16 with
its subnormals, running max per 128-key tile, float32 elsewhere), checked against the bound of a
given ex14 reference.py (by default the one of the checkout this file lies in), with float16 inputs
passed as float16 arrays as the grader passes them. Prints, per seed, the worst err / bound of o and
lse and the failing rows, for P kinds f16 (what cvt.rn.f16x2.f32 does), f16s (P 2^15, the FA3
draft's fix) and bf16 (bfloat16 P on the same float16 inputs: bfloat16's u, normal range).

    python3 drafts/fp16_weight_floor/check_emulate.py [--ref path/to/reference.py] [--seeds 28]

Used to compare the bound before and after fp16_weight_floor.patch (README.md): run once with
--ref exercises/ex14_flash_attention/reference.py of main, once with the patched one.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "ex14_fa3"))
from emulate_p16 import round_p  # noqa: E402


def load(path):
    spec = importlib.util.spec_from_file_location("ex14_ref_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kernel_o(q, k, v, causal, kind, bn=128):
    """emulate_p16.head's kernel model: o (float64) for one (b, h)."""
    sq, d = q.shape
    sk = k.shape[0]
    sl = np.float32(1.4426950408889634 / math.sqrt(d))
    s64 = q @ k.T
    mask = (np.arange(sk)[None, :] > np.arange(sq)[:, None]) if causal else np.zeros((sq, sk), bool)
    s = np.where(mask, -np.inf, s64.astype(np.float32))
    nt = -(-sk // bn)
    sp = np.pad(s, ((0, 0), (0, nt * bn - sk)), constant_values=-np.inf)
    mrun = np.maximum.accumulate(sp.reshape(sq, nt, bn).max(axis=2), axis=1)
    mfin = mrun[:, -1:]
    m_at = np.repeat(mrun, bn, axis=1)[:, :sk]
    b = (m_at * sl).astype(np.float32)
    p = np.exp2((s.astype(np.float64) * sl - b).astype(np.float32)).astype(np.float32)
    resc = np.exp2((m_at * sl).astype(np.float32) - (mfin * sl).astype(np.float32)).astype(np.float64)
    l = (p * resc).sum(axis=1, keepdims=True)
    return (round_p(p, kind).astype(np.float64) * resc) @ v / l


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default=str(HERE.parents[1] / "exercises" / "ex14_flash_attention" / "reference.py"))
    ap.add_argument("--shape", type=int, nargs=5, default=[4, 16, 1024, 1024, 128])
    ap.add_argument("--seeds", type=int, default=28)
    ap.add_argument("--seed0", type=int, default=75)
    ap.add_argument("--causal", type=int, default=1)
    ap.add_argument("--qscale", type=float, default=20.0)
    ap.add_argument("--p", nargs="+", default=["f16", "f16s", "bf16"])
    args = ap.parse_args()
    ref = load(args.ref)
    B, H, Sq, Sk, D = args.shape
    failing_seeds = {kd: 0 for kd in args.p}
    for seed in range(args.seed0, args.seed0 + args.seeds):
        rs = np.random.RandomState(seed)            # emulate_p16.py's draws, in its order
        worst = {kd: [0.0, 0] for kd in args.p}
        for _ in range(B * H):
            q16 = (rs.standard_normal((Sq, D)) * args.qscale).astype(np.float16)
            k16 = rs.standard_normal((Sk, D)).astype(np.float16)
            v16 = rs.standard_normal((Sk, D)).astype(np.float16)
            o_ref, _ = ref.reference(np, q16[None, None], k16[None, None], v16[None, None], args.causal)
            mag, _ = ref.magnitude(np, q16[None, None], k16[None, None], v16[None, None], args.causal)
            q, k, v = (x.astype(np.float64) for x in (q16, k16, v16))
            for kd in args.p:
                r = np.abs(kernel_o(q, k, v, args.causal, kd) - o_ref[0, 0]) / mag[0, 0]
                worst[kd][0] = max(worst[kd][0], float(r.max()))
                worst[kd][1] += int((r > 1).any(axis=1).sum())
        for kd, w in worst.items():
            failing_seeds[kd] += w[1] > 0
        print(f"seed {seed}: " + "; ".join(f"P {kd}: worst err/bound {w[0]:.3f}, {w[1]} rows fail"
                                           for kd, w in worst.items()), flush=True)
    print(f"{args.ref}: {'x'.join(map(str, args.shape))} causal {args.causal} q x{args.qscale:g}, seeds "
          f"{args.seed0}..{args.seed0 + args.seeds - 1}: seeds with a failing row: " +
          ", ".join(f"P {kd} {n}" for kd, n in failing_seeds.items()))


if __name__ == "__main__":
    main()
