"""GPU check of ex15's reference solution outside the grader (an instructor's tool; the grader's own
check is `grade ex15 --submission solutions/ex15_gemm_fp8_blockscaled`).

    python3 benchmarks/verify_ex15.py            # compile, resources, correctness
    python3 benchmarks/verify_ex15.py --bench    # ... then timings (torch._scaled_mm, cuBLAS fp16,
                                                 #     the 4-byte epilogue, ex13's bf16 at 8192^3)
    python3 benchmarks/verify_ex15.py --shapes 128x128x128    # one shape
    compute-sanitizer --tool memcheck python3 benchmarks/verify_ex15.py --no-pool --shapes 17x17x256

Correctness uses the draft spec's bound (spec.toml [tolerance.bfloat16]) against the float64 oracle
(reference.py, on the GPU), with the output poisoned (bfloat16 NaN 0x7FDA) before each call and
guard zones around it; inputs in two distributions: "normal" (normal(0, 1) rounded to e4m3, a
fifth of it subnormal) and "codes" (every finite e4m3 code equally likely: 2^-9 .. 448), with
scales uniform in [0.5, 2) (normal) or [0.001, 0.1) (codes). First run on an H200 on 2026-12-03
(benchmarks/RESULTS.md). It stops at the first failing shape (in order: one tile and one k-block, several k-blocks (the
stage ring wraps at 6), several tiles, tails, larger), first with the full persistent grid, then
with 3 CTAs (several tiles per CTA).
"""
import argparse
import importlib.util
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

from event_timing import median_ms, median_torch_ms  # this folder: run as python3 benchmarks/verify_ex15.py

ROOT = Path(__file__).resolve().parents[1]
EXERCISE = ROOT / "exercises" / "ex15_gemm_fp8_blockscaled"
sys.path.insert(0, str(ROOT))   # the repository root: solution.py imports grader.kernel
GUARD = 4096     # elements of guard zone before and after d
POISON = 0x7FDA  # the grader's bfloat16 poison (a NaN that __float2bfloat16(NAN) does not give)


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# what the grader's worker does before the submission runs: the spec's NVRTC options and arch
from grader import kernel as _gk  # noqa: E402
from grader.spec import load_spec  # noqa: E402

_spec = load_spec(EXERCISE / "spec.toml")
_gk.configure(_spec.compile_options, _spec.arch)
ref = _load("ex15_reference", EXERCISE / "reference.py")
sol = _load("ex15_solution", ROOT / "solutions" / "ex15_gemm_fp8_blockscaled" / "solution.py")

SHAPES = [(128, 128, 128), (128, 128, 1024), (256, 256, 2048), (1, 1, 128), (17, 17, 256), (127, 129, 128),
          (1, 1000, 1024), (1000, 1, 384), (129, 127, 1024), (251, 257, 640), (2, 3, 8192), (4099, 5, 128),
          (513, 1025, 2048), (997, 1009, 1280), (2048, 2048, 2048), (4096, 4096, 4096)]
KINDS = ("normal", "codes")


def bf16_to_f64(bits):
    return (bits.astype(cp.uint32) << 16).view(cp.float32).astype(cp.float64)


def inputs(M, N, K, kind, rng):
    kb, nb = K // 128, -(-N // 128)
    if kind == "normal":
        a = ref.encode_e4m3(cp, rng.standard_normal((M, K)))
        b = ref.encode_e4m3(cp, rng.standard_normal((N, K)))
        lo, hi = 0.5, 2.0
    else:   # every finite code: 0x00..0x7E and 0x80..0xFE
        a = rng.integers(0, 254, (M, K), dtype=cp.int32)
        b = rng.integers(0, 254, (N, K), dtype=cp.int32)
        a, b = (cp.where(x >= 0x7F, x + 1, x).astype(cp.uint8) for x in (a, b))
        lo, hi = 0.001, 0.1
    sa = rng.uniform(lo, hi, (M, kb)).astype(cp.float32)
    sb = rng.uniform(lo, hi, (nb, kb)).astype(cp.float32)
    return a, sa, b, sb


