#!/usr/bin/env python3
"""One reference kernel's time three ways, for issue 10's agreement check: CUDA events around each
call after an L2 flush (as ``grader.timing.time_gpu`` and benchmarks/bench_references.py time it),
and, when run under Nsight Compute, ncu's ``gpu__time_duration`` of the same launches.

    python3 benchmarks/ncu_reference.py                      # ex07 reference, 4096x4096 float32
    ncu --metrics gpu__time_duration.sum --csv -k regex:softmax python3 benchmarks/ncu_reference.py --reps 20

Prints the events' median (ms) last. Compare with calibration/<arch>.toml (the grader's time for
the same shape) and with ncu's durations (kernel only: no launch gap).
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    import cupy
    from grader.timing import StopPolicy, time_gpu
    spec = importlib.util.spec_from_file_location("solution", ROOT / "solutions" / "ex07_softmax" / "solution.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    x = cupy.random.standard_normal((a.rows, a.cols), dtype=cupy.float32)
    y = cupy.empty_like(x)
    policy = StopPolicy(min_samples=a.reps, max_samples=a.reps, target_rse=0.0, max_seconds=60.0)
    stats = time_gpu(lambda: mod.solve(x, y), policy=policy)
    print(f"ex07 reference {a.rows}x{a.cols}: events median {stats.median_ms:.4f} ms "
          f"(IQR {stats.iqr_ms:.4f}, {stats.n} calls, L2 flushed before each)")


if __name__ == "__main__":
    main()
