"""What the kernel tracer (grader.sandbox.kernel_trace) costs, and what it sees.

    python3 benchmarks/kernel_trace_overhead.py [--reps 200] [--rounds 3]

Runs the same child process with and without the tracer injected, alternately (``--rounds`` each),
and prints per configuration the median CUDA-event time of one call (a 128 MiB copy kernel, a
launch-bound empty kernel, 12 back to back launches of the copy as in one timed round) and, when
traced, the time of one ``grader_trace_flush`` after a round of 12 calls. Then one traced child runs
a few library calls (CuPy reductions and copies, torch, Triton where installed) and prints the
kernel names the tracer wrote. Needs a GPU and CUPTI.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r'''
import ctypes, json, os, sys, time
import cupy, numpy as np
reps = int(sys.argv[1])
src = r"""
extern "C" __global__ void copy4(const float4* a, float4* b, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) b[i] = a[i];
}
extern "C" __global__ void empty() {}
"""
m = cupy.RawModule(code=src)
copy4, empty = m.get_function("copy4"), m.get_function("empty")
n = (128 << 20) // 8 // 16
a, b = cupy.ones(n * 4, cupy.float32), cupy.empty(n * 4, cupy.float32)
flush_buf = cupy.empty(120 << 20, cupy.uint8)
lib = os.environ.get("CUDA_INJECTION64_PATH")
flush = ctypes.CDLL(lib).grader_trace_flush if lib else None
def timed(launch, k=1):
    out = []
    for _ in range(reps):
        flush_buf.fill(0)
        e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
        e0.record()
        for _ in range(k):
            launch()
        e1.record(); e1.synchronize()
        out.append(cupy.cuda.get_elapsed_time(e0, e1) / k)
    return sorted(out)[len(out) // 2]
cp = lambda: copy4((1056,), (256,), (a, b, np.int64(n)))
res = {"copy_ms": timed(cp), "empty_ms": timed(lambda: empty((1,), (1,), ())), "round12_ms": timed(cp, 12)}
if flush:
    f = []
    for _ in range(reps):
        for _ in range(12):
            cp()
        cupy.cuda.runtime.deviceSynchronize()
        t = time.perf_counter(); flush(); f.append((time.perf_counter() - t) * 1e3)
    res["flush_ms"] = sorted(f)[len(f) // 2]
print(json.dumps(res))
'''

LIBRARIES = r'''
import ctypes, os
import cupy
x = cupy.arange(1 << 20, dtype=cupy.float32)
x.sum(); cupy.cumsum(x)
h = cupy.zeros((64, 72), cupy.float16); h[:, :70] = cupy.ones((64, 70), cupy.float16); h.fill(0); h.fill(1)
try:
    import torch
    t = torch.as_tensor(x, device="cuda"); torch.softmax(t.view(1024, 1024), dim=1); torch.cuda.synchronize()
except Exception as exc:
    print("torch:", exc)
try:
    import torch, triton, triton.language as tl
    @triton.jit
    def triton_add(a, c, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(c + i, tl.load(a + i, mask=i < n) + 1, mask=i < n)
    t = torch.as_tensor(x, device="cuda"); triton_add[(1024,)](t, t, t.numel(), BLOCK=1024); torch.cuda.synchronize()
except Exception as exc:
    print("triton:", exc)
cupy.cuda.runtime.deviceSynchronize()
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).grader_trace_flush()
'''


def run_child(code: str, args: list[str], tracer, trace) -> str:
    env = dict(os.environ)
    fds: tuple[int, ...] = ()
    if tracer is not None:
        env.update(trace.env(tracer))
        fds = trace.pass_fds
    r = subprocess.run([sys.executable, "-c", code, *args], env=env, pass_fds=fds, capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"child failed: {r.stderr[-2000:]}")
    return r.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    from grader.sandbox import kernel_trace as kt
    from grader.sandbox.supervisor import kernel_cache_root
    tracer = kt.build(kernel_cache_root().parent)
    if isinstance(tracer, str):
        raise SystemExit(f"kernel tracer unavailable: {tracer}")
    rows: dict[str, list[dict]] = {"untraced": [], "traced": []}
    for _ in range(a.rounds):
        for name in rows:
            trace = kt.TraceFile()
            try:
                out = run_child(CHILD, [str(a.reps)], tracer if name == "traced" else None, trace)
                rows[name].append(json.loads(out.strip().splitlines()[-1]))
                if name == "traced":
                    names = trace.names()
                    rows[name][-1]["records"] = len(names)
                    rows[name][-1]["status"] = trace.status or trace.error
            finally:
                trace.close()
    print(f"{'configuration':10s} {'copy 128MiB ms':>15s} {'empty ms':>10s} {'12 copies, ms/call':>19s} {'flush ms':>9s}")
    med = {}
    for name, rs in rows.items():
        med[name] = {k: statistics.median(r[k] for r in rs) for k in ("copy_ms", "empty_ms", "round12_ms")}
        fl = statistics.median(r["flush_ms"] for r in rs) if "flush_ms" in rs[0] else float("nan")
        print(f"{name:10s} {med[name]['copy_ms']:15.4f} {med[name]['empty_ms']:10.4f} {med[name]['round12_ms']:19.4f} "
              f"{fl:9.4f}  {rs[0].get('status', '')} {rs[0].get('records', '')}")
    for k in ("copy_ms", "empty_ms", "round12_ms"):
        print(f"traced / untraced, {k}: {med['traced'][k] / med['untraced'][k]:.3f}")
    trace = kt.TraceFile()
    try:
        out = run_child(LIBRARIES, [], tracer, trace)
        print(out.strip())
        print("kernels the tracer saw for library calls:", sorted(set(trace.names())))
    finally:
        trace.close()


if __name__ == "__main__":
    main()
