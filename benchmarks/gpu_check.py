"""All GPU checks in one run, for the device machine; prints a table last.

    python3 benchmarks/gpu_check.py [--skip-pytest] [--skip-bench] [--out DIR]

1. the GPU tests (``pytest -m gpu``);
2. ``benchmarks/bench_references.py`` (references side by side with the library anchors);
3. ``grade`` on every reference solution (twice for the warm end-to-end time) and every stub, as
   JSON results; the library anchor of each exercise timed in this process at the first benchmark
   shape (copy for ex01, ``cupy.sum`` for ex04, a naive CuPy softmax for ex07);
4. ``calibration.json`` from the side-by-side reference timings (``benchmarks/write_calibration.py``
   turns it into ``calibration/<arch>.toml``).

Everything is packed into ``--out``/gpu_check.tar.gz (default ``$OUT`` or ``./out``). Installs nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXERCISES = ["ex01_vector_add", "ex04_reduction", "ex07_softmax"]


def sh(cmd: list[str], log: Path, timeout: int) -> tuple[int, float]:
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "COLUMNS": "160"}
    with open(log, "w") as fh:
        try:
            rc = subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    return rc, time.perf_counter() - t0


def tail(path: Path, n: int) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:])


def grade_json(ex: str, folder: str, out: Path, tag: str) -> tuple[dict, float]:
    path = out / f"{ex}-{tag}.json"
    rc, wall = sh([sys.executable, "-m", "grader.cli", ex, "--submission", folder, "--format", "json", "-o",
                   str(path)], out / f"{ex}-{tag}.log", 600)
    try:
        return json.loads(path.read_text()), wall
    except (OSError, ValueError):
        return {"status": "error", "reason": tail(out / f"{ex}-{tag}.log", 5), "exit_code": rc}, wall


def library_ms(ex: str) -> tuple[str, float]:
    """Library anchor at the exercise's first benchmark shape, ms (median, grader.timing.time_gpu)."""
    import cupy
    from grader.spec import load_spec
    from grader.timing import time_gpu
    dims = load_spec(ROOT / "exercises" / ex / "spec.toml").benchmarks[0].as_dict()
    if ex == "ex01_vector_add":
        src = cupy.random.standard_normal(dims["n"] * 3 // 2, dtype=cupy.float32)  # 12 n bytes moved in all
        dst = cupy.empty_like(src)
        return "copy", time_gpu(lambda: cupy.copyto(dst, src)).median_ms
    if ex == "ex04_reduction":
        x = cupy.random.standard_normal(dims["n"], dtype=cupy.float32)
        return "cupy.sum", time_gpu(lambda: x.sum()).median_ms
    x = cupy.random.standard_normal((dims["rows"], dims["cols"]), dtype=cupy.float32)

    def naive() -> None:
        e = cupy.exp(x - x.max(axis=1, keepdims=True))
        e / e.sum(axis=1, keepdims=True)
    return "naive CuPy softmax", time_gpu(naive).median_ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT", str(ROOT / "out")))
    ap.add_argument("--skip-pytest", action="store_true")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--only", nargs="*", default=EXERCISES)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu_check-"))
    print(f"gpu_check {time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
    subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu",
                    "--format=csv"], check=False)

    lines = []
    if not args.skip_pytest:
        rc, wall = sh([sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-rfEs", "tests/test_gpu.py",
                       f"--junitxml={work / 'pytest-gpu.xml'}"], work / "pytest-gpu.txt", 300)
        lines.append(f"GPU tests: exit {rc} in {wall:.0f} s: {tail(work / 'pytest-gpu.txt', 1)}")
        print(tail(work / "pytest-gpu.txt", 25), flush=True)
    if not args.skip_bench:
        rc, wall = sh([sys.executable, "benchmarks/bench_references.py"], work / "bench.txt", 150)
        print(tail(work / "bench.txt", 30), flush=True)
        lines.append(f"bench_references: exit {rc} in {wall:.0f} s")

    rows, calib = [], {}
    for ex in args.only:
        sol, sol_wall = grade_json(ex, f"solutions/{ex}", work, "solution")
        sol2, warm_wall = grade_json(ex, f"solutions/{ex}", work, "solution-warm") if ex == "ex07_softmax" else ({}, 0.0)
        stub, stub_wall = grade_json(ex, f"student_template/{ex}", work, "stub")
        lib_name, lib = library_ms(ex)
        b0 = (sol.get("benchmarks") or [{}])[0]
        t = (b0.get("submission") or {}).get("time_ms")
        frac = b0.get("ceiling_fraction")
        stub_outcome = f"{stub.get('status')} {stub.get('score', {}).get('total')}"
        if stub.get("smallest_failure"):
            stub_outcome += f" ({stub['smallest_failure']['status']})"
        rows.append((ex, "yes" if sol.get("correct") else f"NO: {sol.get('reason') or sol.get('smallest_failure')}",
                     f"{sol.get('score', {}).get('total')}/{sol.get('score', {}).get('max')} | {sol2.get('score', {}).get('total')}",
                     stub_outcome, f"{b0.get('gbps') or 0:,.0f}", f"{(frac or 0):.0%}",
                     f"{lib / t:.2f} vs {lib_name}" if t else "-", f"{sol_wall:.1f}/{warm_wall:.1f}/{stub_wall:.1f}"))
        calib[ex] = {b["name"]: {"median_ms": b["reference"]["median_ms"], "iqr_ms": b["reference"]["iqr_ms"],
                                 "samples": b["reference"]["n"]}
                     for b in sol.get("benchmarks", []) if b.get("reference") and b["reference"].get("median_ms")}
        for b in sol.get("benchmarks", []):
            s, r = b["submission"], b.get("reference") or {}
            lines.append(f"{ex} {b['name']}: solution {s.get('median_ms')} ms (IQR {s.get('iqr_ms')}, n {s.get('n')}), "
                         f"reference side by side {r.get('median_ms')} ms, {b.get('gbps') or 0:,.0f} GB/s, "
                         f"{(b.get('ceiling_fraction') or 0):.1%} of copy; flags {sol.get('flags')}")
    if calib:  # JSON here (the device has no TOML writer); benchmarks/write_calibration.py turns it into TOML
        from grader import device
        info = device.detect()
        meta = {"arch": info.arch, "device": info.name, "driver": info.driver, "runtime": info.runtime,
                "cupy": info.cupy, "date": time.strftime("%Y-%m-%d"),
                "command": "python3 benchmarks/gpu_check.py (reference timed side by side in grade)"}
        (work / "calibration.json").write_text(json.dumps({"meta": meta, "entries": calib}, indent=1))

    table = ["\n".join(lines)]
    head = ("exercise", "solution correct", "score (run 1 | 2)", "stub", "GB/s", "% ceiling", "ratio to library",
            "grade wall s sol/warm/stub")
    table.append("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    table += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    (work / "table.md").write_text("\n".join(table) + "\n")
    # the device tool brings back at most 8 files: pack everything into one archive
    with tarfile.open(out / "gpu_check.tar.gz", "w:gz") as tar:
        tar.add(work, arcname="gpu_check")
    print("\n".join(table))


if __name__ == "__main__":
    main()
