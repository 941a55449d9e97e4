#!/usr/bin/env python3
"""Side-by-side benchmark of the GEMM ladder (ex09 .. ex12): references, fixtures, cuBLAS.

    PYTHONPATH=. python3 benchmarks/bench_gemm.py                 # everything (~3-4 minutes on an H200)
    PYTHONPATH=. python3 benchmarks/bench_gemm.py --quick         # no 8192^3
    PYTHONPATH=. python3 benchmarks/bench_gemm.py --only ex11,ex12
    PYTHONPATH=. python3 benchmarks/bench_gemm.py --tune          # also time the knob variants
    PYTHONPATH=. python3 benchmarks/bench_gemm.py --only ex11 --tune --quick   # ex11's knob variants, no 8192^3

Every solution and fixture is loaded from its file (solutions/exNN_*/solution.py,
tests/fixtures/gpu/exNN_*/solution.py), so `grader.kernel.load("kernel.cu")` compiles the
kernel.cu next to it. First a correctness check of every kernel against a float64 product
(computed with CuPy in float64 on the GPU) on odd shapes (1x1x1, 17x129x127, 1000x1x999,
127x1000x17, 257x263x269) and aligned ones (264x520x136, 1024x1024x1024): normwise relative
error ||C - Cref||_F / ||Cref||_F <= 4 * sqrt(K) * 2^-24 (the same bound for fp16/bf16 inputs:
their products are exact in fp32, only the fp32 accumulation rounds); outputs are pre-filled
with NaN so an unwritten element fails. The fp16-accumulator fixture is expected to FAIL.
Then each variant is timed (after a synchronised warm-up, grader.timing.time_gpu: L2 flush
before every call, CUDA events, median) at 4096^3, 8192^3 and M=N=8192, K=256:

  cuBLAS fp32 (cupy.matmul, plain FP32: CUPY_TF32 must not be set), ex09 reference, ex09
  uncoalesced fixture, ex10 reference, ex10 fixture (= ex09's kernel), ex11 reference, ex11 fixture
  (= ex10's kernel), cuBLAS fp16 (cupy.matmul on float16, fp16 output), ex12 reference on float16 and
  on bfloat16 (uint16 bits; CuPy has no bfloat16, so there is no cuBLAS bf16 row), ex12 fixtures
  (previous rung: SIMT on fp16; fp16 accumulators).

The naive kernels (ex09 reference, its uncoalesced fixture, the ex10 fixture) are timed only at
4096^3 and 8192x8192x256 (the uncoalesced kernel takes ~2 s at 8192^3); a naive kernel slower
than 0.5 s per call would be timed by hand with 3 calls. --quick also skips 8192^3 for
everything. A whole run takes well under a minute on an H200 (--tune: about 40 s more).

The table: shape, variant, median ms, TFLOP/s (2MNK / t), the baseline it is compared with,
speed-up = t_baseline / t_variant, and for the references the bar:
  ex09 >= 10x its uncoalesced fixture (8192x8192x256, where the lesson shows; ~6x at 4096^3);  ex10 >= 1.5x ex09 (4096^3);
  ex11 >= 0.85x cuBLAS fp32 (4096^3, 8192^3);    ex12 >= 0.65x cuBLAS fp16 (8192^3, fp16; issue 17).
Fixture rows show their speed relative to their exercise's reference. Exit status 1 when a
correctness check (other than the expected failure) or a bar fails. With $OUT set, the rows are
also written to $OUT/bench_gemm.json.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import cupy as cp  # noqa: E402

from grader.timing import StopPolicy, time_gpu  # noqa: E402

POLICY = StopPolicy(min_samples=10, max_samples=60, target_rse=0.005, max_seconds=1.5)
NAIVE_POLICY = StopPolicy(min_samples=3, max_samples=5, target_rse=0.01, max_seconds=2.0)
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 256)]
CHECK_SHAPES = [(1, 1, 1), (17, 129, 127), (1000, 1, 999), (127, 1000, 17), (257, 263, 269),
                (264, 520, 136), (1024, 1024, 1024)]
NAIVE_SHAPES = {(4096, 4096, 4096), (8192, 8192, 256)}


# name -> (exercise, path of solution.py relative to ROOT, input kind, naive?, expected to be correct)
VARIANTS = {
    "ex09_ref": ("ex09", "solutions/ex09_gemm_naive", "f32", True, True),
    "ex09_uncoalesced": ("ex09", "tests/fixtures/gpu/ex09_gemm_naive_uncoalesced", "f32", True, True),
    "ex10_ref": ("ex10", "solutions/ex10_gemm_smem", "f32", False, True),
    "ex10_prev": ("ex10", "solutions/ex09_gemm_naive", "f32", True, True),
    "ex11_ref": ("ex11", "solutions/ex11_gemm_regtile", "f32", False, True),
    "ex11_prev": ("ex11", "solutions/ex10_gemm_smem", "f32", False, True),
    "ex12_ref_f16": ("ex12", "solutions/ex12_gemm_tensorcore", "f16", False, True),
    "ex12_ref_bf16": ("ex12", "solutions/ex12_gemm_tensorcore", "bf16", False, True),
    "ex12_prev_f16": ("ex12", "tests/fixtures/gpu/ex12_gemm_tensorcore_prev", "f16", False, True),
    "ex12_prev_bf16": ("ex12", "tests/fixtures/gpu/ex12_gemm_tensorcore_prev", "bf16", False, True),
    "ex12_nomma_f16": ("ex12", "tests/fixtures/gpu/ex12_gemm_tensorcore_nomma", "f16", False, True),
    "ex12_nomma_bf16": ("ex12", "tests/fixtures/gpu/ex12_gemm_tensorcore_nomma", "bf16", False, True),
    "ex12_fp16acc_f16": ("ex12", "tests/fixtures/gpu/ex12_gemm_tensorcore_fp16acc", "f16", False, False),
    "ex12_fp16acc_bf16": ("ex12", "tests/fixtures/gpu/ex12_gemm_tensorcore_fp16acc", "bf16", False, True),
}
# Timed rows, in table order: (row name, variant or library call, baseline row, bar or None, bar shapes)
ROWS = [
    ("cublas_f32", "cublas_f32", None, None, ()),
    ("ex09_ref", "ex09_ref", "ex09_uncoalesced", 10.0, ((8192, 8192, 256),)),
    ("ex09_uncoalesced", "ex09_uncoalesced", "ex09_ref", None, ()),
    ("ex10_ref", "ex10_ref", "ex09_ref", 1.5, ((4096, 4096, 4096),)),
    ("ex10_prev", "ex10_prev", "ex10_ref", None, ()),
    ("ex11_ref", "ex11_ref", "cublas_f32", 0.85, ((4096, 4096, 4096), (8192, 8192, 8192))),
    ("ex11_prev", "ex11_prev", "ex11_ref", None, ()),
    ("cublas_f16", "cublas_f16", None, None, ()),
    ("ex12_ref_f16", "ex12_ref_f16", "cublas_f16", 0.65, ((8192, 8192, 8192),)),
    ("ex12_ref_bf16", "ex12_ref_bf16", "cublas_f16", None, ()),
    ("ex12_prev_f16", "ex12_prev_f16", "ex12_ref_f16", None, ()),
    ("ex12_fp16acc_f16", "ex12_fp16acc_f16", "ex12_ref_f16", None, ()),
]
EXERCISE_OF_ROW = {"cublas_f32": ("ex09", "ex10", "ex11"), "cublas_f16": ("ex12",)}
LIBRARY_OF = {ex: lib for lib, exs in EXERCISE_OF_ROW.items() for ex in exs}   # a --tune row's baseline
# --tune: (row name, variant, {module constant: value}) timed at 4096^3 and 8192^3 (not --quick)
TUNE = [
    ("ex11_ref[128 thr,BK=16]", "ex11_ref", {"_VEC_KERNEL": "w_k16_async"}),
    ("ex11_ref[128 thr,BK=8]", "ex11_ref", {"_VEC_KERNEL": "w_k8_async"}),
    ("ex11_ref[GROUP_M=16]", "ex11_ref", {"_GROUP_M": 16}),
    # solutions/ex12 (promoted from drafts/ex12_faster on 2026-12-04): _CONFIG = (WM, WN, BK, STAGES, SWZ, SCHED)
    ("ex12_ref_f16[k32 s4]", "ex12_ref_f16", {"_CONFIG": (2, 4, 32, 4, True, 1)}),
    ("ex12_ref_f16[k64 s4]", "ex12_ref_f16", {"_CONFIG": (2, 4, 64, 4, True, 1)}),
    ("ex12_ref_f16[no persist]", "ex12_ref_f16", {"_PERSIST": False}),
    ("ex12_ref_f16[GROUP_M=8]", "ex12_ref_f16", {"_GROUP_M": 8}),
]

_modules: dict[str, object] = {}


def load_module(rel: str):
    """Import ROOT/rel/solution.py under a unique name (kernel.cu resolves next to it)."""
    mod = _modules.get(rel)
    if mod is None:
        path = ROOT / rel / "solution.py"
        folder = str(path.parent)
        sys.path.insert(0, folder)
        try:
            spec = importlib.util.spec_from_file_location("bench_" + rel.replace("/", "_"), path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        finally:
            sys.path.remove(folder)
        _modules[rel] = mod
    return mod


def to_bf16_bits(x32):
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even."""
    u = x32.view(cp.uint32)
    return ((u + cp.uint32(0x7FFF) + ((u >> 16) & cp.uint32(1))) >> 16).astype(cp.uint16)


