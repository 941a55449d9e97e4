#!/usr/bin/env python3
"""Instruction-throughput ceilings of the GEMM ladder's inner loops, side by side with cuBLAS.

    PYTHONPATH=. python3 benchmarks/instr_ceiling.py            # ~10 s on an H200
    PYTHONPATH=. python3 benchmarks/instr_ceiling.py --reps 20

Issue 17 asks ex11 (register-tiled SGEMM, FFMA) for >= 0.85x cuBLAS fp32 and ex12 (mma.sync
m16n8k16, fp32 accumulate) for >= 0.65x cuBLAS fp16. A kernel cannot beat the throughput of the
instruction its inner loop is made of, so this script measures that throughput on the GPU itself,
with no memory traffic at all:

- ``ffma``: every thread runs CHAINS independent chains of ``fmaf`` (2 FLOP each) in a loop;
- ``mma.sync f16/f32`` and ``bf16/f32``: every warp runs CHAINS independent
  ``mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32`` (4096 FLOP each) on
  fragments held in registers (ex12's instruction);
- ``mma.sync f16/f16``: the same shape with fp16 accumulators (ex12's failing fixture);

then cuBLAS (``cupy.matmul``) at 8192^3 in fp32 and fp16 in the same process. Each kernel runs
WAVES full waves of 256-thread blocks (as many per SM as its registers allow, computed from the
kernel's register count: no partial last wave); the time is the median of ``--reps`` single launches
between CUDA events (grader.device.median_event_ms), after 3 warm-up launches. Prints TFLOP/s,
the SM clock NVML reports right after each measurement (a power-limited clock lowers every
ceiling), and the ratios the issue's bars are written in: cuBLAS / ceiling is the best a
hand-written kernel made of that instruction can hope to reach, as a fraction of cuBLAS.

Source of the FLOP counts: one FFMA = 2 FLOP; one m16n8k16 MMA = 2 * 16 * 8 * 16 = 4096 FLOP
(PTX ISA, "Matrix shape" of mma.sync). Needs a GPU with compute capability >= 8.0.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grader.device import clock_state, median_event_ms  # noqa: E402

CHAINS = 8          # independent accumulators per thread (FFMA) or per warp (MMA): hides latency
ITERS = 1024        # loop trips per thread
THREADS = 256
WAVES = 4           # full waves of resident blocks per launch (no partial last wave)

_SOURCE = r"""
extern "C" __global__ void ffma_loop(float* out, float x, float y, int iters)
{
    float acc[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c] = threadIdx.x + c;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) acc[c] = fmaf(acc[c], x, y);
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += acc[c];
    if (s == 12345.678f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;   // keeps the loop alive
}

#define MMA_LOOP(NAME, ATYPE, CTYPE, NC)                                                         \
extern "C" __global__ void NAME(float* out, unsigned seed, int iters)                            \
{                                                                                                \
    unsigned a[4], b[2];                                                                         \
    for (int r = 0; r < 4; ++r) a[r] = seed * (threadIdx.x + r) & 0x3c003c00u;                   \
    for (int r = 0; r < 2; ++r) b[r] = seed * (threadIdx.x + 7 * r) & 0x3c003c00u;               \
    float acc[CHAINS][NC];                                                                       \
    for (int c = 0; c < CHAINS; ++c)                                                             \
        for (int r = 0; r < NC; ++r) acc[c][r] = 0.f;                                            \
    for (int i = 0; i < iters; ++i) {                                                            \
        _Pragma("unroll")                                                                        \
        for (int c = 0; c < CHAINS; ++c) MMA_STEP_##CTYPE(ATYPE, acc[c], a, b);                  \
    }                                                                                            \
    float s = 0.f;                                                                               \
    for (int c = 0; c < CHAINS; ++c)                                                             \
        for (int r = 0; r < NC; ++r) s += acc[c][r];                                             \
    if (s == 12345.678f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;                         \
}

#define MMA_STEP_f32(ATYPE, d, a, b)                                                             \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." #ATYPE "." #ATYPE ".f32 "             \
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                         \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))

// fp16 accumulators: two 32-bit registers of packed halves, kept in float-typed storage bits
#define MMA_STEP_f16(ATYPE, d, a, b)                                                             \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "                            \
                 "{%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"                                     \
                 : "+r"(*reinterpret_cast<unsigned*>(&d[0])), "+r"(*reinterpret_cast<unsigned*>(&d[1])) \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))

