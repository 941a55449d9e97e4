"""The GPU test suite on one GPU in one device call: what can share the GPU runs in parallel
processes, what is timed runs alone afterwards. Installs nothing; prints a short table last.

Phases (each a set of pytest node ids; logs in OUT/logs/<phase>[-<n>].txt):

1. gate, alone: the tracer test and ex01's full marks. When it fails nothing else runs, so a broken
   tracer or worker costs a minute of device time, not the call. Then the measured ceilings (copy,
   fp32 and fp16 rates), alone: the grader caches them at their first measurement.
2. shared, in ``--jobs`` concurrent pytest processes on the same GPU: the cuda cheats whose
   expectation does not depend on timing (``expect`` "rejected" or "incorrect": a refusal, a wrong
   output, a memory cap) and the stubs. Concurrent grades slow each other down, which none of these
   outcomes depends on.
3. timed, alone: the cheats judged by their timing (``expect`` "flag", "no_gain",
   "zero_performance"), which need a quiet GPU.
4. full_marks, alone: every reference solution graded side by side with itself (100/100).
5. serial, alone: the tests of tests/test_gpu.py that ``--serial-k`` selects.

    python3 benchmarks/gpu_suite.py                     # on a machine with an NVIDIA GPU
    python3 benchmarks/gpu_suite.py --jobs 4 --serial-k "compile_error or naive"
    python3 benchmarks/gpu_suite.py --phases gate,shared,timed,serial   # then, in a second call:
    python3 benchmarks/gpu_suite.py --phases full_marks

Exit status: 0 when every selected test passed (a skip or a test cut off by the time limit is not a
pass), 1 otherwise, 2 when the gate failed.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMED_EXPECTATIONS = ("flag", "no_gain", "zero_performance")
GATE = ["tests/test_gpu.py::test_kernels_are_traced_and_a_library_kernel_is_named",
        "tests/test_gpu.py::test_solution_gets_full_marks[ex01_vector_add]"]


def cuda_cheats() -> tuple[list[str], list[str]]:
    """Node ids of the cuda cheats: (judged without timing, judged by timing)."""
    shared, timed = [], []
    for toml in sorted((ROOT / "tests" / "cheats").glob("*/*/cheat.toml")):
        meta = tomllib.loads(toml.read_text())
        if meta.get("backend") != "cuda":
            continue
        node = f"tests/test_cheats.py::test_cuda_cheat_is_caught[{toml.parent.parent.name}/{toml.parent.name}]"
        (timed if meta.get("expect") in TIMED_EXPECTATIONS else shared).append(node)
    return shared, timed


def exercises() -> list[str]:
    return sorted(p.name for p in (ROOT / "solutions").iterdir() if (ROOT / "exercises" / p.name).is_dir())


def pytest(nodes: list[str], log: Path, limit_s: float, extra: tuple[str, ...] = ()) -> subprocess.Popen:
    """One pytest process over ``nodes`` writing to ``log``, stopped with SIGINT at ``limit_s``
    (pytest still prints what passed and failed)."""
    cmd = ["timeout", "-s", "INT", "-k", "20", str(max(1, int(limit_s))), sys.executable, "-m", "pytest", "-m", "gpu",
           "-q", "-rA", "--tb=short", "--durations=15", "-p", "no:cacheprovider", *extra, *nodes]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "160"})


def outcome(log: Path) -> tuple[list[str], list[str], str]:
    """(passed node ids, failed or errored node ids with their reason, pytest's last line)."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    passed = re.findall(r"^PASSED (\S+)", text, flags=re.M)
    failed = [m.group(0)[:300] for m in re.finditer(r"^(FAILED|ERROR) .*$", text, flags=re.M)]
    last = next((ln for ln in reversed(text.splitlines())
                 if re.search(r"passed|failed|error|skipped|no tests ran", ln)), "")
    return passed, failed, last.strip("= ")


PHASES = ("gate", "shared", "timed", "full_marks", "serial")


def measure_ceilings() -> str:
    """Measure (or read from the cache) every ceiling kind, alone on the GPU; one line."""
    code = ("from grader import device as d; i = d.detect(); "
            "print('ceilings', d.ceilings(i, {'fp32', 'fp16'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return (out.stdout + out.stderr).strip().splitlines()[-1] if (out.stdout + out.stderr).strip() else "ceilings: ?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phases", default=",".join(PHASES),
                    help=f"comma-separated, run in this order: {', '.join(PHASES)} (default all)")
    ap.add_argument("--jobs", type=int, default=3, help="concurrent pytest processes in the shared phase (default 3)")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out")), help="folder for logs/")
    ap.add_argument("--limit-s", type=float, default=560, help="wall-clock limit for the whole suite, s (default 560)")
    ap.add_argument("--serial-k", default="compile_error",
                    help='the serial phase: a pytest -k filter over tests/test_gpu.py (default "compile_error")')
    args = ap.parse_args()
    phases = [x.strip() for x in args.phases.split(",") if x.strip()]
    unknown = sorted(set(phases) - set(PHASES))
    if unknown:
        ap.error(f"--phases: unknown {', '.join(unknown)}; choose from {', '.join(PHASES)}")
    logs = args.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()

    def left() -> float:
        return args.limit_s - (time.monotonic() - start)

    rows: list[tuple[str, int, int, list[str], float, str]] = []   # phase, selected, passed, failed, wall s, pytest

    def alone(name: str, nodes: list[str], extra: tuple[str, ...] = ()) -> None:
        t0 = time.monotonic()
        pytest(nodes, logs / f"{name}.txt", left() - 5, extra).wait()
        passed, failed, last = outcome(logs / f"{name}.txt")
        ran = sum(int(n) for n, _ in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", last))
        rows.append((name, len(nodes) if not extra else ran, len(passed), failed, time.monotonic() - t0, last))

    print(time.strftime("gpu_suite %Y-%m-%d %H:%M:%S UTC", time.gmtime()), flush=True)
    if shutil.which("nvidia-smi"):
        subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu",
                        "--format=csv"], check=False)
    shared, timed = cuda_cheats()
    shared += [f"tests/test_gpu.py::test_stub_scores_zero_cleanly[{e}]" for e in exercises()]
    # the longest first (ex12 compiles three workers' modules), so a cut at the time limit loses the short ones
    full_marks = [f"tests/test_gpu.py::test_solution_gets_full_marks[{e}]" for e in reversed(exercises())
                  if "gate" not in phases or e != "ex01_vector_add"]   # the gate grades ex01
    for phase in phases:
        if left() < 20:
            rows.append((phase, 0, 0, [f"{phase}: not run, the time limit (--limit-s) was spent"], 0.0, ""))
            continue
        if phase == "gate":
            alone("gate", GATE)
            if rows[-1][3] or rows[-1][2] < len(GATE):
                print(f"== gate FAILED: nothing else was run ({rows[-1][5]})")
                print((logs / "gate.txt").read_text(errors="replace")[-3000:])
                return 2
            # the measured ceilings are cached at their first measurement: take it on a quiet GPU, not
            # under the shared phase's concurrent grades (a low fp32 rate made ex11's reference
            # "implausible" in the first run of this script)
            print(measure_ceilings(), flush=True)
        elif phase == "shared":
            t0 = time.monotonic()
            groups = [shared[i::args.jobs] for i in range(args.jobs)]
            procs = [pytest(g, logs / f"shared-{i}.txt", left() - 10) for i, g in enumerate(groups) if g]
            for p in procs:
                p.wait()
            results = [outcome(logs / f"shared-{i}.txt") for i in range(len(procs))]
            rows.append((f"shared x{len(procs)}", len(shared), sum(len(r[0]) for r in results),
                         [f for r in results for f in r[1]], time.monotonic() - t0, "; ".join(r[2] for r in results)))
        elif phase == "timed":
            alone("timed", timed)
        elif phase == "full_marks":
            alone("full_marks", full_marks)
            print("\n".join((logs / "full_marks.txt").read_text(errors="replace").splitlines()[-25:]))
        elif phase == "serial" and args.serial_k:
            alone("serial", ["tests/test_gpu.py"], ("-k", args.serial_k))
    print(f"\n{'phase':<12} {'selected':>8} {'passed':>6} {'failed':>6} {'wall s':>7}  pytest")
    for name, selected, npass, failed, wall, last in rows:
        print(f"{name:<12} {selected:>8} {npass:>6} {len(failed):>6} {wall:>7.0f}  {last[:110]}")
    for row in rows:
        for f in row[3]:
            print("  " + f)
    print(f"total {time.monotonic() - start:.0f} s")
    return 0 if all(r[2] == r[1] and not r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