def bf16_bits_to_f64(bits):
    return (bits.astype(cp.uint32) << 16).view(cp.float32).astype(cp.float64)


def make_inputs(kind, M, N, K, seed):
    """(a, b, a64, b64): device inputs of `kind` and their exact float64 values."""
    rs = cp.random.RandomState(seed)
    a32 = rs.standard_normal((M, K), dtype=cp.float32)
    b32 = rs.standard_normal((K, N), dtype=cp.float32)
    if kind == "f32":
        return a32, b32, a32.astype(cp.float64), b32.astype(cp.float64)
    if kind == "f16":
        a, b = a32.astype(cp.float16), b32.astype(cp.float16)
        return a, b, a.astype(cp.float64), b.astype(cp.float64)
    a, b = to_bf16_bits(a32), to_bf16_bits(b32)
    return a, b, bf16_bits_to_f64(a), bf16_bits_to_f64(b)


def check(name, only, knobs=None, label=None):
    ex, rel, kind, _naive, expect_ok = VARIANTS[name]
    mod = load_module(rel)
    saved = {k: getattr(mod, k) for k in (knobs or {})}
    try:
        for k, v in (knobs or {}).items():
            setattr(mod, k, v)
        return _check(label or name, mod, kind, expect_ok)
    finally:
        for k, v in saved.items():
            setattr(mod, k, v)


