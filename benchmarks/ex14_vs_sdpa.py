"""ex14's reference FlashAttention-2 kernel against PyTorch's scaled_dot_product_attention, side by side.

    python3 benchmarks/ex14_vs_sdpa.py [--reps 20]
    python3 benchmarks/ex14_vs_sdpa.py --variants      # each of the reference's VARIANTS in turn

For each of ex14's benchmark shapes, read from its spec.toml (dims, dtype, causal, FLOPs: the visible
scores, 4 D each): the median of ``--reps`` CUDA-event timings (ms, one call each, after 3 warm-up
calls) of solutions/ex14_flash_attention's solve and of
torch.nn.functional.scaled_dot_product_attention (PyTorch picks its backend; at 450-660 TFLOP/s on
the H200 it is not FlashAttention-2), with TFLOP/s and the ratio SDPA / ours (above 1: ours is
faster). Needs a GPU, CuPy and torch. SDPA's causal mask is top-left aligned, as ex14's.

--solution FOLDER times another solution.py (a candidate); --variants times each entry of its
VARIANTS (module constants) in turn. max|ours - sdpa| is printed, not judged: the grader checks
a candidate (`grade ex14 --submission FOLDER`).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXERCISE = ROOT / "exercises" / "ex14_flash_attention"


def median_ms(fn, reps: int) -> float:
    import torch
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--solution", type=Path, default=ROOT / "solutions" / "ex14_flash_attention",
                    help="a folder with solution.py and kernel.cu (default: the reference)")
    ap.add_argument("--variants", action="store_true", help="time each entry of the solution's VARIANTS")
    args = ap.parse_args()
    from grader.spec import load_spec
    spec = load_spec(EXERCISE / "spec.toml")
    from benchmarks.solution_module import load_solution_module
    ref = load_solution_module(args.solution / "solution.py", "ex14_solution")
    variants = getattr(ref, "VARIANTS", None) if args.variants else [{}]
    if not variants:
        sys.exit(f"--variants: {args.solution}/solution.py has no VARIANTS")
    print(f"{'shape':<30} {'ours ms':>8} {'sdpa ms':>8} {'ours TF/s':>9} {'sdpa TF/s':>9} {'sdpa/ours':>9}")
    for variant in variants:
        for name, value in variant.items():
            setattr(ref, name, value)
        if variant:
            print(f"variant {variant}")
        for bench in spec.benchmarks:
            time_one(ref, spec, bench, args.reps)
    return 0


def time_one(ref, spec, bench, reps: int) -> None:
    """One benchmark shape of the spec: ref.solve and SDPA side by side, one printed line."""
    import cupy as cp
    import torch
    import torch.nn.functional as F
    name, dims, dt = bench.name, bench.as_dict(), dict(bench.types)["T"]
    B, H, Sq, Sk, D = (dims[k] for k in ("B", "H", "Sq", "Sk", "D"))
    causal = int(spec.values["causal"][bench.distribution("causal")].param("value"))
    tdt = getattr(torch, dt)
    q = torch.randn(B, H, Sq, D, device="cuda", dtype=tdt)
    k = torch.randn(B, H, Sk, D, device="cuda", dtype=tdt)
    v = torch.randn(B, H, Sk, D, device="cuda", dtype=tdt)
    o = torch.empty(B, H, Sq, D, device="cuda", dtype=torch.float32)
    lse = torch.empty(B, H, Sq, device="cuda", dtype=torch.float32)
    view = (lambda t: cp.asarray(t.view(torch.uint16))) if dt == "bfloat16" else cp.asarray
    cq, ck, cv, co, cl = view(q), view(k), view(v), cp.asarray(o), cp.asarray(lse)
    stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    with stream:
        ours = median_ms(lambda: ref.solve(cq, ck, cv, causal, co, cl), reps)
    err = (o - F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)).float()).abs().max().item()
    sdpa = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)), reps)
    flops = bench.flops.evaluate(dims)
    print(f"{name:<30} {ours:>8.3f} {sdpa:>8.3f} {flops / ours / 1e9:>9.1f} {flops / sdpa / 1e9:>9.1f} "
          f"{sdpa / ours:>9.2f}   max|ours-sdpa| {err:.2e}")


if __name__ == "__main__":
    sys.exit(main())
