"""Gradescope's autograder ``results.json`` (https://gradescope-autograders.readthedocs.io,
"Autograder Specifications": top-level score, execution_time, output, tests[], leaderboard[]).

Each correctness group and each benchmark shape is one test; the leaderboard carries the speed
ratio (geometric mean over shapes, higher is better) and the total score.

A run that did not grade the submission is not a failing score. When the grader or the machine
failed (no GPU, time limit, grader error: exit code 4) or only the static checks ran
(``--compile-only``), the file has no ``score`` at all, neither at the top nor in any test:
Gradescope requires one of the two, so it shows the autograder as failed (to the instructor, who
re-runs it) instead of recording 0 points. A submission that cannot be graded (exit code 3: a
missing file, a compile error, a malformed ``solve``) does score 0, as it would on any machine.
"""
from __future__ import annotations

from typing import Any

from grader.grade import GradeResult


def _status(ok: bool) -> str:
    return "passed" if ok else "failed"


def to_dict(r: GradeResult) -> dict[str, Any]:
    """results.json for one graded submission."""
    sc = r.score
    tests: list[dict[str, Any]] = []
    if not r.graded:
        tests.append({"name": f"{r.exercise}: submission", "score": 0.0, "max_score": sc.maximum,
                      "status": "failed", "output": r.reason, "visibility": "visible"})
    else:
        passed = sum(c.passed for c in r.cases)
        lines = [f"{passed} of {len(r.cases)} cases passed"]
        if r.smallest_failure is not None:
            f = r.smallest_failure
            lines += [f"smallest failing case: {f.description}", f.message, *f.details[:2]]
            if r.repro:
                lines.append(f"reproduce: {r.repro}")
        tests.append({"name": f"{r.exercise}: correctness", "score": sc.correctness, "max_score": sc.correctness_max,
                      "status": _status(r.correct), "output": "\n".join(lines), "visibility": "visible"})
        per_shape = {s.name: s for s in sc.shapes}
        share = sc.performance_max / max(len(r.benchmarks), 1)
        for b in r.benchmarks:
            s = per_shape.get(b.name)
            st = b.submission.stats
            text = (f"median {st.median_ms:.4f} ms (IQR {st.iqr_ms:.4f}), {b.gbps or 0:,.0f} GB/s"
                    if st else (b.submission.failure or "not timed"))
            if b.ratio:
                text += f", {b.ratio:.2f}x the reference"
            if sc.withheld:
                text += f"; performance points withheld pending review ({sc.withheld:g} in all)"
            tests.append({"name": f"{r.exercise}: performance {b.name}",
                          "score": round(sc.performance / max(len(r.benchmarks), 1), 2), "max_score": round(share, 2),
                          "status": _status(b.submission.failure is None and s is not None),
                          "output": text, "visibility": "visible"})
        if not r.benchmarks:
            tests.append({"name": f"{r.exercise}: performance", "score": sc.performance,
                          "max_score": sc.performance_max, "status": _status(sc.performance > 0),
                          "output": sc.note, "visibility": "visible"})
    output = f"{r.exercise}: {sc.total:g} / {sc.maximum:g}. " + _sentence(sc.note)
    if r.flags:
        output += " Flagged for review: " + "; ".join(r.flags)
    return {
        "score": sc.total,
        "execution_time": round(r.seconds, 2),
        "output": output.strip(),
        "tests": tests,
        "leaderboard": [
            {"name": "speed vs reference", "value": round(sc.aggregate, 4) if sc.aggregate else 0},
            {"name": "score", "value": sc.total},
        ],
    }


def _sentence(text: str | None) -> str:
    """``text`` ending in exactly one full stop ("" stays "")."""
    text = (text or "").strip()
    return text.rstrip(".") + "." if text else ""


def error_dict(exercise: str, message: str, max_score: float = 0.0, exit_code: int = 4) -> dict[str, Any]:
    """results.json when grading could not run: exit code 3 (the submission cannot be graded) scores
    0 of ``max_score``; anything else (no GPU, grader error, time limit) carries no score (see the
    module docstring)."""
    if exit_code == 3:
        return {"score": 0.0, "execution_time": 0, "output": f"{exercise}: not graded: {message}",
                "tests": [{"name": f"{exercise}: submission", "score": 0.0, "max_score": max_score,
                           "status": "failed", "output": message, "visibility": "visible"}],
                "leaderboard": [{"name": "speed vs reference", "value": 0}, {"name": "score", "value": 0.0}]}
    return {"execution_time": 0,
            "output": f"{exercise}: NOT GRADED: {_sentence(message)} This is not a score: the grader could not run here.",
            "tests": [{"name": f"{exercise}: grading", "output": f"not graded: {message}", "visibility": "visible"}]}


def static_dict(exercise: str, problems: list[str], verdict: str, details: list[str]) -> dict[str, Any]:
    """results.json for ``--compile-only``: the static checks as tests, without a score (it is not
    a grade; see the module docstring)."""
    return {"execution_time": 0,
            "output": f"{exercise}: compile-only check, NOT GRADED (no score): {verdict}",
            "tests": [{"name": f"{exercise}: static checks", "status": "failed" if problems else "passed",
                       "output": "\n".join([*problems, *details]) or verdict, "visibility": "visible"}]}
