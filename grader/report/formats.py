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


def render_error(fmt: str, exercise: str, submission: str, kind: str, message: str, exit_code: int) -> str:
    """A result for a grade that could not run, in ``fmt`` (text: the message)."""
    if fmt == "json":
        from grader.report import json_report
        return json_report.write(json_report.error_dict(exercise, submission, kind, message, exit_code), None)
    if fmt == "gradescope":
        from grader.report import gradescope
        return json.dumps(gradescope.error_dict(exercise, message), indent=2)
    if fmt == "junit":
        from grader.report import junit
        return junit.error_xml(exercise, kind, message)
    return f"{exercise}: not graded ({kind}): {message}\n"


def write(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n")
