"""The whole GPU test suite (every test marked ``gpu``) on one GPU: what can share the GPU runs in
parallel processes, what is timed runs alone. Installs nothing; prints a short table last.

Every GPU test pytest collects falls in exactly one phase (``--list`` shows the plan without a GPU;
tests/test_gpu_suite.py checks it on CPU), so no test is left out by accident. Phases, run in this
order (logs in OUT/logs/<phase>[-<n>].txt):

1. gate, alone: the tracer test and ex01's full marks. When it fails nothing else runs, so a broken
   tracer or worker costs a minute of device time, not the call. Then the measured ceilings (copy,
   fp32 and fp16 rates), alone: the grader caches them at their first measurement.
2. shared, in ``--jobs`` concurrent pytest processes on the same GPU: tests whose outcome does not
   depend on timing (SHARED_TESTS: the stubs, the faults, the compile error, the sanitizer, ...) and
   the cuda cheats whose expectation is a refusal, a wrong output or a memory cap. Concurrent
   grades slow each other down, which none of these outcomes depends on; their timing sections
   take turns (the grader's per-GPU timing lock, grader.device.gpu_lock). A test still running
   when the limit stops the phase is named in the table ("not finished"), so a hang shows. A test
   failed only because another job held the GPU's memory (the grader refused with
   DeviceMemoryError) or kept the GPU busy past the drain limit runs again alone, in its own row
   ("shared-alone").
3. timed, alone: the cheats judged by their timing (``expect`` "flag", "no_gain",
   "zero_performance"), which need a quiet GPU.
4. full_marks, alone: every reference solution graded side by side with itself (100/100).
5. ladder, alone: the naive, uncoalesced and previous-rung fixtures score clearly fewer points; the
   same score five times.
6. bundle, alone: tests/test_bundle_gpu.py's timed tests (every reference in a published bundle on
   the calibration basis and on the roofline basis, the naive fixture, the side-stream cheats).
7. isolated, alone: tests of ISOLATED_FILES, whose kernels run in the pytest process itself (a
   fault would end every later test of a shared process), in a pytest process of their own.
8. serial, alone: any other GPU test (a new test lands here until it is classified).

The whole suite takes about 28 minutes of one H200, more than one device call (measured
2026-12-04, benchmarks/RESULTS.md "twenty-eighth session": gate 55 s, shared x4 209 s, timed 47 s,
isolated 3 s, full_marks 399 s, bundle 431 s for 21 of its 23 tests, ladder ~480 s for its 16),
and each call on a machine that went idle starts cold (~60-80 s). Run it in four calls, e.g.

    python3 benchmarks/gpu_suite.py --list                                  # the plan, no GPU needed
    python3 benchmarks/gpu_suite.py --phases gate,shared,timed,isolated,serial   # call 1, ~280 s
    python3 benchmarks/gpu_suite.py --phases full_marks                     # call 2, ~390 s
    python3 benchmarks/gpu_suite.py --phases ladder                         # call 3, ~470 s
    python3 benchmarks/gpu_suite.py --phases bundle                         # call 4, ~520 s
    python3 benchmarks/gpu_suite.py --phases shared -k sanitize             # a subset: pytest -k

On two GPUs, run two of these at once with CUDA_VISIBLE_DEVICES=0 and =1 and different
--out; benchmarks/gpu_x2.sh does that for the whole suite, with `grade calibrate` of every exercise
twice beside it, in three device calls.

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
# Test functions whose outcome does not depend on timing (no performance points at stake, or none
# possible): they may share the GPU with other grades.
SHARED_TESTS = frozenset({
    "test_stub_scores_zero_cleanly", "test_stub_scores_zero_in_the_bundle", "test_out_of_bounds_write_is_caught_by_the_guards",
    "test_hang_is_killed_and_named", "test_illegal_address_is_isolated_and_named",
    "test_grading_after_a_fault_is_unaffected", "test_compile_error_is_reported_with_line",
    "test_float16_accumulators_fail_ex12", "test_ex12_without_tensor_core_instructions_gets_no_performance_points",
    "test_a_wmma_submission_is_own_and_correct_in_grading", "test_ex14_without_online_rescaling_fails",
    "test_fp8_gemm_without_the_per_block_promotion_fails", "test_paged_decode_reading_past_the_context_fails",
    "test_cublas_loaded_at_run_time_is_rejected", "test_nvml_sees_the_workers_device_memory",
    "test_racecheck_finds_the_missing_syncthreads", "test_memcheck_finds_the_read_past_the_end",
    "test_the_smallest_failing_case_is_sanitized_in_the_text_report", "test_headers_students_use_compile_in_grading"})
# Test files whose kernels run in the pytest process itself, new to the GPU: a fault there would
# poison the CUDA context of a shared phase's process and fail every test after it. They run alone,
# in a pytest process of their own (the "isolated" phase).
ISOLATED_FILES = ("tests/test_hopper_gpu.py",)
LADDER_TESTS = frozenset({
    "test_naive_kernel_is_correct_and_scores_fewer_performance_points", "test_uncoalesced_variant_scores_fewer_points",
    "test_previous_rung_is_correct_and_scores_clearly_fewer_points", "test_same_score_five_times",
    "test_ex12_reference_on_ex13_is_correct_and_scores_no_performance_points",
    "test_wgmma_without_tma_is_correct_and_sits_between_the_rungs",
    "test_paged_decode_without_split_k_is_correct_and_scores_clearly_fewer_points",
    # timed grades, and Nsight Compute, which locks the GPU's clocks while it profiles: alone too
    "test_grade_profile_shows_why_the_naive_layernorm_is_slow"})
PHASES = ("gate", "shared", "timed", "full_marks", "ladder", "bundle", "isolated", "serial")


def collect(keyword: str = "") -> list[str]:
    """Node ids of every test marked ``gpu`` under tests/ (pytest's own collection; no GPU needed),
    narrowed by a pytest ``-k`` expression when one is given.

    Raises:
        RuntimeError: when pytest cannot collect (its last lines say why).
    """
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "gpu", "-p", "no:cacheprovider", "tests"]
    out = subprocess.run(cmd + (["-k", keyword] if keyword else []), cwd=ROOT, capture_output=True, text=True)
    nodes = [ln.strip() for ln in out.stdout.splitlines() if "::" in ln]
    if out.returncode not in (0, 5):   # 5: nothing selected
        raise RuntimeError("pytest --collect-only failed: " + " | ".join((out.stdout + out.stderr).splitlines()[-5:]))
    return nodes


def timed_cheats() -> set[str]:
    """Node ids of the cuda cheats judged by their timing (see TIMED_EXPECTATIONS)."""
    timed = set()
    for toml in sorted((ROOT / "tests" / "cheats").glob("*/*/cheat.toml")):
        meta = tomllib.loads(toml.read_text())
        if meta.get("backend") == "cuda" and meta.get("expect") in TIMED_EXPECTATIONS:
            timed.add(f"tests/test_cheats.py::test_cuda_cheat_is_caught[{toml.parent.parent.name}/{toml.parent.name}]")
    return timed


def phase_of(node: str, timed: set[str]) -> str:
    """The phase a GPU test runs in (see the module docstring)."""
    function = node.split("::")[-1].split("[")[0]
    if node in GATE:
        return "gate"
    if node.startswith("tests/test_cheats.py::"):
        return "timed" if node in timed else "shared"
    if function in SHARED_TESTS:
        return "shared"
    if function == "test_solution_gets_full_marks":
        return "full_marks"
    if function in LADDER_TESTS:
        return "ladder"
    if node.startswith("tests/test_bundle_gpu.py::"):
        return "bundle"
    if node.split("::")[0] in ISOLATED_FILES:
        return "isolated"
    return "serial"


def plan(nodes: list[str]) -> dict[str, list[str]]:
    """Every node id in exactly one phase, in the order they run; the full-marks phase longest
    first (ex12 compiles three workers' modules), so a cut at the time limit loses the short ones."""
    timed = timed_cheats()
    phases: dict[str, list[str]] = {name: [] for name in PHASES}
    for node in nodes:
        phases[phase_of(node, timed)].append(node)
    phases["full_marks"].sort(reverse=True)
    return phases


def pytest(nodes: list[str], log: Path, limit_s: float) -> subprocess.Popen:
    """One pytest process over ``nodes`` writing to ``log``, stopped with SIGINT at ``limit_s``
    (pytest still prints what passed and failed)."""
    cmd = ["timeout", "-s", "INT", "-k", "20", str(max(1, int(limit_s))), sys.executable, "-m", "pytest", "-m", "gpu",
           "-v", "-rA", "--tb=short", "--durations=15", "-p", "no:cacheprovider", *nodes]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "160"})


