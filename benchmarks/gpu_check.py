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
EXERCISES = sorted(p.name for p in (ROOT / "exercises").iterdir() if (ROOT / "solutions" / p.name).is_dir())


def sh(cmd: list[str], log: Path, timeout: int) -> tuple[int, float]:
    t0 = time.perf_counter()
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", "COLUMNS": "160"}
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
    if "gemm" in ex:
        dt = cupy.float16 if "tensorcore" in ex else cupy.float32
        a = cupy.random.standard_normal((dims["M"], dims["K"]), dtype=cupy.float32).astype(dt)
        b = cupy.random.standard_normal((dims["K"], dims["N"]), dtype=cupy.float32).astype(dt)
        return f"cupy.matmul {cupy.dtype(dt).name}", time_gpu(lambda: cupy.matmul(a, b)).median_ms
    if ex != "ex07_softmax":
        return "see bench.txt", float("nan")
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
    ap.add_argument("--bench-only", nargs="*", default=None, help="exercises for bench_references (default: all)")
    ap.add_argument("--pytest-k", default="", help="-k expression for the GPU tests")
    ap.add_argument("--pytest-timeout", type=int, default=420, help="seconds for the whole GPU test run")
    ap.add_argument("--gemm-bench", action="store_true", help="also run benchmarks/bench_gemm.py")
    ap.add_argument("--skip-grades", action="store_true", help="skip grading every solution/stub")
    ap.add_argument("--calibrate", nargs="*", default=["ex01_vector_add", "ex07_softmax"],
                    help="exercises to calibrate twice (agreement check)")
    ap.add_argument("--skip-instructor", action="store_true", help="skip grade check/calibrate/batch")
    ap.add_argument("--only-instructor", action="store_true", help="only grade check/calibrate/batch")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu_check-"))
    print(f"gpu_check {time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
    subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu",
                    "--format=csv"], check=False)

    lines = []
    if not args.skip_pytest and not args.only_instructor:
        rc, wall = sh([sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-rfEs", "-s", "--durations=25", "tests/",
                       *(["-k", args.pytest_k] if args.pytest_k else []),
                       f"--junitxml={work / 'pytest-gpu.xml'}"], work / "pytest-gpu.txt", args.pytest_timeout)
        lines.append(f"GPU tests: exit {rc} in {wall:.0f} s: {tail(work / 'pytest-gpu.txt', 1)}")
        print(tail(work / "pytest-gpu.txt", 60), flush=True)
    if args.gemm_bench:
        rc, wall = sh([sys.executable, "benchmarks/bench_gemm.py"], work / "bench_gemm.txt", 300)
        print(tail(work / "bench_gemm.txt", 60), flush=True)
        lines.append(f"bench_gemm: exit {rc} in {wall:.0f} s")
    if not args.skip_bench and not args.only_instructor:
        rc, wall = sh([sys.executable, "benchmarks/bench_references.py",
                       *(["--only", *args.bench_only] if args.bench_only else [])], work / "bench.txt", 150)
        print(tail(work / "bench.txt", 30), flush=True)
        lines.append(f"bench_references: exit {rc} in {wall:.0f} s")

    rows, calib = [], {}
    for ex in ([] if args.only_instructor or args.skip_grades else args.only):
        sol, sol_wall = grade_json(ex, f"solutions/{ex}", work, "solution")
        sol2, warm_wall = grade_json(ex, f"solutions/{ex}", work, "solution-warm") if ex == "ex07_softmax" else ({}, 0.0)
        stub, stub_wall = grade_json(ex, f"student_template/{ex}", work, "stub")
        naive_dir = ROOT / "tests" / "fixtures" / "gpu" / f"{ex}_naive"
        if naive_dir.is_dir():
            naive, _ = grade_json(ex, str(naive_dir), work, "naive")
            sc = naive.get("score", {})
            lines.append(f"{ex} naive fixture: correct {naive.get('correct')}, performance {sc.get('performance')}"
                         f"/{sc.get('performance_max')}, ratios {[s.get('value') for s in sc.get('shapes', [])]}")
            print(lines[-1], flush=True)
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
                     f"{lib / t:.2f} vs {lib_name}" if t and lib == lib else lib_name, f"{sol_wall:.1f}/{warm_wall:.1f}/{stub_wall:.1f}"))
        calib[ex] = {b["name"]: {"median_ms": b["reference"]["median_ms"], "iqr_ms": b["reference"]["iqr_ms"],
                                 "samples": b["reference"]["n"]}
                     for b in sol.get("benchmarks", []) if b.get("reference") and b["reference"].get("median_ms")}
        print(f"{ex}: {rows[-1]}", flush=True)
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

    if not args.skip_instructor:
        lines += instructor_steps(work, args.calibrate)
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


def instructor_steps(work: Path, calibrate: list[str]) -> list[str]:
    """grade check on every exercise, grade calibrate twice (agreement within the reported noise),
    and grade batch over six ex01 submissions (solution, stub, crashing, hanging, slow, wrong)."""
    import shutil
    import tomllib
    lines = []
    rc, wall = sh([sys.executable, "-m", "grader.cli", "check", "--no-controls"], work / "check.txt", 200)
    lines.append(f"grade check --no-controls: exit {rc} in {wall:.0f} s: {tail(work / 'check.txt', 1)}")
    print(tail(work / "check.txt", 60), flush=True)
    cal_file = ROOT / "calibration" / "sm_90.toml"
    runs = []
    for i in (1, 2):
        rc, wall = sh([sys.executable, "-m", "grader.cli", "calibrate", *calibrate], work / f"calibrate{i}.txt", 120)
        lines.append(f"grade calibrate run {i}: exit {rc} in {wall:.0f} s")
        print(tail(work / f"calibrate{i}.txt", 12), flush=True)
        if cal_file.is_file():
            shutil.copy(cal_file, work / f"calibration-run{i}.toml")
            runs.append(tomllib.loads(cal_file.read_text()))
    if len(runs) == 2:
        for ex in calibrate:
            for shape, a in runs[0].get(ex, {}).items():
                b = runs[1].get(ex, {}).get(shape, {})
                if b:
                    diff = abs(a["median_ms"] - b["median_ms"])
                    noise = max(a["iqr_ms"], b["iqr_ms"])
                    lines.append(f"calibrate agreement {ex} {shape}: {a['median_ms']:.4f} vs {b['median_ms']:.4f} ms, "
                                 f"|diff| {diff:.4f} <= IQR {noise:.4f}: {diff <= noise}")
    subs = work / "batch-submissions"
    fixtures = ROOT / "tests" / "fixtures" / "gpu"
    for student, src in (("solution", ROOT / "solutions" / "ex01_vector_add"),
                         ("stub", ROOT / "student_template" / "ex01_vector_add"),
                         ("crashing", fixtures / "illegal_address"), ("hanging", fixtures / "hang"),
                         ("slow", fixtures / "uncoalesced_add"), ("wrong", fixtures / "wrong_sub")):
        shutil.copytree(src, subs / student / "ex01_vector_add")
    rc, wall = sh([sys.executable, "-m", "grader.cli", "batch", str(subs), "--exercises", "ex01", "--out",
                   str(work / "batch-results"), "--mode", "quick", "--case-limit", "5"], work / "batch.txt", 240)
    lines.append(f"grade batch (6 submissions): exit {rc} in {wall:.0f} s")
    lines.append(tail(work / "batch.txt", 12))
    return lines


if __name__ == "__main__":
    main()
