#!/usr/bin/env python3
"""Measure the reference solutions next to their library anchors, in one process, on a GPU.

    python benchmarks/bench_references.py                          # every exercise
    python benchmarks/bench_references.py --only ex02_saxpy ex03_transpose
    python benchmarks/bench_references.py --only ex05_scan --tune  # also time the knobs' variants

Measured (each on the current CuPy stream, timed with CUDA events, L2 flushed before every rep):
  * copy bandwidth: ``dst[...] = src`` on 2^28 float32 (bytes read + written), always; also on
    2^24 and 2^25 float32 (the byte counts of the ex07 shapes) when ex07 is measured
  * per exercise, first a correctness check of the reference at its benchmark shapes against a
    float64 (or exact) result computed with CuPy, outputs pre-filled with poison as the grader
    does; then the reference and the exercise's library anchor side by side:
      ex01_vector_add  n = 2^28, 2^24                  anchor: copy
      ex02_saxpy       n = 2^28 aligned / x misaligned anchor: copy; CuPy ElementwiseKernel saxpy
      ex03_transpose   16384x16384, 8191x12289         anchor: copy; cupy.ascontiguousarray(x.T)
      ex04_reduction   n = 2^28, 2^24                  anchor: cupy.sum
      ex05_scan        n = 2^28 int32 / float32        anchor: copy; cupy.cumsum(x, dtype=x.dtype)
      ex06_histogram   n = 2^30 uniform / skewed bytes anchor: copy (as the read ceiling); cupy.bincount
      ex07_softmax     4096x4096, 32768x1024           anchor: copy; a naive CuPy softmax
      ex08_layernorm   16384x4096, 65536x1024          anchor: copy; a naive CuPy layer norm

Bars (the reference must pass them):
  ex01 >= 0.90x copy at n = 2^28;
  ex02 >= 0.92x copy at n = 2^28 (aligned) and faster than the ElementwiseKernel saxpy;
  ex03 >= 0.88x copy at 16384x16384 and 8191x12289, and >= 3x ascontiguousarray(x.T);
  ex04 >= 1.00x cupy.sum's bandwidth at n = 2^28;
  ex05 >= 0.85x copy at n = 2^28 int32, and at least as fast as cupy.cumsum;
  ex06 >= 0.75x copy bandwidth (as read bandwidth, n bytes) at n = 2^30 uniform, >= 0.50x skewed;
  ex07 >= 0.97x the bandwidth of a copy of the same bytes (2^24, 2^25 float32) at 4096x4096 and
       32768x1024 (a copy of 128 MiB itself reaches only ~85 % of the 2^28 copy's bandwidth);
  ex08 >= 0.88x copy at 16384x4096.
Rows without a bar are informational. A markdown table is printed last; the exit status is 1
when a check or a bar fails.

Copy bandwidth is the 2^28 copy. Copies of the ex07 byte counts (2^24 and 2^25 float32) are
also timed, because at 128 MiB a plain copy itself only reaches ~85 % of that: the ex07 anchor
column gives both ratios.

--tune times the variants of the knobs that solutions/ex02, ex03, ex05, ex06 and ex08 expose as
module constants (informational rows, the default variant is marked; ex03's and ex05's variants are
checked on edge shapes first).
--small runs every section at tiny sizes: a smoke test of this script, not a measurement.
"""
from __future__ import annotations

import argparse
import datetime
import math
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.solution_module import load_solution_module  # noqa: E402

FLUSH_BYTES = 256 * 2**20
WARMUP_S = 0.025
MIN_REPS, MAX_REPS = 50, 200
TARGET_S = 1.0          # aim for about this much timed GPU work per measurement
EXERCISES = ["ex01_vector_add", "ex02_saxpy", "ex03_transpose", "ex04_reduction", "ex05_scan",
             "ex06_histogram", "ex07_softmax", "ex08_layernorm"]
F32_EPS = float(np.finfo(np.float32).eps)