def log_text(log: Path) -> str:
    """A phase's pytest log ("" before pytest wrote one)."""
    return log.read_text(errors="replace") if log.is_file() else ""


def outcome(log: Path) -> tuple[list[str], list[str], str]:
    """(passed node ids, failed or errored node ids with their reason, pytest's last line)."""
    text = log_text(log)
    passed = re.findall(r"^PASSED (\S+)", text, flags=re.M)
    failed = [m.group(0)[:300] for m in re.finditer(r"^(FAILED|ERROR) .*$", text, flags=re.M)]
    last = next((ln for ln in reversed(text.splitlines())
                 if re.search(r"passed|failed|error|skipped|no tests ran", ln)), "")
    return passed, failed, last.strip("= ")


def judged(log: Path) -> list[str]:
    """The node ids that have an outcome in ``log`` (pytest -v's progress lines), in the order they
    ended; [] when there is no log."""
    text = log_text(log)
    return re.findall(r"^(tests/\S+) (?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)", text, flags=re.M)


def unfinished(group: list[str], log: Path) -> list[str]:
    """One line naming the first test of ``group`` with no outcome in ``log`` (pytest -v: the one
    running when the limit stopped pytest, so a hang shows here) and how many more had none; []
    when every test has an outcome."""
    done = set(judged(log))
    rest = [n for n in group if n not in done]
    return [f"not finished: {rest[0]} (running when the limit stopped it; {len(rest) - 1} more not started)"] \
        if rest else []


