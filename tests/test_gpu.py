"""GPU tests (marked ``gpu``, skipped without a GPU; run on the device with benchmarks/gpu_check.py)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from grader.spec import Limits
from tests.conftest import FIXTURES, ROOT, grade_folder, spec_of

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
    assert all(b.submission.stats.n >= 10 for b in r.benchmarks)


@pytest.mark.parametrize("name", EXERCISES)
def test_stub_scores_zero_cleanly(name: str) -> None:
    r = grade_folder(spec_of(name), ROOT / "student_template" / name, reference=ROOT / "solutions" / name)
    assert r.status == "graded"
    assert r.score.total == 0
    assert r.smallest_failure is not None and r.smallest_failure.status == "fail"
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
    assert sum(c.origin == "edge" for c in r.cases) == len(_ex01_small_limits().edge_cases)


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


@pytest.mark.parametrize("name", NAIVE)
def test_naive_kernel_is_correct_and_scores_fewer_performance_points(name: str) -> None:
    spec = spec_of(name)
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
    scores = [grade_folder(spec_of(name), ROOT / "solutions" / name, reference=ROOT / "solutions" / name,
                           seed=0).score.total for _ in range(5)]
    assert len(set(scores)) == 1, scores


def test_compile_error_is_reported_with_line(tmp_path) -> None:
    (tmp_path / "kernel.cu").write_text('extern "C" __global__ void vector_add(float* c)\n{\n  c[0] = undefined_name;\n}\n')
    (tmp_path / "solution.py").write_text((ROOT / "student_template" / "ex01_vector_add" / "solution.py").read_text())
    r = grade_folder(spec_of("ex01_vector_add"), tmp_path)
    assert r.status == "not_graded" and r.reason_kind == "compile_error"
    assert "kernel.cu:3: error:" in r.reason and "undefined_name" in r.reason
