"""Points from correctness and speed.

- Correctness gates performance: a submission that fails any correctness case gets zero
  correctness points and no performance points.
- Per benchmark shape the speed is a ratio r = t_reference / t_submission. The reference time comes
  from the reference solution timed side by side in the same run when ``solutions/`` is present,
  else from ``calibration/<arch>.toml``; with neither, the achieved fraction of the measured
  ceiling (roofline) is used instead of r.
- Each value is clamped to [ratio_floor, ratio_cap] and the shapes are combined by a geometric
  mean, so one very fast shape cannot hide a slow one and one shape driven to ~0 s cannot
  collapse the aggregate.
- Points follow a piecewise-linear curve: zero at or below the ``*_zero`` threshold, full at or
  above ``*_full`` (the spec's ``[performance]``, overridden per arch, e.g. ``[performance.sm_90]``).
- A result that is physically implausible (:func:`review_flags`: above the measured ceiling, faster
  than the reference by more than ``implausible_ratio``, a 0 ms time) gets no performance points
  until a person has reviewed it (:func:`withhold`); the instructor option ``grade EX
  --accept-implausible`` restores them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

from grader.spec import Thresholds

BASIS_TEXT = {
    "side-by-side": "ratio to the reference solution timed in this run",
    "calibration": "ratio to the reference time calibrated for this GPU",
    "roofline": "fraction of the measured ceiling (no reference time for this GPU)",
}


@dataclass(frozen=True)
class ShapePerf:
    """One benchmark shape: the submission's time (ms) and what it is compared with."""
    name: str
    time_ms: float | None
    reference_ms: float | None            # side by side, this run
    calibrated_ms: float | None           # from calibration/<arch>.toml
    roofline_fraction: float | None       # achieved / ceiling
    failure: str | None = None


@dataclass(frozen=True)
class ShapeScore:
    name: str
    value: float | None       # ratio or roofline fraction, per ``Score.basis``
    clamped: float | None


@dataclass(frozen=True)
class Score:
    """The breakdown: points per part, the basis of the speed score, per-shape values and the
    clamped geometric mean they aggregate to, and the reason when performance scored zero."""
    correctness: float
    correctness_max: float
    performance: float
    performance_max: float
    basis: str | None
    shapes: tuple[ShapeScore, ...]
    aggregate: float | None
    note: str = ""
    withheld: float = 0.0     # performance points earned but withheld pending review (implausible result)

    @classmethod
    def unscored(cls, points_correctness: float, points_performance: float, note: str) -> "Score":
        """No points at all (not graded, not correct, or a run that is not scored), and why."""
        return cls(0.0, points_correctness, 0.0, points_performance, None, (), None, note)

    @classmethod
    def correctness_only(cls, points_correctness: float, points_performance: float, note: str) -> "Score":
        """Full correctness points and no performance points, and why performance was not scored."""
        return cls(points_correctness, points_correctness, 0.0, points_performance, None, (), None, note)

    @property
    def total(self) -> float:
        return self.correctness + self.performance

    @property
    def maximum(self) -> float:
        return self.correctness_max + self.performance_max


def curve(x: float, zero: float, full: float) -> float:
    """Fraction of the points for value ``x``: 0 at or below ``zero``, 1 at or above ``full``,
    linear in between."""
    if x <= zero:
        return 0.0
    if x >= full:
        return 1.0
    return (x - zero) / (full - zero)


def clamped_geomean(values: Sequence[float], floor: float, cap: float) -> float:
    """Geometric mean of the values each clamped to [floor, cap].

    Raises:
        ValueError: for an empty sequence.
    """
    if not values:
        raise ValueError("no values to aggregate")
    logs = [math.log(min(max(v, floor), cap)) for v in values]
    return math.exp(sum(logs) / len(logs))


def choose_basis(shapes: Sequence[ShapePerf]) -> str | None:
    """The strongest comparison available for every shape."""
    if all(s.reference_ms for s in shapes):
        return "side-by-side"
    if all(s.calibrated_ms for s in shapes):
        return "calibration"
    if all(s.roofline_fraction is not None for s in shapes):
        return "roofline"
    return None


