"""grader/scoring.py: the points curve, clamped geometric mean, basis choice, score and review flags."""
from __future__ import annotations

import math

import pytest

from grader.scoring import ShapePerf, choose_basis, clamped_geomean, curve, review_flags, score
from grader.spec import Thresholds

T = Thresholds()  # ratio 0.1 -> 0.8, roofline 0.05 -> 0.7, clamp [0.01, 1.25], implausible above 3


def side(name: str, time_ms: float, reference_ms: float) -> ShapePerf:
    return ShapePerf(name, time_ms, reference_ms, None, None)


# -- curve and aggregation --------------------------------------------------------------------------------
@pytest.mark.parametrize("x, expected", [
    (-1.0, 0.0), (0.0, 0.0), (0.1, 0.0),     # at or below zero
    (0.45, 0.5), (0.24, 0.2), (0.73, 0.9),   # linear between
    (0.8, 1.0), (1.25, 1.0), (100.0, 1.0),   # at or above full
])
def test_curve(x: float, expected: float) -> None:
    assert curve(x, 0.1, 0.8) == pytest.approx(expected)


@pytest.mark.parametrize("values, expected", [
    ([0.5], 0.5),
    ([0.25, 1.0], 0.5),
    ([0.001, 100.0], math.sqrt(0.01 * 1.25)),   # both ends clamped
    ([1e-9], 0.01),
    ([1e9, 1e9], 1.25),
    ([0.2, 0.4, 0.8], 0.4),
])
def test_clamped_geomean(values: list[float], expected: float) -> None:
    assert clamped_geomean(values, 0.01, 1.25) == pytest.approx(expected)


def test_clamped_geomean_empty_raises() -> None:
    with pytest.raises(ValueError, match="no values to aggregate"):
        clamped_geomean([], 0.01, 1.25)


@pytest.mark.parametrize("shapes, basis", [
    ([ShapePerf("a", 1, 2.0, 3.0, 0.5), ShapePerf("b", 1, 2.0, 3.0, 0.5)], "side-by-side"),
    ([ShapePerf("a", 1, 2.0, 3.0, 0.5), ShapePerf("b", 1, None, 3.0, 0.5)], "calibration"),
    ([ShapePerf("a", 1, 2.0, None, 0.5), ShapePerf("b", 1, None, 3.0, 0.5)], "roofline"),
    ([ShapePerf("a", 1, None, None, 0.0)], "roofline"),  # a fraction of 0 is still a fraction
    ([ShapePerf("a", 1, 2.0, None, 0.5), ShapePerf("b", 1, None, None, None)], None),
    ([ShapePerf("a", 1, None, None, None)], None),
])
def test_choose_basis_precedence(shapes: list[ShapePerf], basis: str | None) -> None:
    assert choose_basis(shapes) == basis


# -- score ------------------------------------------------------------------------------------------------
def test_correctness_gates_performance() -> None:
    s = score(False, [side("a", 1.0, 1.0)], T, 40, 60)
    assert (s.correctness, s.performance, s.total, s.maximum) == (0.0, 0.0, 0.0, 100.0)
    assert s.basis is None and s.shapes == () and s.aggregate is None
    assert s.note == "correctness failed, so performance was not scored"


@pytest.mark.parametrize("failed, note", [
    (ShapePerf("big", None, 1.0, None, None, failure="timeout: no answer within 7 s"),
     "timing failed on big: timeout: no answer within 7 s"),
    (ShapePerf("big", None, 1.0, None, None), "timing failed on big: no time"),
    (ShapePerf("big", 1.0, 1.0, None, None, failure="the worker reported malformed times"),
     "timing failed on big: the worker reported malformed times"),
])
def test_failed_timing_gives_zero_performance(failed: ShapePerf, note: str) -> None:
    s = score(True, [side("small", 1.0, 1.0), failed], T, 40, 60)
    assert (s.correctness, s.performance, s.performance_max) == (40, 0.0, 60)
    assert s.note == note and s.basis is None


def test_nothing_to_compare_with() -> None:
    s = score(True, [ShapePerf("a", 1.0, None, None, None)], T, 40, 60)
    assert (s.correctness, s.performance) == (40, 0.0)
    assert s.note == "no reference time and no ceiling to compare with"


def test_as_fast_as_the_reference_gets_full_points() -> None:
    s = score(True, [side("a", 2.0, 2.0), side("b", 0.5, 0.5)], Thresholds(ratio_zero=0.1, ratio_full=0.8), 40, 60)
    assert (s.correctness, s.performance, s.total) == (40, 60.0, 100.0)
    assert s.basis == "side-by-side" and s.aggregate == pytest.approx(1.0) and s.note == ""
    assert [(p.name, p.value, p.clamped) for p in s.shapes] == [("a", 1.0, 1.0), ("b", 1.0, 1.0)]


def test_partial_points_on_the_calibration_basis() -> None:
    shapes = [ShapePerf("a", 2.0, None, 1.0, 0.9), ShapePerf("b", 4.0, None, 2.0, 0.9)]
    s = score(True, shapes, T, 40, 60)
    # ratio 0.5 on both shapes: (0.5 - 0.1) / 0.7 * 60 = 34.2857 -> 34.29
    assert s.basis == "calibration" and s.aggregate == pytest.approx(0.5) and s.performance == 34.29


