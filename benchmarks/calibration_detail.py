"""Why ``grade calibrate`` accepts or refuses a shape: the whole timing of each shape, not only
the verdict.

    python3 benchmarks/calibration_detail.py ex15_gemm_fp8_blockscaled [...] [--repeat 2]

Grades each named exercise's reference solution exactly as ``grade calibrate`` does (the same
grade function, calibrate.POLICY) and prints, per shape: calls per round, samples, median, IQR and
the median's RSE, the median unaccounted time per call against its allowance, whether the wall
clock replaced the event times, the verdict, and the per-round samples in microseconds (sorted),
so a refusal can be traced to few samples, a wide spread, or a wall-clock substitution.
Writes nothing. Needs a GPU.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exercises", nargs="+")
    ap.add_argument("--repeat", type=int, default=1, help="grade each exercise this many times in a row")
    args = ap.parse_args()
    from grader import calibrate as cal
    from grader import device as dev
    from grader.cli_instructor import gpu_grader
    from grader.spec import find_root, load_spec, resolve_exercise

    root = find_root(ROOT)
    info = dev.detect()
    grade_fn = gpu_grader(root, info)
    print(f"{info.name} ({info.arch}), calibrate.POLICY {cal.POLICY}")
    for name in args.exercises:
        ex = resolve_exercise(root, name)
        spec = load_spec(ex.spec_path)
        for k in range(args.repeat):
            r = grade_fn(spec, ex.solution, None, cal.POLICY)
            print(f"\n== {ex.name} run {k + 1}: status {r.status}, correct {r.correct}")
            for b in r.benchmarks:
                s = b.submission
                st = s.stats
                why = s.failure or cal.verdict(st, b.clock, s.outside_events, lambda: [],
                                               s.overhead_ms_per_call, s.allowed_ms_per_call)
                us = lambda v: "-" if v is None else f"{v * 1e3:.1f}"
                print(f"{b.name}: calls/round {b.calls_per_round}, n {st.n if st else 0}, median "
                      f"{us(st.median_ms if st else None)} us, IQR {us(st.iqr_ms if st else None)} us, "
                      f"RSE {st.rse:.2%}" if st else "no stats", end="")
                print(f", outside/call {us(s.overhead_ms_per_call)} us (allowed {us(s.allowed_ms_per_call)}),"
                      f" wall used {s.outside_events}, drained {us(s.drained_ms_per_call)} us, "
                      f"clock {b.clock}: {why or 'ok'}")
                print("   samples us (sorted):", " ".join(f"{v * 1e3:.1f}" for v in sorted(s.samples)))


if __name__ == "__main__":
    main()