def failure_text(log: Path, node: str) -> str:
    """The body of ``node``'s section in the FAILURES part of ``log`` (pytest -rA --tb=short: a
    "____ name ____" header, up to the next header or "====" line); "" when it has none."""
    text = log_text(log)
    name = re.escape(node.split("::")[-1])
    m = re.search(rf"^_+ {name} _+$\n(.*?)(?=^_{{3,}} |^={{3,}})", text, flags=re.M | re.S)
    return m.group(1) if m else ""


def cut_by_limit(failed: list[str], log: Path, returncode: int) -> list[str]:
    """``failed`` with the failures the limit caused relabelled "not finished": when the limit
    stopped pytest (``timeout`` exits 124), a test that calls the CLI through click's CliRunner
    takes the SIGINT as its own KeyboardInterrupt, prints click's "Aborted!" and fails an assertion
    (pytest then goes on until the KILL). Such a failure is the last test with an outcome whose
    failure text holds "Aborted!"; it did not finish, it did not fail. Any other failure stays."""
    order = judged(log)
    if returncode != 124 or not order or "Aborted!" not in failure_text(log, order[-1]):
        return failed
    last = order[-1]
    return [f"not finished: {last} (the limit's SIGINT stopped it; its FAILED line is the interrupt, "
            "not the test: run it again with more --limit-s)" if f.startswith(f"FAILED {last} ") or f == f"FAILED {last}"
            else f for f in failed]


