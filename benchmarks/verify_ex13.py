"""GPU check of the ex13 reference solution outside the grader: compile, resources, correctness on
the shapes below (with a 3-CTA grid too), and its speed beside cuBLAS (cupy.matmul and torch.matmul).

    python benchmarks/verify_ex13.py          # compile, resources, correctness (f16, bf16)
    python benchmarks/verify_ex13.py --bench  # ... then timings against cuBLAS fp16
    python benchmarks/verify_ex13.py --shapes 128x256x64    # one shape, both dtypes
    compute-sanitizer --tool memcheck python benchmarks/verify_ex13.py --no-pool --shapes 17x17x17

Correctness uses the spec's bound (exercises/ex13_gemm_hopper/spec.toml [tolerance.*]) against a float64 product on the
GPU, with the output poisoned (NaN) before each call and guard zones around it. It stops at the
first failing shape (in order: one tile, one tile with several K tiles, several tiles, tails,
larger). Results on the H200: benchmarks/RESULTS.md.
"""
import argparse
import importlib.util
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

from event_timing import median_ms, median_torch_ms  # this folder: run as python3 benchmarks/verify_ex13.py

ROOT = Path(__file__).resolve().parents[1]
EXERCISE = ROOT / "exercises" / "ex13_gemm_hopper"
sys.path.insert(0, str(ROOT))   # the repository root: solution.py imports grader.kernel
GUARD = 4096     # elements of guard zone before and after c


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
sol = _load("ex13_solution", ROOT / "solutions" / "ex13_gemm_hopper" / "solution.py")

SHAPES = [(128, 256, 64), (128, 256, 512), (256, 512, 1024), (1, 1, 1), (17, 17, 17), (127, 129, 1),
          (1, 1000, 127), (1000, 1, 129), (129, 127, 1000), (251, 257, 263), (1000, 1000, 17), (2, 3, 4099),
          (4099, 5, 3), (513, 1025, 2047), (33, 4096, 8), (997, 1009, 1013), (2048, 2048, 2048),
          (4096, 4096, 4096)]
POISON = {"f16": 0x7E00, "bf16": 0x7FC0}          # a NaN of each type


