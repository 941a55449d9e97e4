"""GPU check of ex16's reference solution outside the grader (an instructor's tool; the grader's
own check is `grade ex16 --submission solutions/ex16_paged_decode_attention`).

    timeout 600 python3 benchmarks/verify_ex16.py                 # correctness, in order
    timeout 600 python3 benchmarks/verify_ex16.py --shapes 0 1    # the first two shapes
    timeout 600 python3 benchmarks/verify_ex16.py --bench         # ... then timings (copy, torch SDPA)
    timeout 600 python3 benchmarks/verify_ex16.py --fixtures      # the wrong fixtures must fail
    timeout 600 compute-sanitizer --tool memcheck python3 benchmarks/verify_ex16.py --no-pool --shapes 0 1 2 3 4

Inputs are drawn as spec.toml's distributions and then passed through reference.prepare (the
spec's [prepare] hook, as the grader does): distinct physical blocks in random order, table entries
past the context = 2^31 - 1, every KV slot no sequence reads within its context = NaN. o is
poisoned (NaN) before each call and surrounded by guard zones; the inputs must come back unchanged;
o is compared with the float64 oracle (on the GPU) under reference.magnitude's bound. It stops at
the first failing shape. First run on an H200 on 2026-12-03 (benchmarks/RESULTS.md). Always run it
under `timeout` (a pipeline bug hangs rather than crashes; a hang is exit 124).
"""
import argparse
import importlib.util
import sys
import time
import tomllib
from pathlib import Path

import cupy as cp
import numpy as np

from event_timing import median_ms, median_torch_ms  # this folder: run as python3 benchmarks/verify_ex16.py

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "exercises" / "ex16_paged_decode_attention"
sys.path.insert(0, str(ROOT))              # the repository root: solution.py imports grader.kernel
GUARD = 16384                              # float32 elements of guard zone before and after o
POISON_BITS = 0x7FC00DAD                   # a NaN with a payload (not one a kernel computes)


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


from grader import kernel as _gk  # noqa: E402

_raw = tomllib.loads((HERE / "spec.toml").read_text())
_gk.configure(_raw["compile"]["options"], _raw.get("features", {}).get("arch"))   # as the worker does
ref = _load("ex16_reference", HERE / "reference.py")

# (B, HQ, HKV, NB, MB, lengths, q/k kind, dtype): in order of difficulty. lengths: "one" (all 1),
# "full" (16 MB each: block multiples), "uneven" (uniform in [1, 16 MB]), or an int.
SHAPES = [
    (1, 1, 1, 64, 1, "one", "normal", "f16"),          # one token, one warp active
    (1, 8, 1, 64, 1, "full", "normal", "f16"),         # one full block, G = 8
    (1, 8, 2, 64, 4, 40, "normal", "f16"),             # several blocks in one split, two KV heads
    (3, 16, 1, 256, 40, "uneven", "normal", "f16"),    # MQA-like G = 16, uneven, one split each
    (2, 4, 4, 512, 64, "full", "normal", "bf16"),      # MHA, 2 splits per sequence (P = 32)
    (4, 32, 8, 2048, 512, "full", "wide", "f16"),      # 8192 tokens: 16 splits, scores of std 16
    (7, 12, 3, 4096, 512, "uneven", "normal", "bf16"), # uneven, G = 4
    (1, 8, 1, 8192, 8192, "full", "hot", "f16"),       # 131072 tokens, every score about +90
    (1, 16, 2, 8192, 8192, "full", "cold", "bf16"),    # 131072 tokens, every score about -90
    (64, 64, 8, 16384, 8192, "uneven", "normal", "f16"),   # 64 uneven up to 2^17, blocks shared
    (1, 32, 8, 8192, 8192, "full", "normal", "f16"),   # the batch-1 benchmark's plan (its splits, its combine)
]


