"""What one ``grader.kernel.tensor_map`` call costs on the host, and what a TMA solution's call
costs when its inputs arrive at new addresses (as they do in the grader: a fresh arena per round).

    python3 benchmarks/tensor_map_cost.py [--reps 200]

Prints microseconds per call (median of ``--reps``) for:

- ``tensor_map`` as solutions call it (its layout cached: the address is all that changes);
- the same with the layout cache emptied before each call (validation and conversion included);
- cuda-python's binding alone, when installed, with the layout prebuilt;
- the bare driver call ``cuTensorMapEncodeTiled`` through ctypes with its argument arrays built
  once (the floor of any Python encoder);
- ex15's reference ``solve`` on 64 x 7168 x 8192 (a 0.031 ms kernel): host time per call and the
  GPU time per call between CUDA events, 12 input sets back to back: with its template maps pointed
  at the inputs by the kernel (``_DEVICE_MAPS``, the reference's default), and with maps encoded on
  the host, cached (same addresses each round) or the cache emptied before each call (new addresses,
  as in the grader).
Needs a GPU.
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
from pathlib import Path

import cupy as cp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))


def per_call_us(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    from grader import tma

    a = cp.zeros((8192, 8192), dtype=cp.uint8)
    call = lambda: tma.tensor_map(a, (128, 128), swizzle=128)  # noqa: E731
    print(f"tensor_map: {per_call_us(call, args.reps):.1f} us")
    print(f"tensor_map with its layout cache emptied first: "
          f"{per_call_us(lambda: (tma._layout.cache_clear(), call()), args.reps):.1f} us")
    layout = tma._layout((8192, 8192), a.dtype, None, (128, 128), 128, None, 128, False)
    binding = tma._cuda_python_encoder()
    if binding is not None:
        out, want = call(), call().tobytes()
        try:
            us = per_call_us(lambda: binding(out.ctypes.data, layout, a.data.ptr), args.reps)
            print(f"cuda-python's cuTensorMapEncodeTiled, the layout prebuilt: {us:.1f} us; its descriptor "
                  f"{'equals' if out.tobytes() == want else 'DIFFERS FROM'} the ctypes one")
        except Exception as exc:  # noqa: BLE001 - report and go on: the binding is only the fallback
            print(f"cuda-python's cuTensorMapEncodeTiled FAILED: {type(exc).__name__}: {exc}")
    lib = tma._libcuda()
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    buf = (ctypes.c_uint8 * 256)()
    ptr = ctypes.addressof(buf) + (-ctypes.addressof(buf)) % 128
    dims, strides, boxes, steps = (u64 * 2)(8192, 8192), (u64 * 1)(8192), (u32 * 2)(128, 128), (u32 * 2)(1, 1)
    bare = lambda: lib.cuTensorMapEncodeTiled(ctypes.c_void_p(ptr), 0, 2, ctypes.c_void_p(a.data.ptr), dims,  # noqa: E731
                                              strides, boxes, steps, 0, 3, 2, 0)
    assert bare() == 0
    print(f"cuTensorMapEncodeTiled alone (ctypes, arrays built once): {per_call_us(bare, args.reps):.1f} us")

    import verify_ex15 as v
    M, N, K = 64, 7168, 8192
    rng = cp.random.default_rng(1)
    sets = []
    for _ in range(12):
        x, sx, y, sy = v.inputs(M, N, K, "normal", rng)
        sets.append((x, sx, y, sy, cp.empty((M, N), cp.uint16)))
    ev = [cp.cuda.Event() for _ in range(13)]
    for s in sets:
        v.sol.solve(*s)
    cp.cuda.Device().synchronize()
    for name, device_maps, clear in (("template maps retargeted by the kernel", True, False),
                                     ("host maps cached", False, False),
                                     ("host maps, cache emptied before each call", False, True)):
        v.sol._DEVICE_MAPS = device_maps
        host, gpu = [], []
        for _ in range(10):
            ev[0].record()
            t0 = time.perf_counter()
            for k, s in enumerate(sets):
                if clear:
                    v.sol._maps.clear()
                v.sol.solve(*s)
                ev[k + 1].record()
            host.append((time.perf_counter() - t0) * 1e6 / 12)
            ev[-1].synchronize()
            gpu.append(statistics.mean(cp.cuda.get_elapsed_time(ev[k], ev[k + 1]) * 1e3 for k in range(12)))
        print(f"ex15 solve 64x7168x8192, {name}: host {statistics.median(host):.1f} us per call, "
              f"GPU (events) {statistics.median(gpu):.1f} us per call (rounds {min(gpu):.1f}-{max(gpu):.1f})")


if __name__ == "__main__":
    main()
