#!/usr/bin/env python3
"""ex12's reference at 8192^3 under sustained load, beside cuBLAS, with the SM clock and NVML's
clock-throttle reasons after each trial.

    PYTHONPATH=. python3 benchmarks/clock_under_load.py       # ~5 s on an H200

Why: on 2026-12-04 ex12's reference took either 2.24-2.27 ms or 2.48-2.61 ms at 8192^3 from one
bench_gemm.py run to the next while cuBLAS fp16 stayed at 1.44-1.50 ms (benchmarks/RESULTS.md,
thirtieth session). Each trial draws fresh float16 inputs (8192 x 8192, normal), times 20 calls of
the reference (CUDA events, after 3 warm-up calls; median/min/max, ms), 20 more right after ("again",
median), then 10 back-to-back cuBLAS calls (``cupy.matmul``; mean per call, ms), and prints
``nvidia-smi``'s clocks.sm (MHz), power.draw and power.limit (W), temperature (C) and the
clocks_throttle_reasons (bit 0x4 = SW power cap: NVML's clocksThrottleReasonSwPowerCap). No L2 flush
between calls: 3 x 128 MiB of operands do not fit the 60 MiB L2 anyway.
"""
from __future__ import annotations

import statistics
import subprocess
from pathlib import Path

import cupy as cp

from benchmarks.solution_module import load_solution_module

N = 8192
TRIALS = 5
SMI_QUERIES = ("clocks.sm,power.draw,power.limit,temperature.gpu",
               "clocks_throttle_reasons.active,clocks_throttle_reasons.sw_power_cap,"
               "clocks_throttle_reasons.sw_thermal_slowdown,clocks_throttle_reasons.hw_slowdown")


def smi() -> str:
    """nvidia-smi's answer to SMI_QUERIES (or its error text), joined by ' | '."""
    out = []
    for fields in SMI_QUERIES:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"], capture_output=True, text=True)
        out.append((r.stdout or r.stderr).strip())
    return " | ".join(out)


def time_calls(solve, a, b, c, reps: int = 20) -> tuple[float, float, float]:
    """(median, min, max) ms of ``reps`` single calls of ``solve(a, b, c)`` between CUDA events."""
    for _ in range(3):
        solve(a, b, c)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        solve(a, b, c)
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times), min(times), max(times)


def main() -> None:
    sol = load_solution_module(Path(__file__).resolve().parents[1] / "solutions/ex12_gemm_tensorcore/solution.py", "ex12ref")
    for trial in range(TRIALS):
        a = cp.random.standard_normal((N, N), dtype=cp.float32).astype(cp.float16)
        b = cp.random.standard_normal((N, N), dtype=cp.float32).astype(cp.float16)
        c = cp.empty((N, N), dtype=cp.float32)
        first, again = time_calls(sol.solve, a, b, c), time_calls(sol.solve, a, b, c)
        ab = cp.matmul(a, b)
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(10):
            cp.matmul(a, b, out=ab)
        end.record()
        end.synchronize()
        cublas = cp.cuda.get_elapsed_time(start, end) / 10
        print(f"trial {trial}: reference median/min/max {first[0]:.3f}/{first[1]:.3f}/{first[2]:.3f} ms, "
              f"again {again[0]:.3f} ms, cuBLAS {cublas:.3f} ms; smi {smi()}", flush=True)


if __name__ == "__main__":
    main()
