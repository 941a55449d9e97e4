#!/usr/bin/env python3
"""Per-shape spread between two calibration files (``grade calibrate`` output), largest last.

    python3 benchmarks/compare_calibrations.py A.toml B.toml [--within 0.02] [--partial]

Prints one row per shape present in both (median ms of each, relative difference), how many
agree within ``--within``, and the shapes only one file holds (a shape the other run refused or
never reached); exit status 1 when any shape differs by more or is in one file only, 2 when a file
is missing or is not TOML. ``--partial``: B is a run of some exercises only (``grade calibrate
ex13_gemm_hopper ...``) and A a whole file (the committed calibration/sm_90.toml): only the
exercises B holds are compared; a shape of one of them that either file lacks still fails.
"""
from __future__ import annotations

import argparse
import sys
import tomllib


def medians(path: str) -> dict[tuple[str, str], float]:
    """{(exercise, shape): median ms} of a calibration file. Raises OSError, tomllib.TOMLDecodeError."""
    with open(path, encoding="utf-8") as f:
        data = tomllib.loads(f.read())
    return {(ex, shape): float(v["median_ms"]) for ex, shapes in data.items() if ex != "meta" and isinstance(shapes, dict)
            for shape, v in shapes.items() if isinstance(v, dict) and "median_ms" in v}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--within", type=float, default=0.02, help="relative difference allowed (default 0.02)")
    ap.add_argument("--partial", action="store_true",
                    help="compare only the exercises B holds (B: a calibrate run of some exercises)")
    args = ap.parse_args()
    try:
        a, b = medians(args.a), medians(args.b)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        print(f"compare_calibrations: cannot read {getattr(exc, 'filename', None) or 'a calibration file'}: {exc} "
              "(did that `grade calibrate` run write a file? its log says)", file=sys.stderr)
        return 2
    if args.partial:
        kept = {ex for ex, _ in b}
        a = {k: v for k, v in a.items() if k[0] in kept}
    rows = sorted(((abs(b[k] / a[k] - 1), k) for k in a.keys() & b.keys()), key=lambda r: r[0])
    for d, (ex, shape) in rows:
        print(f"{ex:24s} {shape:28s} {a[(ex, shape)]:10.4f} {b[(ex, shape)]:10.4f} ms  {d:6.2%}")
    ok = sum(d <= args.within for d, _ in rows)
    print(f"{ok} of {len(rows)} shapes within {args.within:.0%}; largest difference "
          f"{max((d for d, _ in rows), default=0.0):.2%}")
    only = [(path, sorted(x.keys() - y.keys())) for path, x, y in ((args.a, a, b), (args.b, b, a))]
    for path, keys in only:
        if keys:
            print(f"only in {path}: " + ", ".join(f"{ex} {shape}" for ex, shape in keys))
    return 0 if ok == len(rows) and not any(keys for _, keys in only) else 1


if __name__ == "__main__":
    sys.exit(main())