def draw(B, HQ, HKV, NB, MB, lengths, kind, dtype, seed):
    rs = cp.random.RandomState(seed)
    T = cp.float16 if dtype == "f16" else cp.float32
    qs, ks = {"normal": (1, 1), "wide": (4, 4)}.get(kind, (None, None))
    if qs:
        q = rs.normal(0, qs, (B, HQ, 128), dtype=cp.float32)
        k = rs.normal(0, ks, (NB, 16, HKV, 128), dtype=cp.float32)
    else:
        sign = 1 if kind == "hot" else -1
        q = sign * rs.uniform(2.8, 2.85, (B, HQ, 128), dtype=cp.float32)
        k = rs.uniform(2.8, 2.85, (NB, 16, HKV, 128), dtype=cp.float32)
    v = rs.normal(0, 1, (NB, 16, HKV, 128), dtype=cp.float32)
    enc = (lambda a: a.astype(T)) if dtype == "f16" else to_bf16_bits
    raw_t = rs.randint(0, 64, (B, MB), dtype=cp.int32)
    if lengths == "one":
        raw_l = cp.ones(B, cp.int32)
    elif lengths == "full":
        raw_l = cp.full(B, 16 * MB, cp.int32)
    elif lengths == "uneven":
        raw_l = rs.randint(1, 131073, B, dtype=cp.int32)
    else:
        raw_l = cp.full(B, lengths, cp.int32)
    return ref.prepare(cp, np.random.RandomState(seed), enc(q), enc(k), enc(v), raw_t, raw_l)