def check(M, N, K, kind, rng):
    a, sa, b, sb = inputs(M, N, K, kind, rng)
    flat = cp.full(M * N + 2 * GUARD, POISON, dtype=cp.uint16)
    d = flat[GUARD:GUARD + M * N].reshape(M, N)
    saved = [x.copy() for x in (a, sa, b, sb)]
    sol.solve(a, sa, b, sb, d)
    cp.cuda.Device().synchronize()
    problems = []
    if not (bool((flat[:GUARD] == POISON).all()) and bool((flat[GUARD + M * N:] == POISON).all())):
        problems.append("guard zone written (out-of-bounds store)")
    if not all(bool((x == y).all()) for x, y in zip((a, sa, b, sb), saved)):
        problems.append("inputs changed")
    want = ref.reference(cp, a, sa, b, sb)
    mag = ref.magnitude(cp, a, sa, b, sb)
    out = bf16_to_f64(d)
    u = 2.0 ** -8                                               # eps / 2 of bfloat16
    tol = u * cp.abs(want) + (1 + u) * (2.0 ** -6 + (K / 128 + 2) * 2.0 ** -23) * mag
    err = cp.abs(out - want)
    bad = ~(err <= tol)                                         # NaN (the poison too) counts as bad
    if bool(bad.any()):
        rows, cols = cp.nonzero(bad)
        r0, c0 = int(rows[0]), int(cols[0])
        problems.append(f"{int(bad.sum())} of {M * N} wrong; first [{r0}, {c0}] = {float(out[r0, c0])!r} "
                        f"(bits {int(d[r0, c0]):#06x}) vs {float(want[r0, c0])!r}; wrong rows "
                        f"{int(rows.min())}..{int(rows.max())}, cols {int(cols.min())}..{int(cols.max())}")
    nref = float(cp.linalg.norm(want)) or 1.0
    rel = float(cp.linalg.norm(cp.nan_to_num(out - want, nan=1e30))) / nref
    nbound = u + 4 * np.sqrt(128) * 2.0 ** -13
    if rel > nbound:
        problems.append(f"norm-wise error {rel:.3e} > {nbound:.3e}")
    d2 = cp.empty_like(d)
    sol.solve(a, sa, b, sb, d2)
    if not bool((d2 == d).all()):
        problems.append("not deterministic (two calls differ)")
    # the measured accuracy, to tighten the spec's placeholder bounds after the first run
    with np.errstate(all="ignore"):
        worst = float(cp.nanmax(err / cp.maximum(tol, 1e-300)))
        acc_only = float(cp.nanmax(cp.maximum(err - u * cp.abs(want), 0) / cp.maximum(mag, 1e-300)))
    return problems, worst, rel / nbound, acc_only


def resources():
    funcs, sms = sol._device_state()
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {sms} SMs")
    for pipe, f in funcs.items():
        attrs = f.attributes
        print(f"  gemm_fp8_blockscaled{'' if pipe else '_serial'}: {attrs['num_regs']} registers, "
              f"{attrs['local_size_bytes']} B local, {attrs['shared_size_bytes']} B static smem, max threads "
              f"{attrs['max_threads_per_block']}, dynamic smem {sol._SMEM} B")


def _ex13_bf16_ms(M, N, K):
    """ex13's reference on bf16 inputs of the same shape (the '>= 2x ex13' bar), timed here side by side."""
    ex13 = _load("ex13_solution", ROOT / "solutions" / "ex13_gemm_hopper" / "solution.py")

    def bf16_bits(rows, cols):
        return (cp.random.standard_normal((rows, cols), dtype=cp.float32).view(cp.uint32) >> 16).astype(cp.uint16)
    a, b, c = bf16_bits(M, K), bf16_bits(N, K), cp.empty((M, N), dtype=cp.uint16)
    return median_ms(lambda: ex13.solve(a, b, c))


