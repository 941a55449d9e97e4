"""GpuDrain's wait right after another process's reply, with and without work left on the GPU.

For issue 10's NOISE_MS question (grader.sandbox.watch.GpuDrain): how long a wait is when the other context left nothing on the GPU (the false
alarm the forgiveness exists for), and from how much left-over work on it is seen.

    python3 benchmarks/drain_probe.py [--reps 40] [--left-us 0,20,50,100,200,400]

A child process with its own CUDA context plays the worker: per request it runs one short kernel,
synchronises, then (the "left" case) launches a kernel that spins for the given microseconds
WITHOUT waiting for it, and replies. The parent times GpuDrain.wait() from the reply on, as
grader.timing's on_reply hook does (the child is not stopped here: nothing else runs in it). Prints
per left-over time the median and the 90th percentile of the raw wait (before the NOISE_MS cut) and
how often the grader would charge it (wait >= NOISE_MS). Needs a GPU; one process pair, ~10 s.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r'''
import sys, cupy, numpy as np
src = r"""
extern "C" __global__ void tick(int* x) { x[0] += 1; }
extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
"""
m = cupy.RawModule(code=src)
tick, spin = m.get_function("tick"), m.get_function("spin")
buf = cupy.zeros(1, cupy.int32)
clock_khz = cupy.cuda.runtime.getDeviceProperties(0)["clockRate"]
for line in sys.stdin:
    left_us = float(line)
    tick((1,), (1,), (buf,))
    cupy.cuda.runtime.deviceSynchronize()
    if left_us > 0:
        spin((1,), (1,), (np.int64(left_us * clock_khz / 1e3),))   # not waited for
    sys.stdout.write("done\n")
    sys.stdout.flush()
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40, help="requests per left-over time (default 40)")
    ap.add_argument("--left-us", default="0,20,50,100,200,400",
                    help="microseconds of GPU work the child leaves after its reply (comma-separated)")
    a = ap.parse_args()
    import cupy
    from grader.sandbox.watch import GpuDrain

    drain = GpuDrain()
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             bufsize=1)
    try:
        assert child.stdin is not None and child.stdout is not None
        for _ in range(5):   # warm-up: the child's module load and first launches
            child.stdin.write("0\n")
            child.stdout.readline()
        print(f"{'left (us)':>10} {'median wait (us)':>17} {'p90 (us)':>9} {'charged':>8}   (NOISE_MS = "
              f"{GpuDrain.NOISE_MS} ms, QUIET_MS = {GpuDrain.QUIET_MS} ms)")
        for left in (float(x) for x in a.left_us.split(",")):
            waits = []
            for _ in range(a.reps):
                child.stdin.write(f"{left}\n")
                child.stdout.readline()
                cupy.cuda.runtime.deviceSynchronize()
                t0 = time.perf_counter()
                probe = drain._probe_ms()   # noqa: SLF001 - the raw first probe, as wait() starts
                while probe >= GpuDrain.QUIET_MS:
                    probe = drain._probe_ms()   # noqa: SLF001
                waits.append((time.perf_counter() - t0) * 1e6)
                time.sleep(0.002)
            waits.sort()
            charged = sum(w >= GpuDrain.NOISE_MS * 1e3 for w in waits)
            print(f"{left:>10g} {statistics.median(waits):>17.1f} {waits[int(0.9 * (len(waits) - 1))]:>9.1f} "
                  f"{charged:>4}/{len(waits)}")
    finally:
        child.kill()
        child.wait()


if __name__ == "__main__":
    main()
