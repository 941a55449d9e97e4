"""GPU tests (marked ``gpu``, skipped without a GPU; on the device, benchmarks/gpu_suite.py runs them all)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from grader.spec import Limits
from tests.conftest import CHEATS, FIXTURES, ROOT, cheat_submission, grade_folder, spec_of

pytestmark = pytest.mark.gpu
EXERCISES = sorted(p.name for p in (ROOT / "solutions").iterdir() if (ROOT / "exercises" / p.name).is_dir())
NAIVE = sorted(p.name[:-len("_naive")] for p in (FIXTURES / "gpu").glob("*_naive"))


@pytest.mark.parametrize("name", EXERCISES)
def test_solution_gets_full_marks(name: str) -> None:
    spec = spec_of(name)
    r = grade_folder(spec, ROOT / "solutions" / name, reference=ROOT / "solutions" / name)
    assert r.status == "graded", r.reason
    assert r.correct, r.smallest_failure
    assert r.score.correctness == spec.points_correctness
    assert r.score.performance == spec.points_performance, (r.score, [b.ratio for b in r.benchmarks])
    assert all(b.submission.stats.n >= 3 for b in r.benchmarks)   # rounds (each the mean of 3 calls)
    for b in r.benchmarks:   # the harness's time per call, in the log (pytest -rA), for benchmarks/RESULTS.md
        print(f"overhead {name} {b.name}: {b.calls_per_round} calls per round, outside the events per call "
              f"submission {b.submission.overhead_ms_per_call * 1e3:.1f} us, reference "
              f"{b.reference.overhead_ms_per_call * 1e3:.1f} us (allowed {b.submission.allowed_ms_per_call * 1e3:.1f} us), "
              f"ratio {b.ratio:.3f}")


@pytest.mark.parametrize("name", EXERCISES)
def test_stub_scores_zero_cleanly(name: str) -> None:
    r = grade_folder(spec_of(name), ROOT / "student_template" / name, reference=ROOT / "solutions" / name)
    assert r.status == "graded"
    assert r.score.total == 0
    assert r.smallest_failure is not None and r.smallest_failure.status == "fail"
    if not any(t.inplace for t in spec_of(name).outputs):   # an in-place output keeps its initial values
        assert "never written" in " ".join(r.smallest_failure.details)
    assert r.worker_restarts == 0


def _ex01_small_limits():
    spec = spec_of("ex01_vector_add")
    return replace(spec, limits=Limits(compile_s=120, case_s=5, total_s=300))


def test_out_of_bounds_write_is_caught_by_the_guards() -> None:
    r = grade_folder(_ex01_small_limits(), FIXTURES / "gpu" / "oob_write", benchmark=False)
    assert r.status == "graded" and not r.correct
    f = r.smallest_failure
    assert f.status == "fail" and "wrote outside 'c'" in f.message and "after the end" in f.message
    # the guards caught it without a crash, and grading went on through every edge case
    assert r.worker_restarts == 0
    assert sum(c.origin == "edge" for c in r.cases) == sum(not e.hidden for e in _ex01_small_limits().edge_cases)


def test_hang_is_killed_and_named() -> None:
    r = grade_folder(_ex01_small_limits(), FIXTURES / "gpu" / "hang", benchmark=False)
    assert r.status == "graded" and r.score.total == 0
    assert r.smallest_failure.status == "timeout"
    assert "no answer within 5 s" in r.smallest_failure.message
    assert r.worker_restarts >= 1


def test_illegal_address_is_isolated_and_named() -> None:
    r = grade_folder(_ex01_small_limits(), FIXTURES / "gpu" / "illegal_address", benchmark=False)
    assert r.status == "graded" and r.score.total == 0
    assert r.smallest_failure.status == "illegal_address", r.smallest_failure
    assert "illegal memory access" in r.smallest_failure.message
    assert r.worker_restarts >= 2  # restarted after each fault, and grading went on
    assert len(r.cases) >= 3


def test_grading_after_a_fault_is_unaffected() -> None:
    """A fault in one submission leaves the GPU usable: the next grade is clean."""
    grade_folder(_ex01_small_limits(), FIXTURES / "gpu" / "illegal_address", benchmark=False)
    r = grade_folder(spec_of("ex01_vector_add"), ROOT / "solutions" / "ex01_vector_add", benchmark=False)
    assert r.correct


def _naive_shapes(name: str):
    """The spec, its 2^30-element ex06 shapes cut to 2^26: the naive histogram's global atomics
    take ~1 s per call on one value at 2^30 (110 s of the suite for this one test, 2026-12-01);
    the reference is timed side by side on the same shapes, so the ratio keeps its meaning."""
    spec = spec_of(name)
    if name != "ex06_histogram":
        return spec
    return replace(spec, benchmarks=tuple(replace(b, dims=tuple((k, min(v, 2**26)) for k, v in b.dims))
                                          for b in spec.benchmarks))


@pytest.mark.parametrize("name", NAIVE)
def test_naive_kernel_is_correct_and_scores_fewer_performance_points(name: str) -> None:
    spec = _naive_shapes(name)
    r = grade_folder(spec, FIXTURES / "gpu" / f"{name}_naive", reference=ROOT / "solutions" / name)
    assert r.correct, r.smallest_failure
    assert r.score.performance < 0.25 * spec.points_performance, [s.value for s in r.score.shapes]


def test_uncoalesced_variant_scores_fewer_points() -> None:
    name = "ex01_vector_add"
    r = grade_folder(spec_of(name), FIXTURES / "gpu" / "uncoalesced_add", reference=ROOT / "solutions" / name)
    assert r.correct
    assert r.score.performance < 0.5 * r.score.performance_max, [b.ratio for b in r.benchmarks]


def test_same_score_five_times() -> None:
    name = "ex07_softmax"
    results = [grade_folder(spec_of(name), ROOT / "solutions" / name, reference=ROOT / "solutions" / name, seed=0)
               for _ in range(5)]
    for r in results:
        print(f"SAME {r.score.total:.2f} " + " ".join(
            f"{b.name}: x{b.calls_per_round} sub {b.submission.time_ms:.4f} ref {b.reference.time_ms:.4f} ms, outside "
            f"{b.submission.overhead_ms_per_call * 1e3:.0f}/{b.reference.overhead_ms_per_call * 1e3:.0f} us of "
            f"{b.submission.allowed_ms_per_call * 1e3:.0f};" for b in r.benchmarks) + f" flags {r.flags}")
    scores = [r.score.total for r in results]
    assert len(set(scores)) == 1, scores


def test_compile_error_is_reported_with_line(tmp_path) -> None:
    (tmp_path / "kernel.cu").write_text('extern "C" __global__ void vector_add(float* c)\n{\n  c[0] = undefined_name;\n}\n')
    (tmp_path / "solution.py").write_text((ROOT / "student_template" / "ex01_vector_add" / "solution.py").read_text())
    r = grade_folder(spec_of("ex01_vector_add"), tmp_path)
    assert r.status == "not_graded" and r.reason_kind == "compile_error"
    assert "kernel.cu:3: error:" in r.reason and "undefined_name" in r.reason


# -- the GEMM ladder ------------------------------------------------------------------------------------
# (fixture, exercise, largest share of the performance points it may score). Timed without the
# 8192^3 shape to keep the suite short: the naive kernels take seconds per call there.
# share: the most of the performance points the previous rung may keep. ex09's uncoalesced variant
# keeps 6.4 of 60 on the H200 (2026-12-01: ratios 0.16 at 4096^3, 0.08 at 8192x8192x256, 0.41 at the
# irregular 8205x2949x5921 that issue 19 added, where uncoalesced B reads cost less).
# The previous rung of ex10 and ex11 is the earlier exercise's reference solution itself (graded
# on the next exercise's spec), not a copy of it.
LADDER = [("ex09_gemm_naive_uncoalesced", "ex09_gemm_naive", 0.15),
          ("solutions/ex09_gemm_naive", "ex10_gemm_smem", 0.5),
          ("solutions/ex10_gemm_smem", "ex11_gemm_regtile", 0.5),
          ("ex12_gemm_tensorcore_prev", "ex12_gemm_tensorcore", 0.5)]


def _without_8192_cubed(name: str):
    spec = spec_of(name)
    return replace(spec, benchmarks=tuple(b for b in spec.benchmarks if not b.name.startswith("8192^3")))


@pytest.mark.parametrize("fixture, name, share", LADDER, ids=[f for f, _, _ in LADDER])
def test_previous_rung_is_correct_and_scores_clearly_fewer_points(fixture: str, name: str, share: float) -> None:
    spec = _without_8192_cubed(name)
    folder = ROOT / fixture if fixture.startswith("solutions/") else FIXTURES / "gpu" / fixture
    r = grade_folder(spec, folder, reference=ROOT / "solutions" / name)
    assert r.correct, r.smallest_failure
    ratios = {b.name: round(b.ratio, 3) for b in r.benchmarks}
    print(f"LADDER {fixture}: performance {r.score.performance:.1f}/{r.score.performance_max:g}, ratios {ratios}")
    assert r.score.performance <= share * r.score.performance_max, ratios


def test_float16_accumulators_fail_ex12() -> None:
    r = grade_folder(_without_8192_cubed("ex12_gemm_tensorcore"), FIXTURES / "gpu" / "ex12_gemm_tensorcore_fp16acc",
                     benchmark=False)
    assert not r.correct and r.score.total == 0
    assert "norm-wise relative error" in " ".join(r.smallest_failure.details)


def test_ex12_without_tensor_core_instructions_gets_no_performance_points() -> None:
    name = "ex12_gemm_tensorcore"
    r = grade_folder(_without_8192_cubed(name), FIXTURES / "gpu" / "ex12_gemm_tensorcore_nomma",
                     reference=ROOT / "solutions" / name)
    assert r.correct, r.smallest_failure
    assert r.score.performance == 0 and "required_ptx" in r.score.note
    assert any("required_ptx" in f for f in r.flags)


def test_ex12_reference_on_ex13_is_correct_and_scores_no_performance_points(tmp_path) -> None:
    """The ladder below ex13: ex12's reference (mma.sync; copied in from solutions/, wrapped for the
    TN layout and the half-precision output by the fixture) is correct, and without wgmma in its
    PTX it keeps none of ex13's performance points. Its ratios go to the log for the README."""
    import shutil
    folder = tmp_path / "ex13_gemm_hopper_mmasync"
    shutil.copytree(FIXTURES / "gpu" / "ex13_gemm_hopper_mmasync", folder)
    shutil.copy(ROOT / "solutions" / "ex12_gemm_tensorcore" / "kernel.cu", folder / "kernel.cu")
    shutil.copy(ROOT / "solutions" / "ex12_gemm_tensorcore" / "solution.py", folder / "ex12_solution.py")
    name = "ex13_gemm_hopper"
    r = grade_folder(_without_8192_cubed(name), folder, reference=ROOT / "solutions" / name)
    print(f"LADDER ex13_gemm_hopper_mmasync: ratios {({b.name: round(b.ratio, 3) for b in r.benchmarks})}")
    assert r.correct, r.smallest_failure
    assert r.score.performance == 0 and "required_ptx" in r.score.note