MMA_LOOP(mma_f16_f32, f16, f32, 4)
MMA_LOOP(mma_bf16_f32, bf16, f32, 4)
MMA_LOOP(mma_f16_f16, f16, f16, 2)
"""


def _tflops(flop: float, ms: float) -> float:
    return flop / ms / 1e9


def _resident_blocks(fn) -> int:
    """Blocks of THREADS threads one SM holds, limited by registers (allocated per warp in units of
    256) and by 2048 threads per SM (compute capability 8.0-9.0, CUDA C++ Programming Guide,
    "Compute Capabilities" table)."""
    regs_per_warp = -(-int(fn.attributes["num_regs"]) * 32 // 256) * 256
    warps_by_regs = 65536 // regs_per_warp
    return max(1, min(warps_by_regs // (THREADS // 32), 2048 // THREADS))


def _clock_mhz() -> str:
    state = clock_state()
    return "?" if state is None else str(state.sm_mhz)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10, help="timed launches per kernel (median)")
    args = ap.parse_args()

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    cc = dev.compute_capability
    if int(cc) < 80:
        print(f"instr_ceiling: compute capability {cc} has no m16n8k16 mma.sync (needs >= 8.0)")
        return 2
    mod = cp.RawModule(code=_SOURCE, options=(f"-DCHAINS={CHAINS}", "-std=c++17"))
    out = cp.zeros(sms * (2048 // THREADS) * WAVES * THREADS, cp.float32)
    block = (THREADS,)

    rows = []
    for name, label in (("ffma_loop", "ffma (fp32 CUDA cores)"),
                        ("mma_f16_f32", "mma.sync m16n8k16 f16 in, f32 acc"),
                        ("mma_bf16_f32", "mma.sync m16n8k16 bf16 in, f32 acc"),
                        ("mma_f16_f16", "mma.sync m16n8k16 f16 in, f16 acc")):
        fn = mod.get_function(name)
        per_sm = _resident_blocks(fn)
        grid = (sms * per_sm * WAVES,)
        threads = grid[0] * THREADS
        if name == "ffma_loop":
            call_args = (out, np.float32(0.999), np.float32(1e-3), np.int32(ITERS))
            flop = 2.0 * threads * CHAINS * ITERS
        else:
            call_args = (out, np.uint32(0x9E3779B1), np.int32(ITERS))
            flop = 4096.0 * (threads // 32) * CHAINS * ITERS
        ms = median_event_ms(lambda: fn(grid, block, call_args), args.reps, warmup=3)
        rows.append((f"{label} [{fn.attributes['num_regs']} regs, {per_sm} blocks/SM]", _tflops(flop, ms), ms, _clock_mhz()))

    n = 8192
    for dtype, label in ((cp.float32, "cuBLAS fp32 8192^3 (cupy.matmul)"),
                         (cp.float16, "cuBLAS fp16 8192^3 (cupy.matmul)")):
        a = cp.random.standard_normal((n, n), dtype=cp.float32).astype(dtype)
        b = cp.random.standard_normal((n, n), dtype=cp.float32).astype(dtype)
        c = cp.empty((n, n), dtype)
        ms = median_event_ms(lambda: cp.matmul(a, b, out=c), args.reps, warmup=3)
        rows.append((label, _tflops(2.0 * n ** 3, ms), ms, _clock_mhz()))


    print(f"{dev.id}: compute capability sm_{cc}, {sms} SMs; {CHAINS} chains, {ITERS} iterations, "
          f"{WAVES} waves of {THREADS}-thread blocks; median of {args.reps}")
    print(f"{'what':58s} {'TFLOP/s':>9s} {'ms':>9s} {'SM MHz':>7s}")
    for label, tf, ms, mhz in rows:
        print(f"{label:58s} {tf:9.1f} {ms:9.3f} {mhz:>7s}")
    ffma_peak, mma_peak, blas32, blas16 = rows[0][1], rows[1][1], rows[4][1], rows[5][1]
    print(f"cuBLAS fp32 / FFMA ceiling: {blas32 / ffma_peak:.3f}; FFMA ceiling / cuBLAS fp32: "
          f"{ffma_peak / blas32:.3f} (the most an FFMA kernel can reach, in ex11's unit)")
    print(f"cuBLAS fp16 / mma.sync ceiling: {blas16 / mma_peak:.3f}; mma.sync ceiling / cuBLAS fp16: "
          f"{mma_peak / blas16:.3f} (the most an mma.sync kernel can reach, in ex12's unit)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