def bench(M, N, K, rng):
    a, sa, b, sb = inputs(M, N, K, "normal", rng)
    d = cp.empty((M, N), dtype=cp.uint16)
    fl = 2 * M * N * K
    t = median_ms(lambda: sol.solve(a, sa, b, sb, d))
    line = f"{M}x{N}x{K}: {t:.3f} ms, {fl / t / 1e9:.0f} TFLOP/s"
    if sol._VEC16 and N % 8 == 0:   # the 4-byte epilogue beside it (solution.py's _VEC16 knob)
        sol._VEC16 = False
        t4 = median_ms(lambda: sol.solve(a, sa, b, sb, d))
        sol._VEC16 = True
        line += f" (4-byte epilogue {t4:.3f} ms: x{t4 / t:.3f})"
    sol._DEVICE_MAPS = False   # the tensor maps encoded on the host per call (new addresses each time) beside it
    th = median_ms(lambda: (sol._maps.clear(), sol.solve(a, sa, b, sb, d)))
    sol._DEVICE_MAPS = True
    line += f" (maps encoded on the host {th:.3f} ms: x{th / t:.3f})"
    sol._PIPE = False   # one k-block in flight per consumer (kernel.cu's _serial kernel) beside it
    ts = median_ms(lambda: sol.solve(a, sa, b, sb, d))
    sol._PIPE = True
    line += f" (one k-block in flight {ts:.3f} ms: x{ts / t:.3f})"
    if (M, N, K) == (8192, 8192, 8192):
        t13 = _ex13_bf16_ms(M, N, K)
        line += f"; ex13 bf16 {t13:.3f} ms (ours x{t13 / t:.2f}, target >= 2)"
    a16 = cp.ones((M, K), dtype=cp.float16)
    b16 = cp.ones((N, K), dtype=cp.float16)
    th = median_ms(lambda: cp.matmul(a16, b16.T))     # cuBLAS fp16 TN (a baseline, not graded code)
    line += f"; cuBLAS fp16 {fl / th / 1e9:.0f} TFLOP/s (x{th / t:.2f})"
    del a16, b16
    try:
        import torch
        ta = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
        tb = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device="cuda")
        tt = median_torch_ms(lambda: torch._scaled_mm(ta, tb.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
        line += f"; torch._scaled_mm per-tensor {fl / tt / 1e9:.0f} TFLOP/s (ratio {tt / t:.3f}, target >= 0.75)"
    except Exception as exc:  # noqa: BLE001 - torch absent or too old: the other baselines stand
        line += f"; torch._scaled_mm unavailable ({type(exc).__name__}: {exc})"
    print(line, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--shapes", nargs="*", help="MxNxK ... (K a multiple of 128)")
    ap.add_argument("--kinds", nargs="*", default=list(KINDS))
    ap.add_argument("--group-m", nargs="*", type=int, default=[],
                    help="with --bench: time these values of solution.py's _GROUP_M as well (side by side)")
    ap.add_argument("--no-pool", action="store_true",
                    help="CuPy's memory pool off (compute-sanitizer sees out-of-bounds accesses only then)")
    args = ap.parse_args()
    if args.no_pool:
        cp.cuda.set_allocator(None)
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes] if args.shapes else SHAPES
    t0 = time.time()
    resources()
    print(f"compiled in {time.time() - t0:.1f} s", flush=True)
    rng = cp.random.default_rng(0)
    failed = False
    for max_ctas, pipe, device_maps in ((None, True, True), (3, True, True), (None, False, True), (None, True, False)):
        sol._MAX_CTAS, sol._PIPE, sol._DEVICE_MAPS = max_ctas, pipe, device_maps
        for M, N, K in shapes:
            for kind in args.kinds:
                decoy = None
                if device_maps:   # the templates encoded for other arrays of this shape, kept alive: the
                    sol._maps.clear()   # kernel must point the maps at the checked inputs itself
                    decoy = inputs(M, N, K, "normal", rng)
                    sol.solve(*decoy, cp.empty((M, N), dtype=cp.uint16))
                problems, worst, nratio, acc = check(M, N, K, kind, rng)
                del decoy
                print(f"{M}x{N}x{K} {kind} grid<={max_ctas or 'SMs'}{'' if pipe else ' serial'}"
                      f"{'' if device_maps else ' host maps'}: {'OK' if not problems else 'FAIL'} "
                      f"(worst err/tol {worst:.3f}, norm-wise err/bound {nratio:.3f}, accumulation error "
                      f"<= {acc:.2e} x magnitude)" + "".join(f"\n    {p}" for p in problems), flush=True)
                if problems:
                    failed = True
                    break
            if failed:
                break
        if failed:
            break
    sol._MAX_CTAS, sol._PIPE, sol._DEVICE_MAPS = None, True, True
    if args.bench and not failed:
        for M, N, K in [(8192, 8192, 8192), (4096, 4096, 4096), (4096, 7168, 2048), (4096, 2112, 7168),
                        (4096, 24576, 1536), (64, 7168, 8192)]:
            bench(M, N, K, rng)
            for g in args.group_m:
                a, sa, b, sb = inputs(M, N, K, "normal", rng)
                d = cp.empty((M, N), dtype=cp.uint16)
                base = median_ms(lambda: sol.solve(a, sa, b, sb, d))
                sol._GROUP_M, keep = g, sol._GROUP_M
                t = median_ms(lambda: sol.solve(a, sa, b, sb, d))
                sol._GROUP_M = keep
                print(f"    _GROUP_M = {g}: {t:.3f} ms against {base:.3f} ms with {keep} (x{base / t:.3f})", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