def _check(name, mod, kind, expect_ok):
    failures = []
    for i, (M, N, K) in enumerate(CHECK_SHAPES):
        a, b, a64, b64 = make_inputs(kind, M, N, K, 1000 + i)
        c = cp.full((M, N), cp.nan, dtype=cp.float32)
        mod.solve(a, b, c)
        cp.cuda.runtime.deviceSynchronize()
        ref = cp.matmul(a64, b64)
        c64 = c.astype(cp.float64)
        nref = float(cp.linalg.norm(ref))
        err = float(cp.linalg.norm(c64 - ref)) / nref if nref > 0 else float(cp.linalg.norm(c64))
        if not math.isfinite(err):
            err = float("inf")
        bound = 4 * math.sqrt(K) * 2.0**-24
        ok = err <= bound and not bool(cp.isnan(c).any())
        print(f"  check {name:26s} {M:5d}x{N:5d}x{K:5d}  rel err {err:9.3e}  bound {bound:8.2e}  "
              f"{'ok' if ok else 'FAIL'}", flush=True)
        if not ok:
            failures.append((M, N, K, err))
    if expect_ok:
        return not failures
    print(f"  check {name:20s} expected to fail: {'it does' if failures else 'it PASSES (unexpected)'}")
    return bool(failures)


STUBS = {"ex09": ("student_template/ex09_gemm_naive", "f32"), "ex10": ("student_template/ex10_gemm_smem", "f32"),
         "ex11": ("student_template/ex11_gemm_regtile", "f32"),
         "ex12": ("student_template/ex12_gemm_tensorcore", "f16")}