def test_wgmma_without_tma_is_correct_and_sits_between_the_rungs(tmp_path) -> None:
    """The middle rung of ex13's ladder (tests/variants.py, ex13_gemm_hopper_wgmma_cp_async): the
    reference's wgmma consumers fed by cp.async copies instead of the TMA. Correct; wgmma is in its
    PTX, so its speed is scored: some performance points (ex12's mma.sync gets none, above) and
    fewer than the reference's full marks. Its ratios go to the log for the README."""
    from tests.variants import build
    name = "ex13_gemm_hopper"
    folder = build("ex13_gemm_hopper_wgmma_cp_async", tmp_path / "wgmma_cp_async")
    r = grade_folder(_without_8192_cubed(name), folder, reference=ROOT / "solutions" / name)
    ratios = {b.name: round(b.ratio, 3) for b in r.benchmarks}
    print(f"LADDER ex13_gemm_hopper_wgmma_cp_async: performance {r.score.performance:.1f}/"
          f"{r.score.performance_max:g}, ratios {ratios}")
    assert r.correct, r.smallest_failure
    assert "required_ptx" not in r.score.note, r.score.note
    assert 0 < r.score.performance < r.score.performance_max, ratios


def test_a_wmma_submission_is_own_and_correct_in_grading() -> None:
    """<mma.h> compiles in grading, its code (inlined from CUDA's crt/ headers, possibly from the
    folder grader.static.crt_include_folder adds) counts as the submission's own in the worker as
    in the parent, and the kernels are correct (eighth session: no WMMA submission had been graded
    on the GPU; the crt/ headers were missing there)."""
    r = grade_folder(_without_8192_cubed("ex12_gemm_tensorcore"), FIXTURES / "gpu" / "ex12_gemm_tensorcore_wmma",
                     benchmark=False)
    assert r.correct, r.smallest_failure
    assert r.score.correctness == r.score.correctness_max and not any("required_ptx" in f for f in r.flags), r.flags


