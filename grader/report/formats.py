"""Write a grade in one of the result formats: text, json, gradescope, junit."""
from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from grader.grade import GradeResult

FORMATS = ("text", "json", "gradescope", "junit")


def render(result: GradeResult, fmt: str, exit_code: int) -> str:
    """The report as text in ``fmt`` (for ``text``: plain, without colour)."""
    if fmt == "json":
        from grader.report import json_report
        return json_report.write(json_report.to_dict(result, exit_code), None)
    if fmt == "gradescope":
        from grader.report import gradescope
        return json.dumps(gradescope.to_dict(result), indent=2)
    if fmt == "junit":
        from grader.report import junit
        return junit.to_xml(result)
    from io import StringIO
    from grader.report.text import render as render_text
    buf = StringIO()
    render_text(result, Console(file=buf, width=120, force_terminal=False, color_system=None))
    return buf.getvalue()


def render_error(fmt: str, exercise: str, submission: str, kind: str, message: str, exit_code: int,
                 max_score: float | None = None) -> str:
    """A result for a grade that could not run, in ``fmt`` (text: the message); ``max_score`` is the
    exercise's total when known."""
    if fmt == "json":
        from grader.report import json_report
        data = json_report.error_dict(exercise, submission, kind, message, exit_code)
        data["score"]["max"] = max_score
        return json_report.write(data, None)
    if fmt == "gradescope":
        from grader.report import gradescope
        return json.dumps(gradescope.error_dict(exercise, message, max_score or 0.0), indent=2)
    if fmt == "junit":
        from grader.report import junit
        return junit.error_xml(exercise, kind, message)
    return f"{exercise}: not graded ({kind}): {message}\n"


def render_static(spec, submission: Path, rep, fmt: str, exit_code: int) -> str:  # type: ignore[no-untyped-def]
    """The ``--compile-only`` report in ``fmt``: problems, per-kernel resources, what was skipped."""
    problems = list(rep.problems)
    if fmt == "text":
        lines = [f"{spec.name}: static report for {submission} ({rep.arch})"]
        lines += [f"kernel {k.name}: {k.registers} registers, {k.shared_bytes} B shared, {k.stack_bytes} B stack, "
                  f"{k.spill_store_bytes}/{k.spill_load_bytes} B spill stores/loads" for k in rep.kernels]
        lines += [f"problem: {p}" for p in problems] + [f"warning: {w}" for w in rep.warnings]
        lines += [f"not checked here: {x}" for x in rep.skipped]
        return "\n".join(lines + (["no problems found"] if not problems else [])) + "\n"
    if fmt == "json":
        from dataclasses import asdict
        from grader.report import json_report
        data = json_report.error_dict(spec.name, str(submission), "compile_only", "; ".join(problems) or
                                      "no problems found", exit_code)
        data.update(status="compile_only", kernels=[asdict(k) for k in rep.kernels], problems=problems,
                    warnings=list(rep.warnings), skipped=list(rep.skipped))
        data["score"]["max"] = spec.total_points
        return json_report.write(data, None)
    return render_error(fmt, spec.name, str(submission), "compile_only",
                        "; ".join(problems) or "compile-only check: no problems found (not graded)",
                        exit_code, spec.total_points)


def write(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n")