# Benchmark shapes; --small replaces them with tiny ones (smoke test).
SHAPES = {
    "copy": 2**28,
    "ex01": [2**28, 2**24],
    "ex02": [(2**28, 0, 0), (2**28, 1, 0)],           # (n, ox, oy)
    "ex03": [(16384, 16384), (8191, 12289)],
    "ex04": [2**28, 2**24],
    "ex05": [(2**28, "int32"), (2**28, "float32")],
    "ex06": [(2**30, "uniform"), (2**30, "skewed")],
    "ex07": [(4096, 4096), (32768, 1024)],
    "ex07_extra": [(1, 2**26), (8191, 8193), (2**20, 64), (256, 262144), (1024, 65536), (2**26, 1),
                   (8192, 8192), (65536, 1000)],
    "ex08": [(16384, 4096), (65536, 1024)],
}
SMALL = {
    "copy": 2**16,
    "ex01": [2**16, 2**12 + 3],
    "ex02": [(5003, 0, 0), (5003, 1, 0)],
    "ex03": [(96, 160), (61, 97)],
    "ex04": [2**16, 2**12 + 3],
    "ex05": [(70001, "int32"), (70001, "float32")],
    "ex06": [(100003, "uniform"), (100003, "skewed")],
    "ex07": [(64, 64), (128, 1024)],
    "ex07_extra": [(1, 5000), (33, 65)],
    "ex08": [(64, 4096), (256, 1024)],
}