def test_cublas_loaded_at_run_time_is_rejected(tmp_path) -> None:
    """The source check misses a library reached through importlib; the worker's memory map does not."""
    (tmp_path / "kernel.cu").write_text('extern "C" __global__ void unused() {}\n')
    (tmp_path / "solution.py").write_text("import importlib\n_cp = importlib.import_module('cupy')\n"
                                          "def solve(a, b, c):\n    getattr(_cp, 'mat' + 'mul')(a, b, out=c)\n")
    r = grade_folder(_without_8192_cubed("ex11_gemm_regtile"), tmp_path, benchmark=False)
    assert not r.correct and r.score.total == 0
    assert r.smallest_failure.status == "forbidden_library" and "libcublas" in r.smallest_failure.message


def test_nvml_sees_the_workers_device_memory() -> None:
    """The device-memory cap relies on NVML listing the worker's PID (not so in some containers)."""
    from grader.sandbox import watch
    from grader.sandbox.supervisor import Worker, WorkerConfig
    w = Worker(WorkerConfig("cuda", ROOT / "solutions" / "ex01_vector_add", ("-std=c++17",), ("a", "b", "c"),
                            120, 20, 0, 1 << 34))
    try:
        assert w.ensure().ok
        used = watch.device_memory_bytes(watch.session_pids(w.proc.pid))
        print(f"NVML device memory of the worker: {used}; cuBLAS mapped at start-up: "
              f"{sorted(lib for lib in w.baseline_libraries or () if 'cublas' in lib)}")
        assert used is not None and used > 0
    finally:
        w.close()


