"""The JSON result file (``grade EX --format json``): versioned by ``schema_version``; the schema
is ``grader/report/schema.json`` (JSON Schema draft 2020-12)."""
from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from grader.grade import BenchResult, CaseResult, GradeResult
from grader.timing import ShapeResult

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("schema.json")


def _case(c: CaseResult | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {"token": c.token, "description": c.description, "origin": c.origin, "size": c.size, "status": c.status,
            "message": c.message, "details": list(c.details), "seconds": c.seconds}


def _shape(s: ShapeResult | None) -> dict[str, Any] | None:
    if s is None:
        return None
    st = s.stats
    return {"time_ms": s.time_ms, "median_ms": st.median_ms if st else None, "iqr_ms": st.iqr_ms if st else None,
            "q1_ms": st.q1_ms if st else None, "q3_ms": st.q3_ms if st else None, "rse": st.rse if st else None,
            "n": st.n if st else 0, "wall_ms_per_call": s.wall_ms_per_call,
            "overhead_ms_per_call": s.overhead_ms_per_call, "allowed_ms_per_call": s.allowed_ms_per_call,
            "drained_ms_per_call": s.drained_ms_per_call, "outside_events": s.outside_events,
            "failure": s.failure, "samples_ms": list(s.samples)}


def _bench(b: BenchResult) -> dict[str, Any]:
    return {"name": b.name, "dims": b.dims, "bytes": b.bytes, "flops": b.flops, "submission": _shape(b.submission),
            "reference": _shape(b.reference), "calibrated_ms": b.calibrated_ms, "ratio": b.ratio, "gbps": b.gbps,
            "tflops": b.tflops, "ceiling_fraction": b.ceiling_fraction, "calls_per_round": b.calls_per_round,
            "clock": asdict(b.clock) if b.clock else None}


def to_dict(r: GradeResult, exit_code: int) -> dict[str, Any]:
    """The result as JSON-ready data (see the schema)."""
    sc = r.score
    return {
        "schema_version": SCHEMA_VERSION,
        "exercise": r.exercise, "title": r.title, "submission": r.submission,
        "status": r.status, "reason": r.reason, "reason_kind": r.reason_kind, "exit_code": exit_code,
        "profile": r.profile, "seed": r.seed, "secret_used": r.secret_used,
        "started": r.started, "seconds": r.seconds,
        "device": asdict(r.device) if r.device else None,
        "ceilings": asdict(r.ceilings) if r.ceilings else None,
        "versions": r.versions, "isolation": r.isolation,
        "kernels": list(r.kernels),
        "correct": r.correct,
        "cases": [_case(c) for c in r.cases],
        "smallest_failure": _case(r.smallest_failure),
        "repro": r.repro,
        "benchmarks": [_bench(b) for b in r.benchmarks],
        "score": {"total": sc.total, "max": sc.maximum, "correctness": sc.correctness,
                  "correctness_max": sc.correctness_max, "performance": sc.performance,
                  "performance_max": sc.performance_max, "basis": sc.basis, "aggregate": sc.aggregate,
                  "shapes": [asdict(s) for s in sc.shapes], "note": sc.note,
                  "withheld": sc.withheld},
        "flags": list(r.flags),
        "hidden": {"cases": r.hidden_cases, "benchmarks": r.hidden_benchmarks},
        "worker_restarts": r.worker_restarts,
        **({"kernel_profile": r.kernel_profile} if r.kernel_profile is not None else {}),
    }


def error_dict(exercise: str, submission: str, kind: str, message: str, exit_code: int) -> dict[str, Any]:
    """A result file for a grade that could not produce a GradeResult: the submission could not be
    graded (exit code 3), or the grader or environment failed (no GPU, time limit, grader error)."""
    status = "not_graded" if exit_code == 3 else "error"  # 3: the submission's problem (see cli.EXIT_NOT_GRADED)
    # A submission that cannot be graded scores 0; a run the grader or the machine could not do has no
    # score at all (null), so that nobody reads it as a failing grade.
    points = 0.0 if status == "not_graded" else None
    return {"schema_version": SCHEMA_VERSION, "exercise": exercise, "submission": submission, "status": status,
            "reason": message, "reason_kind": kind, "exit_code": exit_code, "correct": False,
            "cases": [], "benchmarks": [], "flags": [],
            "score": {"total": points, "max": None, "correctness": points, "performance": points, "note": message}}


def _finite(obj: Any) -> Any:
    """JSON has no NaN or infinity: write null instead."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def write(data: dict[str, Any], path: Path | None) -> str:
    """Serialise ``data`` (non-finite floats as null) and write it to ``path`` when given."""
    text = json.dumps(_finite(data), indent=2, allow_nan=False, default=_default)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return text


def _default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())