def measure_ceilings() -> str:
    """Measure (or read from the cache) every ceiling kind, alone on the GPU; one line."""
    code = ("from grader import device as d; i = d.detect(); "
            "print('ceilings', d.ceilings(i, {'fp32', 'fp16', 'fp8'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return (out.stdout + out.stderr).strip().splitlines()[-1] if (out.stdout + out.stderr).strip() else "ceilings: ?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phases", default=",".join(PHASES),
                    help=f"comma-separated, run in this order: {', '.join(PHASES)} (default all)")
    ap.add_argument("-k", dest="keyword", default="", help="only the GPU tests this pytest -k expression selects")
    ap.add_argument("--list", action="store_true", help="print the plan (phase, count, node ids) and exit; no GPU needed")
    ap.add_argument("--jobs", type=int, default=4, help="concurrent pytest processes in the shared phase (default 4)")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out")), help="folder for logs/")
    ap.add_argument("--limit-s", type=float, default=560, help="wall-clock limit for the whole run, s (default 560)")
    args = ap.parse_args()
    phases = [x.strip() for x in args.phases.split(",") if x.strip()]
    unknown = sorted(set(phases) - set(PHASES))
    if unknown:
        ap.error(f"--phases: unknown {', '.join(unknown)}; choose from {', '.join(PHASES)}")
    try:
        nodes = plan(collect(args.keyword))
    except RuntimeError as exc:
        print(f"gpu_suite: {exc}", file=sys.stderr)
        return 1
    if "gate" in phases and "full_marks" in phases:   # the gate grades ex01 already
        nodes["full_marks"] = [n for n in nodes["full_marks"] if n not in GATE]
    if args.list:
        for phase in phases:
            print(f"{phase}: {len(nodes[phase])}")
            print("".join(f"  {n}\n" for n in nodes[phase]), end="")
        return 0
    logs = args.out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()

    def left() -> float:
        return args.limit_s - (time.monotonic() - start)

    rows: list[tuple[str, int, int, list[str], float, str]] = []   # phase, selected, passed, failed, wall s, pytest

    def alone(name: str, selected: list[str]) -> None:
        t0 = time.monotonic()
        returncode = pytest(selected, logs / f"{name}.txt", left() - 5).wait()
        passed, failed, last = outcome(logs / f"{name}.txt")
        failed = cut_by_limit(failed, logs / f"{name}.txt", returncode)
        rows.append((name, len(selected), len(passed), failed + unfinished(selected, logs / f"{name}.txt"),
                     time.monotonic() - t0, last))

    print(time.strftime("gpu_suite %Y-%m-%d %H:%M:%S UTC", time.gmtime()), flush=True)
    if shutil.which("nvidia-smi"):
        subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu",
                        "--format=csv"], check=False)
    ceilings_done = False
    for phase in phases:
        selected = nodes[phase]
        if not selected:
            continue
        if left() < 20:
            rows.append((phase, len(selected), 0, [f"{phase}: not run, the time limit (--limit-s) was spent"], 0.0, ""))
            continue
        if phase == "gate":
            alone("gate", selected)
            if rows[-1][3] or rows[-1][2] < len(selected):
                print(f"== gate FAILED: nothing else was run ({rows[-1][5]})")
                print(log_text(logs / "gate.txt")[-3000:])
                return 2
            continue
        if not ceilings_done:
            # the measured ceilings are cached at their first measurement on a quiet GPU: take it
            # before the shared phase's concurrent grades (a low fp32 rate made ex11's reference
            # "implausible" in the first run of this script)
            print(measure_ceilings(), flush=True)
            ceilings_done = True
        if phase == "shared":
            t0 = time.monotonic()
            groups = [selected[i::args.jobs] for i in range(args.jobs)]
            procs = [pytest(g, logs / f"shared-{i}.txt", left() - 10) for i, g in enumerate(groups) if g]
            codes = [p.wait() for p in procs]
            results = [outcome(logs / f"shared-{i}.txt") for i in range(len(procs))]
            problems = [f for i, (g, r) in enumerate(zip(groups, results))
                        for f in cut_by_limit(r[1], logs / f"shared-{i}.txt", codes[i])
                        + unfinished(g, logs / f"shared-{i}.txt")]
            # the concurrent jobs share the GPU's memory and time: a grade refused because another
            # job held the memory (DeviceMemoryError, the grader's own refusal) or kept the GPU busy
            # past the drain limit (another job's kernels, "kept it busy") says nothing about the
            # test; it is run again alone, in its own row
            crowded = [f.split()[1] for f in problems if f.startswith("FAILED ")
                       and ("DeviceMemoryError" in f or "kept it busy" in f)]
            problems = [f for f in problems if not (f.startswith("FAILED ") and f.split()[1] in crowded)]
            rows.append((f"shared x{len(procs)}", len(selected) - len(crowded),
                         sum(len(r[0]) for r in results), problems, time.monotonic() - t0,
                         "; ".join(r[2] for r in results)))
            if crowded and left() > 20:
                alone("shared-alone", crowded)
        else:
            alone(phase, selected)
            if phase == "full_marks":
                print("\n".join(log_text(logs / "full_marks.txt").splitlines()[-25:]))
    print(f"\n{'phase':<12} {'selected':>8} {'passed':>6} {'problems':>8} {'wall s':>7}  pytest")
    for name, count, npass, failed, wall, last in rows:
        print(f"{name:<12} {count:>8} {npass:>6} {len(failed):>8} {wall:>7.0f}  {last[:110]}")
    for row in rows:
        for f in row[3]:
            print("  " + f)
    print(f"total {time.monotonic() - start:.0f} s")
    return 0 if rows and all(r[2] == r[1] and not r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