def test_kernels_are_traced_and_a_library_kernel_is_named(tmp_path) -> None:
    spec = spec_of("ex04_reduction")
    own = grade_folder(spec, ROOT / "solutions" / "ex04_reduction", benchmark=False)
    assert own.correct and "kernels traced (CUPTI" in own.isolation, own.isolation
    r = grade_folder(spec, cheat_submission(CHEATS / "ex04_reduction" / "cupy_sum_library", tmp_path), benchmark=False)
    f = r.smallest_failure
    assert f is not None and f.status == "foreign_kernel" and r.score.total == 0
    assert "cupy_sum" in f.message and "of the submission's own sources (its kernels: unused)" in f.message


# Headers CUDA courses' students include. Each must compile in grading's own NVRTC compile on the
# grading machine, whose CUDA headers are CuPy's (not necessarily a full toolkit): the sixth session
# saw <mma.h> fail there (no crt/mma.h), which would fail every WMMA submission to ex12.
STUDENT_HEADERS = ("cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "mma.h", "cuda_pipeline.h", "cooperative_groups.h",
                   "cooperative_groups/memcpy_async.h", "cuda/barrier", "cuda/pipeline", "cuda/atomic")


@pytest.mark.parametrize("header", STUDENT_HEADERS)
def test_headers_students_use_compile_in_grading(header: str, tmp_path) -> None:
    from grader.kernel import CompileError, compile_source
    from grader.static import include_folders
    source = f'#include <{header}>\nextern "C" __global__ void k(float* x) {{ x[threadIdx.x] += 1.0f; }}\n'
    path = tmp_path / "kernel.cu"
    path.write_text(source)
    try:
        compile_source(source, path, ("-std=c++17",))
    except CompileError as exc:
        pytest.fail(f"<{header}> does not compile in grading on this machine (include folders "
                    f"{include_folders(('-std=c++17',))}): {str(exc)[:600]}")