def to_bf16_bits(x):
    u = cp.ascontiguousarray(x, dtype=cp.float32).view(cp.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(cp.uint16)


def decoded(x):
    return (x.astype(cp.uint32) << 16).view(cp.float32) if x.dtype == cp.uint16 else x


def check(sol, shape, seed=0):
    B, HQ, HKV, NB, MB, lengths, kind, dtype = shape
    q, k, v, table, lens = draw(*shape, seed)
    before = [a.copy() for a in (q, k, v, table, lens)]
    flat = cp.full(B * HQ * 128 + 2 * GUARD, POISON_BITS, cp.uint32)
    o = flat[GUARD:GUARD + B * HQ * 128].view(cp.float32).reshape(B, HQ, 128)
    sol.solve(q, k, v, table, lens, o)
    cp.cuda.Device().synchronize()
    problems = []
    if not (bool((flat[:GUARD] == POISON_BITS).all()) and bool((flat[GUARD + o.size:] == POISON_BITS).all())):
        problems.append("guard zone written (out-of-bounds store)")
    if not all(bool((a.view(cp.uint8) == b.view(cp.uint8)).all()) for a, b in zip((q, k, v, table, lens), before)):
        problems.append("inputs changed")
    unwritten = flat[GUARD:GUARD + o.size] == POISON_BITS
    if bool(unwritten.any()):
        problems.append(f"{int(unwritten.sum())} elements of o never written")
    args = [decoded(a) for a in (q, k, v)] + [table, lens]
    want, mag = ref.reference(cp, *args), ref.magnitude(cp, *args)
    err = cp.abs(o.astype(cp.float64) - want)
    bad = ~(err <= mag)                                  # NaN counts as bad
    if bool(bad.any()):
        idx = [int(i[0]) for i in cp.nonzero(bad)]
        problems.append(f"{int(bad.sum())} of {o.size} wrong; first {idx} = {float(o[tuple(idx)])!r} vs "
                        f"{float(want[tuple(idx)])!r} (bound {float(mag[tuple(idx)]):.3e}); "
                        f"wrong (b, hq) pairs: {len(set(zip(*[a.get().tolist() for a in cp.nonzero(bad)[:2]])))}")
    scale = float(cp.linalg.norm(mag)) or 1.0
    normwise = float(cp.linalg.norm(cp.nan_to_num(err, nan=1e30))) / float(cp.linalg.norm(want) or 1.0)
    o2 = cp.empty_like(o)
    sol.solve(q, k, v, table, lens, o2)
    if not bool((o2.view(cp.uint32) == o.view(cp.uint32)).all()):
        problems.append("not deterministic (two calls differ)")
    worst = float(cp.nanmax(err / mag)) if not bool(cp.isnan(err).all()) else float("nan")
    return problems, worst, normwise, scale


def resources(sol):
    funcs, combine, sms = sol._device_state()
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {sms} SMs")
    for name, f in [*funcs.items(), ("combine", combine)]:
        a = f.attributes
        print(f"  {name}: {a['num_regs']} registers, {a['local_size_bytes']} B local, "
              f"{a['shared_size_bytes']} B static smem; dynamic smem {sol._SMEM if name != 'combine' else 0} B")


def bench(sol, shape):
    B, HQ, HKV, NB, MB, lengths, kind, dtype = shape
    q, k, v, table, lens = draw(*shape, 1)
    o = cp.empty((B, HQ, 128), cp.float32)
    kv_bytes = 2 * int(lens.astype(cp.int64).sum()) * HKV * 128 * 2
    t = median_ms(lambda: sol.solve(q, k, v, table, lens, o))
    src = cp.empty(kv_bytes // 2, cp.uint8)              # the copy baseline: read N, write N (2N = the KV bytes)
    dst = cp.empty_like(src)
    tc = median_ms(lambda: cp.copyto(dst, src))
    copy_bw = 2 * src.nbytes / tc / 1e6                  # GB/s, reads + writes
    line = (f"{shape}: {t:.3f} ms, {kv_bytes / t / 1e6:.0f} GB/s of KV read; copy {copy_bw:.0f} GB/s; "
            f"ratio {kv_bytes / t / 1e6 / copy_bw:.3f} (target >= 0.80)")
    try:
        import torch
        import torch.nn.functional as F
        if dtype == "f16" and bool((lens == lens[0]).all()):
            L = int(lens[0])
            nbk = -(-L // 16)
            idx = table[:, :nbk].astype(cp.int64)
            K = torch.as_tensor(k[idx].reshape(B, nbk * 16, HKV, 128)[:, :L].transpose(0, 2, 1, 3).copy(), device="cuda")
            V = torch.as_tensor(v[idx].reshape(B, nbk * 16, HKV, 128)[:, :L].transpose(0, 2, 1, 3).copy(), device="cuda")
            Q = torch.as_tensor(q, device="cuda")[:, :, None, :]
            ts = median_torch_ms(lambda: F.scaled_dot_product_attention(Q, K, V, enable_gqa=True))
            line += f"; torch SDPA over the gathered (contiguous) cache {ts:.3f} ms, ratio {ts / t:.3f}"
    except ImportError:
        pass
    print(line, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--fixtures", action="store_true", help="the fixtures: reads_past_context must fail, "
                    "no_split must pass and be slow at batch 1, context 131072")
    ap.add_argument("--shapes", nargs="*", type=int, help="indices into SHAPES")
    ap.add_argument("--solution", default=str(ROOT / "solutions" / "ex16_paged_decode_attention"), help="a folder with solution.py and kernel.cu")
    ap.add_argument("--no-pool", action="store_true",
                    help="CuPy's memory pool off (compute-sanitizer sees out-of-bounds accesses only then)")
    args = ap.parse_args()
    if args.no_pool:
        cp.cuda.set_allocator(None)
    sol = _load("ex16_solution", Path(args.solution) / "solution.py")
    t0 = time.time()
    resources(sol)
    print(f"compiled in {time.time() - t0:.1f} s", flush=True)
    shapes = [SHAPES[i] for i in args.shapes] if args.shapes is not None else SHAPES
    for shape in shapes:
        problems, worst, normwise, scale = check(sol, shape)
        print(f"{shape}: {'OK' if not problems else 'FAIL'} (worst err/bound {worst:.3f}, "
              f"||o - o_ref|| / ||o_ref|| {normwise:.2e})" + "".join(f"\n    {p}" for p in problems), flush=True)
        if problems:
            sys.exit(1)
    if args.fixtures:
        import tempfile
        from tests.variants import build
        fx = Path(tempfile.mkdtemp())
        past = _load("ex16_fixture_past", build("ex16_paged_decode_attention_reads_past_context",
                                                fx / "reads_past_context") / "solution.py")
        problems, *_ = check(past, SHAPES[2])
        print(f"fixtures/reads_past_context on {SHAPES[2]}: {'caught' if problems else 'NOT CAUGHT'}"
              + "".join(f"\n    {p}" for p in problems), flush=True)
        if not problems:
            sys.exit(1)
        nosplit = _load("ex16_fixture_nosplit", build("ex16_paged_decode_attention_no_split",
                                                      fx / "no_split") / "solution.py")
        problems, *_ = check(nosplit, SHAPES[5])
        print(f"fixtures/no_split on {SHAPES[5]}: {'OK' if not problems else 'FAIL'}", flush=True)
        if problems:
            sys.exit(1)
        for s in (sol, nosplit):
            bench(s, (1, 32, 8, 8192, 8192, "full", "normal", "f16"))
    if args.bench:
        for shape in [(64, 32, 8, 32768, 512, 8192, "normal", "f16"), (1, 32, 8, 8192, 8192, "full", "normal", "f16"),
                      (64, 64, 8, 32768, 512, 8192, "normal", "bf16"), (16, 32, 8, 65536, 8192, "uneven", "normal", "f16")]:
            bench(sol, shape)
    sys.exit(0)


if __name__ == "__main__":
    main()
