"""``grade check``: is every exercise ready to hand out?

Per exercise: the files exist; the spec is valid and its points are positive; TODOs left by
``grade new`` (reported, not failures); the stub is not the reference solution (exactly or in
most of its lines, grader.leaks); the solution and the stub pass the static checks (compiled with
NVRTC as grading does, ``solve``'s signature, required/forbidden features; skipped, and said so,
when no compiler is installed); a spec's [prepare] function gives the same values twice for the
same case; the negative controls (grader.controls) fail and the oracle passes; and, on a GPU, the reference solution gets full marks and the stub compiles
and scores zero without a crash. What cannot run here is listed as skipped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Callable

from grader.spec import Exercise, Spec, SpecError, load_spec

TODO = re.compile(r"\bTODO\b")


class CheckStatus(StrEnum):
    """:attr:`CheckRow.status`."""
    OK = "ok"
    FAIL = "fail"   # grade check exits 1
    SKIP = "skip"   # could not run here (no GPU, no compiler, ...): the detail says why
    TODO = "todo"   # left to the instructor by grade new: reported, not a failure


@dataclass(frozen=True)
class CheckRow:
    """One line of the table."""
    exercise: str
    item: str
    status: CheckStatus
    detail: str = ""


def _todos(ex: Exercise) -> list[str]:
    """Where TODO markers are left, as FILE:LINE relative to the course folder (solutions/ and
    exercises/ hold files of the same name)."""
    root = ex.directory.parent.parent
    found = []
    for path in (ex.spec_path, ex.directory / "README.md", ex.directory / "reference.py",
                 ex.solution / "kernel.cu", ex.solution / "solution.py"):
        if path.is_file():
            for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if TODO.search(line):
                    found.append(f"{path.relative_to(root) if path.is_relative_to(root) else path}:{i}")
    return found


def oracle_problem(exc: Exception, path: Path) -> str:
    """One line for an oracle that does not load: load_oracle's own messages name the file and the
    fix already (printed as they are); anything reference.py raised is named with its file."""
    text = str(exc)
    return text if text.startswith(str(path.parent)) else f"{path.name}: {type(exc).__name__}: {text}"


def check_exercise(ex: Exercise, gpu: bool, controls: bool = True,
                   grade_fn: Callable[[Spec, Path, Path | None], object] | None = None) -> list[CheckRow]:
    """Every check for one exercise. ``grade_fn(spec, folder, reference)`` grades on the GPU
    (given only when ``gpu``)."""
    from grader.leaks import stub_matches_solution
    from grader.static import static_report

    rows: list[CheckRow] = []

    def add(item: str, ok: bool, detail: str = "") -> None:
        rows.append(CheckRow(ex.name, item, CheckStatus.OK if ok else CheckStatus.FAIL, detail))

    needed = [ex.spec_path, ex.directory / "README.md", ex.directory / "reference.py",
              ex.solution / "kernel.cu", ex.solution / "solution.py",
              ex.template / "kernel.cu", ex.template / "solution.py"]
    missing = [str(p) for p in needed if not p.is_file()]
    add("files", not missing, "missing: " + ", ".join(missing) if missing else "spec, README, oracle, solution, stub")
    try:
        spec = load_spec(ex.spec_path)
    except SpecError as exc:
        add("spec", False, str(exc))
        return rows
    edges, shapes = len(spec.edge_cases), len(spec.benchmarks)
    add("spec", True, f"{edges} edge case{'s' if edges != 1 else ''}, {shapes} benchmark shape{'s' if shapes != 1 else ''}")
    add("points", spec.total_points > 0,
        f"correctness {spec.points_correctness:g} + performance {spec.points_performance:g} = {spec.total_points:g}")
    todos = _todos(ex)
    if todos:
        rows.append(CheckRow(ex.name, "TODOs", CheckStatus.TODO, f"{len(todos)} left: " + ", ".join(todos[:6])))
    match = stub_matches_solution(ex.solution, ex.template)
    placeholder = any(TODO.search(p.read_text(errors="replace")) for p in ex.solution.glob("*") if p.is_file())
    if not ex.solution.is_dir():
        rows.append(CheckRow(ex.name, "stub: not the solution", CheckStatus.SKIP, f"no reference solution at {ex.solution}"))
    elif match is not None and placeholder:
        # a scaffold from `grade new`: its placeholder solution is a TODO, not yet an answer to give away
        rows.append(CheckRow(ex.name, "stub: not the solution", CheckStatus.TODO,
                             match.describe(str(ex.template)) + " (the solution is still a TODO placeholder)"))
    else:
        add("stub: not the solution", match is None,
            match.describe(str(ex.template)) if match else "the stub differs from the reference solution")
    for label, folder in (("solution", ex.solution), ("stub", ex.template)):
        if not folder.is_dir():
            continue
        rep = static_report(spec, folder, "sm_90")   # for the spec's [features] arch where it pins one
        if rep.problems or rep.compiled:
            n = len(rep.kernels)
            add(f"{label}: static", rep.ok, "; ".join(rep.problems) or
                f"{n} kernel{'s' if n != 1 else ''} compiled with {rep.compiler} for {rep.arch}")
        else:
            rows.append(CheckRow(ex.name, f"{label}: static", CheckStatus.SKIP, rep.skipped[0]))
    oracle = None
    try:
        from grader.instance import load_oracle
        oracle = load_oracle(spec)
        add("oracle", True, "reference.py loads")
    except Exception as exc:  # noqa: BLE001 - a broken oracle is this exercise's problem, not the check's
        add("oracle", False, oracle_problem(exc, ex.directory / "reference.py"))
        controls = False
    if oracle is not None and spec.prepare:
        from grader.cases import PROFILES, edge_cases
        from grader.controls import control_spec
        from grader.instance import prepare_problem
        small = edge_cases(control_spec(spec), PROFILES["quick"], seed=0)
        if small:   # every small edge case: a prepare that ignores rs may still agree with itself on a tiny one
            why = next((w for w in (prepare_problem(spec, oracle, c) for c in small) if w), None)
            add("prepare", why is None, why or f"{spec.prepare} gives the same values for the same case "
                f"({len(small)} edge cases drawn twice)")
        else:
            rows.append(CheckRow(ex.name, "prepare", CheckStatus.SKIP, "no edge case small enough to draw on the CPU"))
    if controls:
        from grader.controls import run_controls
        try:
            ran = run_controls(spec)
        except Exception as exc:  # noqa: BLE001
            add("controls", False, f"the oracle failed on the control cases: {type(exc).__name__}: {exc}")
            ran = []
        for c in ran:
            if c.passed is None:
                rows.append(CheckRow(ex.name, f"control {c.name}", CheckStatus.SKIP, c.diagnosis))
            else:
                verdict = "passes" if c.passed else "fails"
                add(f"control {c.name}", c.ok, f"{verdict} (expected to {'pass' if c.expected_pass else 'fail'}): "
                    f"{c.diagnosis[:160]}")
    elif oracle is not None:   # asked not to run them (an oracle that failed to load has its row above)
        rows.append(CheckRow(ex.name, "negative controls", CheckStatus.SKIP, "not run (--no-controls)"))
    if not gpu or grade_fn is None:
        rows.append(CheckRow(ex.name, "GPU: solution full marks, stub zero", CheckStatus.SKIP, "no GPU here"))
        return rows
    if (ex.solution / "solution.py").is_file():
        r = grade_fn(spec, ex.solution, ex.solution)
        full = r.graded and r.score.total == r.score.maximum  # type: ignore[attr-defined]
        add("GPU: solution full marks", full, f"{r.score.total:g}/{r.score.maximum:g} "  # type: ignore[attr-defined]
            f"{r.reason or r.score.note}")  # type: ignore[attr-defined]
    if (ex.template / "solution.py").is_file():
        r = grade_fn(spec, ex.template, None)
        clean = r.graded and r.score.total == 0 and r.worker_restarts == 0  # type: ignore[attr-defined]
        first = r.smallest_failure.message[:100] if r.smallest_failure else r.reason  # type: ignore[attr-defined]
        add("GPU: stub scores zero cleanly", clean, f"{r.score.total:g} points; {first}")  # type: ignore[attr-defined]
    return rows