def to_bf16_bits(x32):
    """float32 (cupy) -> bfloat16 bit patterns (uint16), round to nearest even."""
    u = x32.view(cp.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(cp.uint16)


def decode(x, kind):
    if kind == "f16":
        return x.astype(cp.float64)
    return (x.astype(cp.uint32) << 16).view(cp.float32).astype(cp.float64)


def inputs(M, N, K, kind, rng):
    a32 = rng.standard_normal((M, K), dtype=cp.float32)
    b32 = rng.standard_normal((N, K), dtype=cp.float32)
    if kind == "f16":
        return a32.astype(cp.float16), b32.astype(cp.float16)
    return to_bf16_bits(a32), to_bf16_bits(b32)


def check(M, N, K, kind, rng, offset=0):
    a, b = inputs(M, N, K, kind, rng)
    if offset:   # an input that does not start 16-byte aligned: solve must take the padded path
        buf = cp.empty(M * K + offset, dtype=a.dtype)
        a2 = buf[offset:].reshape(M, K)
        a2[...] = a
        a = a2
    dt = np.float16 if kind == "f16" else np.uint16
    flat = cp.full(M * N + 2 * GUARD, POISON[kind], dtype=cp.uint16)
    c = flat[GUARD:GUARD + M * N].view(dt).reshape(M, N)
    a0, b0 = a.copy(), b.copy()
    sol.solve(a, b, c)
    cp.cuda.Device().synchronize()
    problems = []
    if not (bool((flat[:GUARD] == POISON[kind]).all()) and bool((flat[GUARD + M * N:] == POISON[kind]).all())):
        problems.append("guard zone written (out-of-bounds store)")
    if not (bool((a == a0).all()) and bool((b == b0).all())):
        problems.append("inputs changed")
    a64, b64 = decode(a, kind), decode(b, kind)
    ref = a64 @ b64.T
    mag = cp.abs(a64) @ cp.abs(b64).T
    out = decode(c.view(cp.uint16) if kind == "bf16" else c, kind)
    u = 2.0 ** -11 if kind == "f16" else 2.0 ** -8
    tol = u * cp.abs(ref) + (1 + u) * K * 2.0 ** -23 * mag + (2.0 ** -25 if kind == "f16" else 0.0)
    err = cp.abs(out - ref)
    bad = ~(err <= tol)                         # NaN counts as bad
    if bool(bad.any()):
        rows, cols = cp.nonzero(bad)
        r0, c0 = int(rows[0]), int(cols[0])
        problems.append(f"{int(bad.sum())} of {M * N} wrong; first [{r0}, {c0}] = {float(out[r0, c0])!r} vs "
                        f"{float(ref[r0, c0])!r}; wrong rows {int(rows.min())}..{int(rows.max())}, "
                        f"cols {int(cols.min())}..{int(cols.max())}")
    nref = float(cp.linalg.norm(ref)) or 1.0
    rel = float(cp.linalg.norm(cp.nan_to_num(out - ref, nan=1e30))) / nref
    if rel > u + 4 * np.sqrt(K) * 2.0 ** -23:
        problems.append(f"norm-wise error {rel:.3e}")
    c2 = cp.empty_like(c)
    sol.solve(a, b, c2)
    if not bool((c2.view(cp.uint16) == c.view(cp.uint16)).all()):
        problems.append("not deterministic (two calls differ)")
    return problems, float(cp.nanmax(err / cp.maximum(tol, 1e-300)))


def resources():
    _module, funcs, sms = sol._device_state()
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {sms} SMs")
    for name in ("f16", "bf16"):
        attrs = funcs[name].attributes
        print(f"  gemm_hopper_{name}: {attrs['num_regs']} registers, {attrs['local_size_bytes']} B local, "
              f"{attrs['shared_size_bytes']} B static smem, max threads {attrs['max_threads_per_block']}, "
              f"dynamic smem {sol._SMEM} B")


def bench(M, N, K, kind, rng, reps=20):
    a, b = inputs(M, N, K, kind, rng)
    c = cp.empty((M, N), dtype=a.dtype)

    def timed(fn):
        return median_ms(fn, reps)

    t = timed(lambda: sol.solve(a, b, c))
    line = f"{M}x{N}x{K} {kind}: {t:.3f} ms, {2 * M * N * K / t / 1e9:.0f} TFLOP/s"
    if kind == "f16":
        tc = timed(lambda: cp.matmul(a, b.T))   # cuBLAS, TN, fp16 out (the baseline, not graded code)
        line += f"; cuBLAS (cupy.matmul) {tc:.3f} ms, {2 * M * N * K / tc / 1e9:.0f} TFLOP/s; ratio {tc / t:.3f}"
    try:   # torch.matmul (cuBLAS) for both types
        import torch
        ta = torch.from_dlpack(a.view(cp.int16)).view(torch.bfloat16 if kind == "bf16" else torch.float16)
        tb = torch.from_dlpack(b.view(cp.int16)).view(ta.dtype)
        tc_ = torch.empty((M, N), dtype=ta.dtype, device=ta.device)
        tt = median_torch_ms(lambda: torch.matmul(ta, tb.t(), out=tc_))
        line += f"; torch.matmul {tt:.3f} ms, ratio {tt / t:.3f}"
    except Exception as exc:  # noqa: BLE001 - torch absent: cupy's cuBLAS stands for f16
        line += f"; torch unavailable ({type(exc).__name__}: {exc})"
    print(line, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--shapes", nargs="*", help="MxNxK ...")
    ap.add_argument("--kinds", nargs="*", default=["f16", "bf16"])
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
    # first with the full persistent grid, then with 3 CTAs: several tiles per CTA (the stage ring's
    # phases carried across tiles, the producer running ahead into the next tile during the epilogue)
    for max_ctas in (None, 3):
        sol._MAX_CTAS = max_ctas
        for M, N, K in shapes:
            for kind in args.kinds:
                problems, worst = check(M, N, K, kind, rng)
                print(f"{M}x{N}x{K} {kind} grid<={max_ctas or 'SMs'}: {'OK' if not problems else 'FAIL'} "
                      f"(worst err/tol {worst:.3f})" + "".join(f"\n    {p}" for p in problems), flush=True)
                if problems:
                    failed = True
                    break
            if failed:
                break
        if failed:
            break
    sol._MAX_CTAS = None
    if not failed and not args.shapes:
        problems, _ = check(300, 520, 136, "f16", rng, offset=1)
        print(f"misaligned a: {'OK' if not problems else 'FAIL ' + '; '.join(problems)}", flush=True)
        failed = bool(problems)
    if args.bench and not failed:
        for M, N, K, kind in [(8192, 8192, 8192, "f16"), (8192, 8192, 8192, "bf16"), (4096, 4096, 4096, "f16"),
                              (4096, 4096, 4096, "bf16"), (8192, 8192, 1024, "f16"), (8192, 8192, 1024, "bf16"),
                              (8192, 8192, 256, "f16"), (8205, 2949, 5921, "f16"), (16, 8192, 8192, "f16")]:
            bench(M, N, K, kind, rng)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