def test_ex14_without_online_rescaling_fails() -> None:
    """FlashAttention without rescaling O and l when the running max grows is wrong once a row's
    keys span two tiles (the fixture is the reference with the rescale factor set to 1)."""
    name = "ex14_flash_attention"
    r = grade_folder(spec_of(name), FIXTURES / "gpu" / f"{name}_norescale", benchmark=False)
    assert r.status == "graded" and not r.correct and r.score.total == 0, r.smallest_failure


def test_fp8_gemm_without_the_per_block_promotion_fails(tmp_path) -> None:
    """ex15 with one accumulator over all of K and the scales applied once at the end (the first
    k-block's): wrong on any case whose scales differ between k-blocks, which the spec's scale
    distributions make every case with K >= 256 (the reference with its consumer loop replaced:
    tests/variants.py)."""
    from tests.variants import build
    name = "ex15_gemm_fp8_blockscaled"
    folder = build(f"{name}_no_promotion", tmp_path / "no_promotion")
    r = grade_folder(spec_of(name), folder, benchmark=False)
    assert r.status == "graded" and not r.correct and r.score.total == 0, r.smallest_failure
    assert r.smallest_failure.status == "fail" and r.worker_restarts == 0, r.smallest_failure


# -- ex16: the fixtures are the reference with one change each (tests/variants.py) -----------------
def test_paged_decode_reading_past_the_context_fails(tmp_path) -> None:
    """V rows past each context loaded (their scores masked, p = 0): 0 * NaN where [prepare]
    poisoned the slots no sequence reads: wrong output, no points."""
    from tests.variants import build
    name = "ex16_paged_decode_attention"
    folder = build(f"{name}_reads_past_context", tmp_path / "past")
    r = grade_folder(spec_of(name), folder, benchmark=False)
    assert r.status == "graded" and not r.correct and r.score.total == 0, r.smallest_failure
    assert r.smallest_failure.status == "fail" and r.worker_restarts == 0, r.smallest_failure


def test_paged_decode_without_split_k_is_correct_and_scores_clearly_fewer_points(tmp_path) -> None:
    """One CTA per (sequence, KV head): as fast as the reference at batch 64, far slower at batch 1
    over 131072 tokens (8 CTAs for 132 SMs), where split-K is the lesson. On the H200 (2026-12-03):
    35.5 of 60 performance points, ratios 1.02 / 0.158 / 1.04 / 0.76 (uneven batch)."""
    from tests.variants import build
    name = "ex16_paged_decode_attention"
    r = grade_folder(spec_of(name), build(f"{name}_no_split", tmp_path / "no_split"), reference=ROOT / "solutions" / name)
    assert r.correct, r.smallest_failure
    ratios = {b.name: round(b.ratio, 3) for b in r.benchmarks}
    print(f"LADDER {name}_no_split: performance {r.score.performance:.1f}/{r.score.performance_max:g}, ratios {ratios}")
    assert ratios["b1 ctx131072 hq32 hkv8 (split-K)"] < 0.3, ratios
    assert r.score.performance <= 0.7 * r.score.performance_max, ratios