def test_near_zero_time_cannot_blow_up_the_aggregate() -> None:
    s = score(True, [side("a", 1e-12, 1.0), side("b", 5.0, 1.0)], T, 40, 60)
    assert s.shapes[0].value == pytest.approx(1e12) and s.shapes[0].clamped == 1.25
    assert s.shapes[1].clamped == pytest.approx(0.2)
    assert s.aggregate == pytest.approx(0.5)  # sqrt(1.25 * 0.2), not sqrt(1e12 * 0.2)
    assert s.performance == 34.29


def test_one_very_fast_shape_cannot_hide_a_slow_one() -> None:
    s = score(True, [side("a", 0.001, 1.0), side("b", 1.0, 0.01)], T, 40, 60)
    assert s.aggregate == pytest.approx(math.sqrt(1.25 * 0.01))  # 0.1118
    assert s.performance == 1.01  # (0.1118 - 0.1) / 0.7 * 60


def test_roofline_basis_uses_the_roofline_thresholds() -> None:
    shapes = [ShapePerf("a", 1.0, None, None, 0.375), ShapePerf("b", 2.0, None, None, 0.375)]
    s = score(True, shapes, T, 40, 60)
    assert s.basis == "roofline" and s.aggregate == pytest.approx(0.375)
    # roofline curve (0.05 -> 0.7): 0.5 of 60 points; the ratio curve (0.1 -> 0.8) would give 23.57
    assert s.performance == 30.0


def test_roofline_at_the_ceiling_gets_full_points() -> None:
    s = score(True, [ShapePerf("a", 1.0, None, None, 0.7)], T, 40, 60)
    assert s.performance == 60.0


# -- review flags -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, flags", [
    (ShapePerf("a", 1.0, None, None, 1.16), ["a: 116% of the measured ceiling is above what the GPU can do"]),
    (ShapePerf("a", 1.0, None, None, 1.15), []),
    (ShapePerf("a", 1.0, None, None, 1.064), []),  # a read-only stream above the copy ceiling: plausible
    (ShapePerf("a", 1.0, 4.0, None, None),
     ["a: 4.0x faster than the reference (more than 3x is implausible)"]),
    (ShapePerf("a", 1.0, 3.0, None, None), []),
    (ShapePerf("a", 1.0, None, 3.5, None),
     ["a: 3.5x faster than the calibrated reference (more than 3x is implausible)"]),
    (ShapePerf("a", 1.0, 5.0, 6.0, None), ["a: 5.0x faster than the reference (more than 3x is implausible)"]),
    (ShapePerf("a", None, 5.0, None, None, failure="crash"), []),
    (ShapePerf("a", 1.0, 2.0, 2.0, 0.8), []),
])
def test_review_flags(shape: ShapePerf, flags: list[str]) -> None:
    assert review_flags([shape], T) == flags


def test_review_flags_use_the_spec_threshold_and_cover_every_shape() -> None:
    shapes = [ShapePerf("a", 1.0, 2.5, None, 1.2), ShapePerf("b", 1.0, 1.0, None, 0.5)]
    assert review_flags(shapes, Thresholds(implausible_ratio=2.0)) == [
        "a: 120% of the measured ceiling is above what the GPU can do",
        "a: 2.5x faster than the reference (more than 2x is implausible)",
    ]


# -- known problems ---------------------------------------------------------------------------------------
def test_zero_time_does_not_crash() -> None:
    s = score(True, [side("a", 0.0, 1.0), side("b", 5.0, 1.0)], T, 40, 60)
    assert T.ratio_floor <= s.aggregate <= T.ratio_cap


def test_no_benchmark_shapes_does_not_crash() -> None:
    s = score(True, [], T, 40, 60)
    assert s.correctness == 40 and s.performance == 0.0 and s.note


def test_the_roofline_time_is_the_larger_of_the_memory_and_compute_times() -> None:
    """A GEMM with one short side is bound by its bytes, not its FLOPs (ex12's decode-like
    16x8192x8192: ~134 MB, ~2.1 GFLOP): its roofline time is bytes / bandwidth; a square one's is
    FLOPs / rate. Without a rate for the spec's ceiling kind there is no roofline."""
    from pathlib import Path
    from types import SimpleNamespace

    from grader.device import Ceilings
    from grader.grade import Grader
    from grader.spec import load_spec

    spec = load_spec(Path(__file__).resolve().parents[1] / "exercises" / "ex12_gemm_tensorcore" / "spec.toml")
    bench = {b.name: b for b in spec.benchmarks}
    grader = SimpleNamespace(spec=spec, ceilings=Ceilings(copy_gbps=4000.0, fp16_tflops=600.0))
    decode, square = bench["16x8192x8192"], bench["8192^3"]
    d = decode.as_dict()
    memory_ms = float(decode.bytes.evaluate(d)) / 4000e6
    assert Grader.floor_ms(grader, decode) == pytest.approx(memory_ms)
    assert memory_ms > float(decode.flops.evaluate(d)) / 600e9 * 5
    s = square.as_dict()
    assert Grader.floor_ms(grader, square) == pytest.approx(float(square.flops.evaluate(s)) / 600e9)
    assert Grader.floor_ms(SimpleNamespace(spec=spec, ceilings=Ceilings(copy_gbps=4000.0)), square) is None
