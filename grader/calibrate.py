"""``grade calibrate``: time the reference solutions on this GPU for ``calibration/<arch>.toml``.

Each reference is graded (it must be correct) with a stricter stop rule than a student run. A
measurement is refused, with the reason, when it is too noisy (the median's relative standard error
above :data:`MAX_RSE`, or IQR / median above :data:`MAX_SPREAD`), when the SM clock was throttled,
or when work ran outside the timed events.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Mapping

from grader.device import ClockState
from grader.timing import StopPolicy, TimingStats

MAX_RSE = 0.01       # 1 % relative standard error of the median
MAX_SPREAD = 0.10    # IQR at most 10 % of the median
POLICY = StopPolicy(min_samples=20, max_samples=600, target_rse=0.003, max_seconds=4.0, warmup_ms=50)


def verdict(stats: TimingStats | None, clock: ClockState | None, outside_events: bool = False,
            others: Callable[[], list[str]] = lambda: [], outside_ms: float | None = None,
            allowed_ms: float | None = None) -> str | None:
    """None when a shape's timing is fit to calibrate with, else why not and what to change (one
    line). ``others()`` lists other processes on the GPU (grader.device.foreign_gpu_processes); it
    is asked only when a measurement is refused."""
    def hint() -> str:
        seen = others()
        return (f"; another process is using the GPU ({', '.join(seen)}): stop it and re-run" if seen
                else "; re-run on a quiet GPU")
    if stats is None:
        return "no timing samples"
    if stats.rse > MAX_RSE:
        return f"too noisy: the median's relative standard error is {stats.rse:.1%} (limit {MAX_RSE:.0%}){hint()}"
    if stats.iqr_ms > MAX_SPREAD * stats.median_ms:
        return (f"too noisy: IQR {stats.iqr_ms:.4f} ms is {stats.iqr_ms / stats.median_ms:.0%} of the median "
                f"(limit {MAX_SPREAD:.0%}){hint()}")
    if clock is not None and clock.throttled:
        reasons = ", ".join(clock.throttle) or f"SM clock {clock.sm_mhz} of {clock.max_sm_mhz} MHz"
        return f"the GPU was throttled ({reasons}) while the kernels ran; let it cool down or check its power limit"
    if outside_events:
        amount = (f" ({outside_ms * 1e3:.0f} us per call, {allowed_ms * 1e3:.0f} us allowed)"
                  if outside_ms is not None and allowed_ms is not None else "")
        return f"the reference solution's work ran outside the timed events{amount}{hint()}"
    return None


@dataclass(frozen=True)
class ShapeCalibration:
    """One benchmark shape of one exercise: median and IQR in ms, the sample count, and the reason
    it was refused (None when accepted)."""
    exercise: str
    shape: str
    median_ms: float | None
    iqr_ms: float | None
    samples: int
    refused: str | None


def calibrate_exercise(name: str, grade_reference: Callable[[], object],
                       others: Callable[[], list[str]] = lambda: []) -> list[ShapeCalibration]:
    """Grade the reference once (``grade_reference()`` returns a GradeResult) and judge each shape;
    ``others()`` lists other processes on the GPU, for the reason of a refusal."""
    r = grade_reference()
    if not r.graded or not r.correct:  # type: ignore[attr-defined]
        why = r.reason or (r.smallest_failure.message if r.smallest_failure else "not correct")  # type: ignore[attr-defined]
        return [ShapeCalibration(name, "*", None, None, 0, f"the reference solution is not correct: {why}")]
    out = []
    for b in r.benchmarks:  # type: ignore[attr-defined]
        s = b.submission
        why = s.failure or verdict(s.stats, b.clock, s.outside_events, others, s.overhead_ms_per_call,
                                   s.allowed_ms_per_call)
        out.append(ShapeCalibration(name, b.name, s.stats.median_ms if s.stats else None,
                                    s.stats.iqr_ms if s.stats else None, s.stats.n if s.stats else 0, why))
    return out


def calibrate_all(exercises: list, grade_fn: Callable[..., object],
                  others: Callable[[], list[str]] = lambda: [],
                  progress: Callable[[str], None] = lambda name: None) -> list[ShapeCalibration]:
    """Calibrate each exercise's reference solution; ``grade_fn(spec, folder, reference, policy)``
    grades on this GPU; ``others()`` lists other processes on the GPU; ``progress(name)`` is
    called before each exercise. An exercise without ``solutions/<name>/solution.py`` is refused."""
    from grader.spec import load_spec
    results: list[ShapeCalibration] = []
    for ex in exercises:
        progress(ex.name)
        if not (ex.solution / "solution.py").is_file():
            results.append(ShapeCalibration(ex.name, "*", None, None, 0,
                                            f"no reference solution at {ex.solution / 'solution.py'}"))
            continue
        spec = load_spec(ex.spec_path)
        results += calibrate_exercise(ex.name, lambda: grade_fn(spec, ex.solution, None, POLICY), others)
    return results


def entries(results: list[ShapeCalibration], keep_refused: bool = False) -> dict[str, dict[str, Mapping[str, float]]]:
    """Exercises whose every shape was accepted, as ``write_calibration`` takes them (an exercise
    with any refused shape is left out whole, so the file never mixes old and new times).
    ``keep_refused`` keeps every measured shape (for reference times shared within one batch run,
    where every student is compared with the same numbers)."""
    refused = set() if keep_refused else {c.exercise for c in results if c.refused is not None}
    out: dict[str, dict[str, Mapping[str, float]]] = {}
    for c in results:
        if c.exercise not in refused and c.median_ms is not None:
            out.setdefault(c.exercise, {})[c.shape] = {"median_ms": c.median_ms, "iqr_ms": c.iqr_ms or 0.0,
                                                        "samples": c.samples}
    return out


def meta(device: object, versions: Mapping[str, str]) -> dict[str, object]:
    """The [meta] table: arch, device, driver and CUDA runtime, package versions, date."""
    return {"arch": device.arch, "device": device.name, "driver": device.driver,  # type: ignore[attr-defined]
            "runtime": device.runtime, "date": time.strftime("%Y-%m-%d"), **dict(versions)}  # type: ignore[attr-defined]