# ----------------------------------------------------------------------------- timing
class Bencher:
    def __init__(self, min_reps=MIN_REPS, max_reps=MAX_REPS, flush_bytes=FLUSH_BYTES):
        self.flush_buf = cp.empty(flush_bytes // 4, dtype=cp.float32)
        self.min_reps, self.max_reps = min_reps, max_reps

    def flush(self):
        self.flush_buf.fill(0.0)   # writes 256 MB: evicts the 60 MB L2

    def time(self, fn, setup=None):
        """Median and IQR (ms) of fn() over reps, each preceded by setup() and an L2 flush
        issued outside the timed events."""
        stream = cp.cuda.get_current_stream()
        t0 = time.perf_counter()
        warm = 0
        while warm < 3 or time.perf_counter() - t0 < WARMUP_S:
            if setup is not None:
                setup()
            fn()
            stream.synchronize()
            warm += 1
        # one timed probe to size the rep count
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        self.flush()
        e0.record(stream)
        fn()
        e1.record(stream)
        e1.synchronize()
        probe_ms = cp.cuda.get_elapsed_time(e0, e1)
        reps = int(min(self.max_reps, max(self.min_reps, TARGET_S * 1e3 / max(probe_ms, 1e-3))))
        events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
        for start, end in events:
            if setup is not None:
                setup()
            self.flush()
            start.record(stream)
            fn()
            end.record(stream)
        stream.synchronize()
        times = np.array([cp.cuda.get_elapsed_time(s, e) for s, e in events])
        q1, med, q3 = np.percentile(times, [25, 50, 75])
        return float(med), float(q3 - q1), reps


# ----------------------------------------------------------------------------- helpers
def load_solution(ex: str):
    return load_solution_module(ROOT / "solutions" / ex / "solution.py", f"reference_{ex}")


def naive_softmax(x, y):
    m = x.max(axis=1, keepdims=True)
    e = cp.exp(x - m)
    y[...] = e / e.sum(axis=1, keepdims=True)


def softmax64(x):
    xd = x.astype(cp.float64)
    e = cp.exp(xd - xd.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def naive_layernorm(x, gamma, beta, y, eps):
    m = x.mean(axis=1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=1, keepdims=True)
    y[...] = (x - m) / cp.sqrt(v + eps) * gamma + beta


def layernorm64(x, gamma, beta, eps):
    xd = x.astype(cp.float64)
    m = xd.mean(axis=1, keepdims=True)
    v = ((xd - m) ** 2).mean(axis=1, keepdims=True)
    return (xd - m) / cp.sqrt(v + eps) * gamma.astype(cp.float64) + beta.astype(cp.float64)


def free_memory():
    cp.cuda.get_current_stream().synchronize()
    cp.get_default_memory_pool().free_all_blocks()


def poison_int32():
    return np.int32(np.uint32(0xA5A5A5A5).view(np.int32))


class Row:
    def __init__(self, name, shape, ms, iqr, nbytes, reps, anchor="", bar=None, ok=True, note=""):
        self.name, self.shape, self.ms, self.iqr, self.nbytes, self.reps = name, shape, ms, iqr, nbytes, reps
        self.anchor, self.bar, self.ok, self.note = anchor, bar, ok, note

    @property
    def gbs(self):
        return self.nbytes / (self.ms * 1e-3) / 1e9


def fmt_shape(shape):
    return " x ".join(_fmt_dim(d) if isinstance(d, int) else str(d) for d in shape)


def _fmt_dim(d):
    if d >= 1024 and d & (d - 1) == 0:
        return f"2^{d.bit_length() - 1}"
    return str(d)


class Context:
    """What the sections share: the bencher, the rows and failures collected, the copy anchor."""

    def __init__(self, bench, shapes, tune, extra):
        self.bench, self.shapes, self.tune, self.extra = bench, shapes, tune, extra
        self.rows: list[Row] = []
        self.failures: list[str] = []
        self.rng = cp.random.RandomState(12345)
        self.copy_gbs = float("nan")
        self.same_copy: dict[int, Row] = {}

    def report(self, r: Row) -> Row:
        self.rows.append(r)
        print(f"  {r.name:<34} {fmt_shape(r.shape):<18} {r.ms:9.4f} ms  IQR {r.iqr:7.4f}  "
              f"{r.gbs:7.0f} GB/s  ({r.reps} reps) {r.note}")
        sys.stdout.flush()
        return r

    def timed(self, name, shape, fn, nbytes, setup=None, **kw) -> Row:
        ms, iqr, reps = self.bench.time(fn, setup)
        return Row(name, shape, ms, iqr, nbytes, reps, **kw)

    def fail(self, text):
        self.failures.append(text)
        print(f"  CHECK FAILED: {text}")

    def tune_variants(self, label, shape, mod, variants, fn, nbytes, reset=None, check=None):
        """Time fn() under each variant (a dict of module constants); restore the defaults. With
        check, check(mod) first lists the cases the variant gets wrong (a failure when any)."""
        if not self.tune:
            return
        defaults = {k: getattr(mod, k) for v in variants for k in v}
        for v in variants:
            for k, val in {**defaults, **v}.items():
                setattr(mod, k, val)
            if reset:
                reset()
            is_default = all(defaults[k] == val for k, val in v.items())
            desc = ", ".join(f"{k}={val}" for k, val in v.items()) + (" (default)" if is_default else "")
            bad = check(mod) if check else []
            if bad:
                self.fail(f"{label} tune {desc}: wrong at {', '.join(bad)}")
            r = self.timed(f"{label} tune", shape, fn, nbytes, ok=not bad, note=desc)
            r.anchor = f"{r.gbs / self.copy_gbs:.3f}x copy; {desc}"
            self.report(r)
        for k, val in defaults.items():
            setattr(mod, k, val)
        if reset:
            reset()


# ----------------------------------------------------------------------------- sections
def section_copy(ctx: Context, want_same_size: bool):
    print("\nanchors")
    n = ctx.shapes["copy"]
    src = ctx.rng.random_sample(n, dtype=cp.float32)
    dst = cp.empty_like(src)
    copy = ctx.report(ctx.timed("copy (dst[...] = src)", (n,), lambda: dst.__setitem__(Ellipsis, src), 8 * n))
    ctx.copy_gbs = copy.gbs
    del dst
    if want_same_size:
        # Same-size copies (informational): what a plain copy reaches at the byte counts of the
        # ex07 shapes, where launch, ramp-up and drain are a visible part of the time.
        for shape in ctx.shapes["ex07"]:
            k = shape[0] * shape[1]
            s_src = src[:k] if k <= n else ctx.rng.random_sample(k, dtype=cp.float32)
            s_dst = cp.empty_like(s_src)
            r = ctx.report(ctx.timed("copy, same bytes as ex07", (k,), lambda: s_dst.__setitem__(Ellipsis, s_src),
                                     8 * k))
            ctx.same_copy[k] = r
            del s_dst
    del src
    free_memory()


def section_ex01(ctx: Context):
    print("\nex01_vector_add")
    sol = load_solution("ex01_vector_add")
    for i, n in enumerate(ctx.shapes["ex01"]):
        a = ctx.rng.standard_normal(n, dtype=cp.float32)
        b = ctx.rng.standard_normal(n, dtype=cp.float32)
        c = cp.full(n, cp.nan, dtype=cp.float32)
        sol.solve(a, b, c)
        cp.cuda.get_current_stream().synchronize()
        ok = bool(cp.array_equal(c, a + b))
        if not ok:
            ctx.fail(f"ex01 n={n}: result differs from a + b")
        r = ctx.timed("ex01 reference", (n,), lambda: sol.solve(a, b, c), 12 * n, ok=ok)
        r.anchor = f"{r.gbs / ctx.copy_gbs:.3f}x copy"
        r.bar = (r.gbs / ctx.copy_gbs >= 0.90, ">= 0.90x copy") if i == 0 else None
        ctx.report(r)
        del a, b, c
    free_memory()


def section_ex02(ctx: Context):
    print("\nex02_saxpy")
    sol = load_solution("ex02_saxpy")
    ek = cp.ElementwiseKernel("float32 a, float32 x", "float32 y", "y = a * x + y", "bench_saxpy")
    a = np.float32(1.5)
    for i, (n, ox, oy) in enumerate(ctx.shapes["ex02"]):
        xbuf = ctx.rng.standard_normal(n + 4, dtype=cp.float32)
        ybuf = ctx.rng.standard_normal(n + 4, dtype=cp.float32)
        x, y = xbuf[ox:ox + n], ybuf[oy:oy + n]       # views ox, oy floats past a 256-byte boundary
        y0 = y.astype(cp.float64)
        sol.solve(a, x, y)
        cp.cuda.get_current_stream().synchronize()
        want = float(a) * x.astype(cp.float64) + y0
        bad = int((~(cp.abs(y.astype(cp.float64) - want) <= 32 * F32_EPS + 1e-7 * cp.abs(want))).sum())
        ok = bad == 0
        if not ok:
            ctx.fail(f"ex02 n={n} ox={ox} oy={oy}: {bad} elements outside rtol=1e-7, atol=32 eps")
        del y0, want
        shape = (n, f"ox={ox}", f"oy={oy}")
        # y keeps growing by a * x per call; the values stay far from overflow over a few hundred calls.
        ref = ctx.timed("ex02 reference", shape, lambda: sol.solve(a, x, y), 12 * n, ok=ok)
        anchor = ctx.report(ctx.timed("ElementwiseKernel saxpy", shape, lambda: ek(a, x, y), 12 * n))
        cr = ref.gbs / ctx.copy_gbs
        ref.anchor = f"{cr:.3f}x copy; {anchor.ms / ref.ms:.3f}x ElementwiseKernel"
        if i == 0:
            ref.bar = (cr >= 0.92 and ref.ms < anchor.ms, ">= 0.92x copy, faster than ElementwiseKernel")
        ctx.report(ref)
        ctx.tune_variants("ex02", shape, sol, [{"_MAX_BLOCKS": 2**31 - 1}, {"_MAX_BLOCKS": 132 * 16},
                                               {"_MAX_BLOCKS": 132 * 64}],
                          lambda: sol.solve(a, x, y), 12 * n)
        del xbuf, ybuf, x, y
        free_memory()


def section_ex03(ctx: Context):
    print("\nex03_transpose")
    sol = load_solution("ex03_transpose")
    for shape in ctx.shapes["ex03"]:
        rows, cols = shape
        x = ctx.rng.standard_normal(shape, dtype=cp.float32)
        y = cp.full((cols, rows), cp.nan, dtype=cp.float32)
        sol.solve(x, y)
        cp.cuda.get_current_stream().synchronize()
        ok = bool(cp.array_equal(y, x.T))
        if not ok:
            ctx.fail(f"ex03 {shape}: result differs from x.T")
        nbytes = 8 * rows * cols
        ref = ctx.timed("ex03 reference", shape, lambda: sol.solve(x, y), nbytes, ok=ok)
        anchor = ctx.report(ctx.timed("cupy.ascontiguousarray(x.T)", shape, lambda: cp.ascontiguousarray(x.T), nbytes))
        cr, speedup = ref.gbs / ctx.copy_gbs, anchor.ms / ref.ms
        ref.anchor = f"{cr:.3f}x copy; {speedup:.2f}x ascontiguousarray"
        ref.bar = (cr >= 0.88 and speedup >= 3.0, ">= 0.88x copy, >= 3x ascontiguousarray")
        ctx.report(ref)
        ctx.tune_variants("ex03", shape, sol,
                          [{"_TILE": t, "_GROUP": g} for t in ((128, 64), (64, 64), (128, 32)) for g in (1, 2, 0)]
                          + [{"_ALIGN": a} for a in (0, 32)],
                          lambda: sol.solve(x, y), nbytes, check=_transpose_check(ctx, x, y))
        del x, y
        free_memory()


def _transpose_check(ctx, x, y):
    """The shapes a transpose variant gets wrong: the edge shapes and x itself (y poisoned first)."""
    def check(cand):
        bad = []
        for rows, cols in TRANSPOSE_EDGE_SHAPES + [x.shape]:
            xs = x if (rows, cols) == x.shape else ctx.rng.standard_normal((rows, cols), dtype=cp.float32)
            ys = y if xs is x else cp.empty((cols, rows), dtype=cp.float32)
            ys.fill(cp.nan)
            cand.solve(xs, ys)
            if not bool(cp.array_equal(ys, xs.T)):
                bad.append(f"{rows}x{cols}")
        return bad
    return check


def section_ex04(ctx: Context):
    print("\nex04_reduction")
    sol = load_solution("ex04_reduction")
    src = ctx.rng.standard_normal(max(ctx.shapes["ex04"]), dtype=cp.float32)
    for i, n in enumerate(ctx.shapes["ex04"]):
        xs = src[:n]
        lib = ctx.report(ctx.timed("cupy.sum", (n,), lambda: cp.sum(xs), 4 * n))
        x = (ctx.rng.standard_normal(n, dtype=cp.float32) * 10 + 1000).astype(cp.float32)
        out = cp.full(1, cp.nan, dtype=cp.float32)
        sol.solve(x, out)
        cp.cuda.get_current_stream().synchronize()
        want = float(cp.sum(x.astype(cp.float64)))
        got = float(out[0])
        tol = math.sqrt(n) * 6e-8 * float(cp.sum(cp.abs(x.astype(cp.float64))))
        err = abs(got - want)
        ok = math.isfinite(got) and err <= tol
        if not ok:
            ctx.fail(f"ex04 n={n}: got {got!r}, want {want!r} (err {err:.3g} > tol {tol:.3g})")

        def refill():
            out.fill(cp.nan)
        r = ctx.timed("ex04 reference", (n,), lambda: sol.solve(x, out), 4 * n, setup=refill, ok=ok,
                      note=f"|err| {err:.3g} (tol {tol:.3g})")
        ratio = r.gbs / lib.gbs
        r.anchor = f"{ratio:.3f}x cupy.sum"
        r.bar = (ratio >= 1.0, ">= 1.00x cupy.sum") if i == 0 else None
        ctx.report(r)
        del x, out
    del src
    free_memory()


def _scan_inputs(ctx, n, tname):
    """x and a poisoned y for ex05 at length n and type tname ("int32" or "float32")."""
    if tname == "int32":
        return (ctx.rng.randint(-3, 5, size=n, dtype=cp.int32), cp.full(n, poison_int32(), dtype=cp.int32))
    x = (ctx.rng.standard_normal(n, dtype=cp.float32) + 1).astype(cp.float32)
    return x, cp.full(n, cp.nan, dtype=cp.float32)


def _scan_check(solve, x, y, tname):
    """(ok, note): y = solve's scan of x, called twice (the second call reuses the scratch), is
    exactly the prefix sum (int32) or within the spec's float32 tolerance."""
    solve(x, y)
    solve(x, y)
    cp.cuda.get_current_stream().synchronize()
    if tname == "int32":
        return bool(cp.array_equal(y.astype(cp.int64), cp.cumsum(x.astype(cp.int64)))), ""
    n = x.size
    want = cp.cumsum(x.astype(cp.float64))
    atol = 4 * F32_EPS * math.sqrt(n) * float(cp.abs(x.astype(cp.float64)).sum()) / n
    worst = float((cp.abs(y.astype(cp.float64) - want) / (atol + 1e-4 * cp.abs(want))).max())
    return worst <= 1.0, f"max err / tolerance {worst:.3f}"


SCAN_EDGE_SIZES = [1, 5, 4095, 4096, 4097, 70001, 2**20 + 3, 3 * 2**20 - 1]
TRANSPOSE_EDGE_SHAPES = [(2, 2), (7, 9), (129, 65), (300, 1000), (1, 50), (50, 1), (8191, 33), (1000, 8193)]


def _scan_variant_check(ctx, x, y, tname):
    """The cases a scan variant gets wrong: the edge sizes, a misaligned view, and x itself."""
    def check(cand):
        bad = []
        for m in SCAN_EDGE_SIZES:
            xs, ys = _scan_inputs(ctx, m, tname)
            if not _scan_check(cand.solve, xs, ys, tname)[0]:
                bad.append(f"n={m}")
        xs, ys = _scan_inputs(ctx, 70002, tname)
        if not _scan_check(cand.solve, xs[1:], ys[1:], tname)[0]:
            bad.append("n=70001 misaligned")
        if not _scan_check(cand.solve, x, y, tname)[0]:
            bad.append(f"n={x.size}")
        return bad
    return check


def section_ex05(ctx: Context):
    print("\nex05_scan")
    sol = load_solution("ex05_scan")
    for n, tname in ctx.shapes["ex05"]:
        dtype = cp.int32 if tname == "int32" else cp.float32
        x, y = _scan_inputs(ctx, n, tname)
        ok, note = _scan_check(sol.solve, x, y, tname)
        if not ok:
            ctx.fail(f"ex05 n={n} {tname}: result outside the spec's tolerance ({note or 'not exact'})")
        shape = (n, tname)
        ref = ctx.timed("ex05 reference", shape, lambda: sol.solve(x, y), 8 * n, ok=ok, note=note)
        anchor = ctx.report(ctx.timed("cupy.cumsum(x, dtype=x.dtype)", shape,
                                      lambda: cp.cumsum(x, dtype=dtype), 8 * n))
        cr = ref.gbs / ctx.copy_gbs
        ref.anchor = f"{cr:.3f}x copy; {anchor.ms / ref.ms:.3f}x cupy.cumsum"
        if tname == "int32":
            ref.bar = (cr >= 0.85 and ref.ms <= anchor.ms, ">= 0.85x copy, >= cupy.cumsum")
        ctx.report(ref)
        ctx.tune_variants("ex05", shape, sol,
                          [{"_WS_CONFIG": c} for c in ((8, 8, 2, 1), (8, 8, 2, 2), (16, 4, 2, 2), (8, 8, 3, 2))]
                          + [{"_WS_CONFIG": None, "_CONFIG": c} for c in ((128, 8), (256, 4), (256, 8))],
                          lambda: sol.solve(x, y), 8 * n, check=_scan_variant_check(ctx, x, y, tname))
        del x, y
        free_memory()


def section_ex06(ctx: Context):
    print("\nex06_histogram")
    sol = load_solution("ex06_histogram")
    for n, kind in ctx.shapes["ex06"]:
        x = cp.empty(n, dtype=cp.uint8)
        chunk = 2**26
        for s in range(0, n, chunk):        # in chunks: the random temporaries are 4-8 bytes per byte
            m = min(chunk, n - s)
            v = ctx.rng.randint(0, 256, size=m, dtype=cp.int32)
            if kind == "skewed":
                v = cp.where(ctx.rng.random_sample(m) < 0.9, 7, v)
            x[s:s + m] = v.astype(cp.uint8)
            del v
        bins = cp.full(256, np.uint32(0xA5A5A5A5), dtype=cp.uint32)
        sol.solve(x, bins)
        sol.solve(x, bins)         # twice: the second call starts from the scratch the first left
        cp.cuda.get_current_stream().synchronize()
        ok = bool(cp.array_equal(bins.astype(cp.int64), cp.bincount(x, minlength=256)))
        if not ok:
            ctx.fail(f"ex06 n={n} {kind}: counts differ from cupy.bincount")
        shape = (n, kind)
        nbytes = n + 1024
        ref = ctx.timed("ex06 reference", shape, lambda: sol.solve(x, bins), nbytes, ok=ok)
        anchor = ctx.report(ctx.timed("cupy.bincount(x, minlength=256)", shape,
                                      lambda: cp.bincount(x, minlength=256), nbytes))
        cr = ref.gbs / ctx.copy_gbs
        ref.anchor = f"{cr:.3f}x copy (read); {anchor.ms / ref.ms:.2f}x cupy.bincount"
        need = 0.75 if kind == "uniform" else 0.50
        ref.bar = (cr >= need, f">= {need:.2f}x copy ({kind})")
        ctx.report(ref)
        ctx.tune_variants("ex06", shape, sol, [{"_BLOCKS_PER_SM": b} for b in (2, 3, 4)],
                          lambda: sol.solve(x, bins), nbytes)
        del x, bins
        free_memory()


def section_ex07(ctx: Context):
    print("\nex07_softmax")
    naive_rows = {}
    for shape in ctx.shapes["ex07"]:
        x = ctx.rng.standard_normal(shape, dtype=cp.float32)
        y = cp.empty_like(x)
        naive_rows[shape] = ctx.report(ctx.timed("naive cupy softmax", shape, lambda: naive_softmax(x, y),
                                                 8 * x.size))
        del x, y
    sol = load_solution("ex07_softmax")
    shapes = list(ctx.shapes["ex07"]) + (list(ctx.shapes["ex07_extra"]) if ctx.extra else [])
    for shape in shapes:
        if shape in naive_rows:
            x = ctx.rng.standard_normal(shape, dtype=cp.float32)
        else:
            x = ctx.rng.uniform(-1e4, 1e4, size=shape, dtype=cp.float32) if shape[1] < 2**16 else \
                ctx.rng.standard_normal(shape, dtype=cp.float32) * 10
        y = cp.full(shape, cp.nan, dtype=cp.float32)
        sol.solve(x, y)
        cp.cuda.get_current_stream().synchronize()
        want = softmax64(x)
        bad = ~(cp.abs(y.astype(cp.float64) - want) <= 1e-7 + 1e-4 * cp.abs(want))
        nbad = int(bad.sum())
        ok = nbad == 0
        if not ok:
            ctx.fail(f"ex07 {shape}: {nbad} elements outside rtol=1e-4, atol=1e-7")
        del want, bad
        r = ctx.timed("ex07 reference", shape, lambda: sol.solve(x, y), 8 * x.size, ok=ok)
        cr = r.gbs / ctx.copy_gbs
        if shape in naive_rows:
            same = ctx.same_copy.get(shape[0] * shape[1])
            same_text = f"; {r.gbs / same.gbs:.3f}x same-size copy" if same else ""
            r.anchor = f"{cr:.3f}x copy{same_text}; {naive_rows[shape].ms / r.ms:.2f}x faster than naive"
            r.bar = (bool(same) and r.gbs / same.gbs >= 0.97, ">= 0.97x same-size copy")
        else:
            r.anchor = f"{cr:.3f}x copy"
        ctx.report(r)
        del x, y
    free_memory()


def section_ex08(ctx: Context):
    print("\nex08_layernorm")
    sol = load_solution("ex08_layernorm")
    eps = np.float32(1e-5)
    for i, shape in enumerate(ctx.shapes["ex08"]):
        rows, cols = shape
        x = ctx.rng.standard_normal(shape, dtype=cp.float32)
        gamma = (ctx.rng.standard_normal(cols, dtype=cp.float32) * 0.5 + 1).astype(cp.float32)
        beta = ctx.rng.standard_normal(cols, dtype=cp.float32)
        y = cp.full(shape, cp.nan, dtype=cp.float32)
        sol.solve(x, gamma, beta, y, eps)
        cp.cuda.get_current_stream().synchronize()
        want = layernorm64(x, gamma, beta, float(eps))
        nbad = int((~(cp.abs(y.astype(cp.float64) - want) <= 5e-4 + 1e-4 * cp.abs(want))).sum())
        ok = nbad == 0
        if not ok:
            ctx.fail(f"ex08 {shape}: {nbad} elements outside rtol=1e-4, atol=5e-4")
        del want
        nbytes = 8 * rows * cols
        ref = ctx.timed("ex08 reference", shape, lambda: sol.solve(x, gamma, beta, y, eps), nbytes, ok=ok)
        anchor = ctx.report(ctx.timed("naive cupy layernorm", shape,
                                      lambda: naive_layernorm(x, gamma, beta, y, eps), nbytes))
        cr = ref.gbs / ctx.copy_gbs
        ref.anchor = f"{cr:.3f}x copy; {anchor.ms / ref.ms:.2f}x faster than naive"
        if i == 0:
            ref.bar = (cr >= 0.88, ">= 0.88x copy")
        ctx.report(ref)
        ctx.tune_variants("ex08", shape, sol,
                          [{"_BLOCK_N": {4: 4, 1: None}, "_BLOCK_BLOCKS_PER_SM": 256},
                           {"_BLOCK_N": {4: 8, 1: None}, "_BLOCK_BLOCKS_PER_SM": 256},
                           {"_BLOCK_N": {4: 4, 1: None}, "_BLOCK_BLOCKS_PER_SM": 8},
                           {"_WARP_BLOCKS_PER_SM": 8}],
                          lambda: sol.solve(x, gamma, beta, y, eps), nbytes, reset=sol._plans.clear)
        del x, gamma, beta, y
        free_memory()


SECTIONS = {
    "ex01_vector_add": section_ex01, "ex02_saxpy": section_ex02, "ex03_transpose": section_ex03,
    "ex04_reduction": section_ex04, "ex05_scan": section_ex05, "ex06_histogram": section_ex06,
    "ex07_softmax": section_ex07, "ex08_layernorm": section_ex08,
}


def resolve(names):
    out = []
    for q in names:
        matches = [e for e in EXERCISES if e == q or e.startswith(q + "_") or e[:4] == q or e[2:4] == q.zfill(2)]
        if len(matches) != 1:
            raise SystemExit(f"--only: {q!r} matches {matches or 'no exercise'}; use names from {EXERCISES}")
        out.append(matches[0])
    return [e for e in EXERCISES if e in out]


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", metavar="EXERCISE", default=EXERCISES,
                    help="exercises to measure (names, ex02 or 2); default: all")
    ap.add_argument("--extra", action="store_true", help="also time informational ex07 shapes")
    ap.add_argument("--tune", action="store_true", help="also time the variants of the references' knobs")
    ap.add_argument("--small", action="store_true", help="tiny sizes: a smoke test of this script, not a measurement")
    ap.add_argument("--max-reps", type=int, default=MAX_REPS)
    args = ap.parse_args(argv)
    exercises = resolve(args.only)

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    drv = cp.cuda.runtime.driverGetVersion()
    rt = cp.cuda.runtime.runtimeGetVersion()
    print(f"date     : {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"device   : {name} (sm_{props['major']}{props['minor']}, {props['multiProcessorCount']} SMs, "
          f"L2 {props['l2CacheSize'] / 2**20:.0f} MiB, {props['totalGlobalMem'] / 2**30:.0f} GiB)")
    print(f"driver   : CUDA {drv // 1000}.{drv % 1000 // 10} (runtime {rt // 1000}.{rt % 1000 // 10})")
    print(f"cupy     : {cp.__version__}, numpy {np.__version__}, python {platform.python_version()}")
    print(f"measuring: {', '.join(exercises)}{' (SMALL smoke-test sizes)' if args.small else ''}")
    sys.stdout.flush()

    bench = Bencher(max_reps=args.max_reps, min_reps=min(MIN_REPS, args.max_reps),
                    flush_bytes=2**20 if args.small else FLUSH_BYTES)
    ctx = Context(bench, SMALL if args.small else SHAPES, args.tune, args.extra)
    section_copy(ctx, want_same_size="ex07_softmax" in exercises)
    for ex in exercises:
        SECTIONS[ex](ctx)

    # ---- table
    print()
    print(f"copy bandwidth (anchor): {ctx.copy_gbs:.0f} GB/s; ideal times below use it.")
    print()
    print("| name | shape | median ms | IQR ms | GB/s | % of copy BW | ratio to anchor | bar | pass |")
    print("|---|---|---:|---:|---:|---:|---|---|---|")
    for r in ctx.rows:
        bar, verdict = "", ""
        if r.bar is not None:
            bar = r.bar[1]
            verdict = "PASS" if (r.bar[0] and r.ok) else "FAIL"
        elif not r.ok:
            verdict = "FAIL (wrong)"
        elif r.name.startswith("ex"):
            verdict = "info"
        print(f"| {r.name} | {fmt_shape(r.shape)} | {r.ms:.4f} | {r.iqr:.4f} | {r.gbs:.0f} | "
              f"{100 * r.gbs / ctx.copy_gbs:.1f} | {r.anchor} | {bar} | {verdict} |")
    if ctx.failures:
        print("\ncorrectness failures:")
        for f in ctx.failures:
            print("  " + f)
    return 1 if ctx.failures or any(r.bar is not None and not (r.bar[0] and r.ok) for r in ctx.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