def score(correct: bool, shapes: Sequence[ShapePerf], thresholds: Thresholds,
          points_correctness: float, points_performance: float) -> Score:
    """Score one submission; see the module docstring for the rules."""
    if not correct:
        return Score.unscored(points_correctness, points_performance, "correctness failed, so performance was not scored")
    if not shapes:
        return Score.correctness_only(points_correctness, points_performance,
                                      "no benchmark shape was timed (all are hidden outside grading mode)")
    failed = [s for s in shapes if s.failure or s.time_ms is None]
    if failed:
        return Score.correctness_only(points_correctness, points_performance,
                                      f"timing failed on {failed[0].name}: {failed[0].failure or 'no time'}")
    basis = choose_basis(shapes)
    if basis is None:
        return Score.correctness_only(points_correctness, points_performance,
                                      "no reference time and no ceiling to compare with")
    per_shape = []
    for s in shapes:
        if basis in ("side-by-side", "calibration"):
            ref = s.reference_ms if basis == "side-by-side" else s.calibrated_ms
            v = ref / s.time_ms if s.time_ms > 0 else math.inf  # type: ignore[operator]  # inf: clamped to the cap
        else:
            v = s.roofline_fraction
        v = thresholds.ratio_floor if v is None or math.isnan(v) else float(v)
        per_shape.append(ShapeScore(s.name, v, min(max(v, thresholds.ratio_floor), thresholds.ratio_cap)))
    agg = clamped_geomean([p.value for p in per_shape], thresholds.ratio_floor, thresholds.ratio_cap)  # type: ignore[misc]
    if basis == "roofline":
        frac = curve(agg, thresholds.roofline_zero, thresholds.roofline_full)
    else:
        frac = curve(agg, thresholds.ratio_zero, thresholds.ratio_full)
    return Score(points_correctness, points_correctness, round(frac * points_performance, 2), points_performance,
                 basis, tuple(per_shape), agg)


# The memory ceiling is the copy bandwidth (reads and writes). Read-mostly kernels legitimately run
# a little above it: on the H200 cupy.sum read at 4495 GB/s against a 4255 GB/s copy (1.056x),
# and the ex04 reference measured 1.064x in grade (benchmarks/RESULTS.md, 2026-11-30).
PLAUSIBLE_CEILING_FRACTION = 1.15


def review_flags(shapes: Sequence[ShapePerf], thresholds: Thresholds) -> list[str]:
    """Results a person should look at: beating the ceiling (beyond
    :data:`PLAUSIBLE_CEILING_FRACTION`) or the reference (beyond ``implausible_ratio``)."""
    flags = []
    for s in shapes:
        if s.roofline_fraction is not None and s.roofline_fraction > PLAUSIBLE_CEILING_FRACTION:
            flags.append(f"{s.name}: {s.roofline_fraction:.0%} of the measured ceiling is above what the GPU can do")
        if s.time_ms is not None and s.time_ms <= 0 and not s.failure:
            flags.append(f"{s.name}: a time of 0 ms is implausible (a frozen or patched timer?)")
            continue
        for label, ref in (("reference", s.reference_ms), ("calibrated reference", s.calibrated_ms)):
            if ref and s.time_ms and ref / s.time_ms > thresholds.implausible_ratio:
                flags.append(f"{s.name}: {ref / s.time_ms:.1f}x faster than the {label} "
                             f"(more than {thresholds.implausible_ratio:g}x is implausible)")
                break
    return flags


ACCEPT_OPTION = "--accept-implausible"


def withhold(sc: Score, flags: Sequence[str], accepted: bool = False) -> Score:
    """``sc`` with its performance points withheld (moved to ``withheld``) when ``flags`` (from
    :func:`review_flags`) name a physically implausible result, unless an instructor ``accepted``
    them after review; the note says which and how to restore them."""
    if not flags or sc.performance <= 0:
        return sc
    if accepted:
        note = (f"implausible result accepted by the instructor ({ACCEPT_OPTION}): "
                f"{sc.performance:g} performance points kept")
        return replace(sc, note=f"{sc.note}; {note}" if sc.note else note)
    note = (f"{sc.performance:g} performance points withheld until reviewed: {flags[0]}"
            f"{f' (and {len(flags) - 1} more)' if len(flags) > 1 else ''}; after review an instructor restores "
            f"them with grade EX {ACCEPT_OPTION}")
    return replace(sc, performance=0.0, withheld=sc.performance, note=f"{sc.note}; {note}" if sc.note else note)