def check_stubs(only):
    """Each stub compiles, runs without an error on odd and aligned shapes, and writes nothing."""
    good = True
    for ex, (rel, kind) in STUBS.items():
        if ex not in only:
            continue
        try:
            mod = load_module(rel)
            for kd in ([kind, "bf16"] if ex == "ex12" else [kind]):
                for (M, N, K) in [(257, 263, 269), (256, 512, 128)]:
                    a, b, _, _ = make_inputs(kd, M, N, K, 5)
                    c = cp.full((M, N), cp.nan, dtype=cp.float32)
                    mod.solve(a, b, c)
                    cp.cuda.runtime.deviceSynchronize()
                    if not bool(cp.isnan(c).all()):
                        raise AssertionError(f"{kd} {M}x{N}x{K}: the stub wrote into c")
            print(f"  stub  {rel}: runs, leaves c unwritten: ok", flush=True)
        except Exception as exc:  # noqa: BLE001 -- report and go on
            good = False
            print(f"  stub  {rel}: FAIL {type(exc).__name__}: {exc}", flush=True)
    return good


class _Stats:
    def __init__(self, samples):
        xs = sorted(samples)
        self.n = len(xs)
        self.median_ms = xs[len(xs) // 2] if len(xs) % 2 else 0.5 * (xs[len(xs) // 2 - 1] + xs[len(xs) // 2])
        self.iqr_ms = xs[-1] - xs[0]


def measure(fn, naive):
    """Median ms of fn. Warm-up here, with a synchronisation after every call: time_gpu's own
    warm-up enqueues calls for warmup_ms of HOST time without waiting, i.e. up to the launch
    queue's depth of calls, which is minutes of GPU work for the slow kernels. A naive kernel
    slower than 0.5 s per call is timed by hand instead (3 calls, L2 flush, CUDA events): time_gpu
    samples in batches of 10 whatever the policy."""
    t0 = time.perf_counter()
    fn()
    cp.cuda.runtime.deviceSynchronize()
    first = time.perf_counter() - t0
    n = 0
    while not naive and time.perf_counter() - t0 < 0.05 and n < 20:
        fn()
        cp.cuda.runtime.deviceSynchronize()
        n += 1
    if naive and first > 0.5:
        flush = cp.empty(256 << 20, cp.uint8)
        stream = cp.cuda.get_current_stream()
        samples = []
        for i in range(3):
            flush.fill(i)
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record(stream)
            fn()
            e1.record(stream)
            e1.synchronize()
            samples.append(cp.cuda.get_elapsed_time(e0, e1))
        return _Stats(samples)
    return time_gpu(fn, warmup_ms=0.0, policy=NAIVE_POLICY if naive else POLICY)


def timed_call(row_variant, M, N, K, bufs):
    """A zero-argument callable for one timed row at one shape."""
    if row_variant == "cublas_f32":
        a, b, c = bufs["f32"]
        return lambda: cp.matmul(a, b, out=c)
    if row_variant == "cublas_f16":
        a, b, _ = bufs["f16"]
        c16 = bufs["c16"]
        return lambda: cp.matmul(a, b, out=c16)
    _ex, rel, kind, _naive, _ok = VARIANTS[row_variant]
    mod = load_module(rel)
    a, b, c = bufs[kind]
    return lambda: mod.solve(a, b, c)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated exercises, e.g. ex11,ex12")
    ap.add_argument("--quick", action="store_true", help="skip 8192^3")
    ap.add_argument("--tune", action="store_true", help="also time the knob variants of ex11/ex12")
    ap.add_argument("--no-check", action="store_true", help="skip the correctness checks")
    ap.add_argument("--stubs", action="store_true",
                    help="also smoke-test the student stubs: they must run and leave c unwritten (NaN)")
    args = ap.parse_args()
    if os.environ.get("CUPY_TF32"):
        sys.exit("CUPY_TF32 is set: cuBLAS fp32 would use TF32; unset it")
    only = {s.strip() for s in args.only.split(",") if s.strip()} or {"ex09", "ex10", "ex11", "ex12"}

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.runtime.getDevice())
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    started = datetime.datetime.now(datetime.timezone.utc)
    print(f"device: {name}, {props['multiProcessorCount']} SMs; CuPy {cp.__version__}; "
          f"{started:%Y-%m-%d %H:%M:%S} UTC; command: {' '.join(sys.argv)}", flush=True)

    ok = True
    if not args.no_check:
        t0 = time.perf_counter()
        for v, (ex, *_rest) in VARIANTS.items():
            if ex in only:
                ok &= check(v, only)
        if args.tune:
            for label, v, knobs in TUNE:
                if VARIANTS[v][0] in only:
                    ok &= check(v, only, knobs, label)
        print(f"checks: {'all as expected' if ok else 'PROBLEMS'} ({time.perf_counter() - t0:.1f} s)", flush=True)

    if args.stubs:
        ok &= check_stubs(only)

    shapes = [s for s in SHAPES if not (args.quick and s == (8192, 8192, 8192))]
    results = []           # dicts: shape, row, ms, tflops, ...
    times = {}             # (shape, row) -> ms
    for (M, N, K) in shapes:
        bufs = {}
        for kind in ("f32", "f16", "bf16"):
            a, b, _, _ = make_inputs(kind, M, N, K, 7)
            bufs[kind] = (a, b, cp.empty((M, N), dtype=cp.float32))
        bufs["c16"] = cp.empty((M, N), dtype=cp.float16)
        rows = [r for r in ROWS if (r[0] in EXERCISE_OF_ROW and set(EXERCISE_OF_ROW[r[0]]) & only)
                or (r[0] in VARIANTS and VARIANTS[r[0]][0] in only)]
        tune_rows = [(n, v, LIBRARY_OF[VARIANTS[v][0]], None, ()) for n, v, _ in TUNE
                     if args.tune and VARIANTS[v][0] in only and K != 256]
        for row, variant, base, bar, bar_shapes in rows + tune_rows:
            naive = variant in VARIANTS and VARIANTS[variant][3]
            if naive and (M, N, K) not in NAIVE_SHAPES:
                continue
            knobs = next((kv for n, _v, kv in TUNE if n == row), None)
            mod = load_module(VARIANTS[variant][1]) if knobs else None
            saved = {k: getattr(mod, k) for k in knobs} if knobs else {}
            try:
                for k, v in (knobs or {}).items():
                    setattr(mod, k, v)
                fn = timed_call(variant, M, N, K, bufs)
                st = measure(fn, naive)
            finally:
                for k, v in saved.items():
                    setattr(mod, k, v)
            ms = st.median_ms
            times[((M, N, K), row)] = ms
            tflops = 2.0 * M * N * K / (ms * 1e-3) / 1e12
            results.append(dict(shape=f"{M}x{N}x{K}", row=row, ms=ms, iqr_ms=st.iqr_ms, n=st.n,
                                tflops=tflops, base=base, bar=bar, bar_here=(M, N, K) in bar_shapes))
            print(f"  timed {row:26s} {M}x{N}x{K}: {ms:9.3f} ms  {tflops:7.2f} TFLOP/s  (n={st.n})", flush=True)
            out = os.environ.get("OUT")
            if out:   # partial results survive a timeout
                Path(out, "bench_gemm_partial.json").write_text(json.dumps(results, indent=1))

    # Ratios and bars.
    lines = ["| shape | variant | median ms | TFLOP/s | vs | speed-up | bar |", "|---|---|---:|---:|---|---:|---|"]
    for r in results:
        shape = tuple(int(x) for x in r["shape"].split("x"))
        tb = times.get((shape, r["base"])) if r["base"] else None
        ratio = tb / r["ms"] if tb else None
        r["ratio"] = ratio
        bar_txt = ""
        if r["bar"] is not None and r["bar_here"]:
            if ratio is None:
                bar_txt = f">= {r['bar']}: not measured"
            else:
                passed = ratio >= r["bar"]
                ok &= passed
                bar_txt = f">= {r['bar']}: {'PASS' if passed else 'MISS'}"
        lines.append(f"| {r['shape']} | {r['row']} | {r['ms']:.3f} | {r['tflops']:.2f} | {r['base'] or ''} | "
                     f"{'' if ratio is None else f'{ratio:.3f}'} | {bar_txt} |")
    print()
    print("\n".join(lines))
    out = os.environ.get("OUT")
    if out:
        Path(out, "bench_gemm.json").write_text(json.dumps(
            dict(device=name, started_utc=started.isoformat(), argv=sys.argv, rows=results), indent=1))
    print(f"\ntotal {(datetime.datetime.now(datetime.timezone.utc) - started).total_seconds():.0f} s; "
          f"{'all checks and bars pass' if ok else 'SOME CHECK OR BAR FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
