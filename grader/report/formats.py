"""Write a grade in one of the result formats: text, json, gradescope, junit, html."""
from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from grader.grade import GradeResult

FORMATS = ("text", "json", "gradescope", "junit", "html")


def render(result: GradeResult, fmt: str, exit_code: int) -> str:
    """The report as text in ``fmt`` (for ``text``: plain, without colour). Every string of the
    result is made printable first (see :mod:`grader.report.clean`): a submission's text reaches it."""
    from grader.report.clean import clean
    result = clean(result)
    if fmt == "json":
        from grader.report import json_report
        return json_report.write(json_report.to_dict(result, exit_code), None)
    if fmt == "gradescope":
        from grader.report import gradescope
        return json.dumps(gradescope.to_dict(result), indent=2)
    if fmt == "junit":
        from grader.report import junit
        return junit.to_xml(result)
    if fmt == "html":
        from grader.report import html
        return html.to_html(result, exit_code)
    from io import StringIO
    from grader.report.text import render as render_text
    buf = StringIO()
    render_text(result, Console(file=buf, width=120, force_terminal=False, color_system=None))
    return buf.getvalue()


def render_error(fmt: str, exercise: str, submission: str, kind: str, message: str, exit_code: int,
                 max_score: float | None = None) -> str:
    """A result for a grade that could not run, in ``fmt`` (text: the message); ``max_score`` is the
    exercise's total when known."""
    from grader.report.clean import printable
    exercise, submission, kind, message = map(printable, (exercise, submission, kind, message))
    if fmt == "json":
        from grader.report import json_report
        data = json_report.error_dict(exercise, submission, kind, message, exit_code)
        data["score"]["max"] = max_score
        return json_report.write(data, None)
    if fmt == "gradescope":
        from grader.report import gradescope
        return json.dumps(gradescope.error_dict(exercise, message, max_score or 0.0, exit_code), indent=2)
    if fmt == "junit":
        from grader.report import junit
        return junit.error_xml(exercise, kind, message, exit_code)
    if fmt == "html":
        from grader.report import html
        return html.error_html(exercise, submission, kind, message, exit_code)
    return f"{exercise}: not graded ({kind}): {message}\n"


def static_verdict(rep) -> str:  # type: ignore[no-untyped-def]
    """The last line of a ``--compile-only`` report: what was found, and what was not checked.
    Never "no problems found" when kernel.cu was not compiled; warnings (graded, but at a cost) are
    counted beside it."""
    if rep.problems:
        n = len(rep.problems)
        return f"{n} problem{'s' if n != 1 else ''} found" + ("" if rep.compiled else "; kernel.cu was NOT compiled")
    if not rep.compiled:
        return ("kernel.cu was NOT compiled (no compiler here); solution.py and the features were checked: "
                "no problems there; not graded")
    warned = f", {len(rep.warnings)} warning{'s' if len(rep.warnings) != 1 else ''} above" if rep.warnings else ""
    return f"no problems found by the static checks{warned} (kernel.cu compiled with {rep.compiler}); not graded: " \
           "correctness and timing need a GPU"


def static_dict(spec, submission: Path, rep, exit_code: int) -> dict:  # type: ignore[no-untyped-def]
    """The ``--compile-only`` JSON result (status "compile_only"; see the schema)."""
    from grader.report import json_report
    verdict = static_verdict(rep)
    data = json_report.error_dict(spec.name, str(submission), "compile_only",
                                  "; ".join(rep.problems) or verdict, exit_code)
    data.update(status="compile_only", arch=rep.arch, compiler=rep.compiler,
                compiled=rep.compiled and not rep.compile_errors,
                kernels=[{"name": k.name, "registers": k.registers, "shared_bytes": k.shared_bytes,
                          "local_bytes": k.stack_bytes, "stack_bytes": k.stack_bytes,
                          "spill_store_bytes": k.spill_store_bytes, "spill_load_bytes": k.spill_load_bytes}
                         for k in rep.kernels],
                problems=list(rep.problems), warnings=list(rep.warnings), skipped=list(rep.skipped))
    data["score"].update(total=None, correctness=None, performance=None, max=spec.total_points,
                         note=f"compile-only: not graded; {verdict}")
    return data


# The per-kernel resources of a static report, as its tables show them (terminal and HTML).
KERNEL_COLUMNS = ("kernel", "registers", "shared B", "stack B", "spill stores B", "spill loads B")


def kernel_rows(rep) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """One row per compiled kernel of static report ``rep``, in :data:`KERNEL_COLUMNS` order (text)."""
    return [[k.name, *(str(v) for v in (k.registers, k.shared_bytes, k.stack_bytes, k.spill_store_bytes,
                                        k.spill_load_bytes))] for k in rep.kernels]


def render_static(spec, submission: Path, rep, fmt: str, exit_code: int) -> str:  # type: ignore[no-untyped-def]
    """The ``--compile-only`` report in ``fmt``: problems, per-kernel resources, what was not
    checked (kernel.cu NOT compiled when no compiler ran), and a verdict that says so."""
    from grader.report.clean import clean, printable
    rep, submission = clean(rep), Path(printable(str(submission)))
    problems = list(rep.problems)
    verdict = static_verdict(rep)
    compiled_line = rep.compile_line()
    notes = [f"warning: {w}" for w in rep.warnings] + [f"not checked here: {x}" for x in rep.skipped]
    if fmt == "text":
        lines = [f"{spec.name}: static report for {submission} ({rep.arch})", compiled_line]
        lines += [f"kernel {k.name}: {k.registers} registers, {k.shared_bytes} B shared, {k.stack_bytes} B stack, "
                  f"{k.spill_store_bytes}/{k.spill_load_bytes} B spill stores/loads" for k in rep.kernels]
        lines += [f"problem: {p}" for p in problems] + notes
        return "\n".join(lines + [verdict]) + "\n"
    if fmt == "json":
        from grader.report import json_report
        return json_report.write(static_dict(spec, submission, rep, exit_code), None)
    if fmt == "gradescope":
        from grader.report import gradescope
        return json.dumps(gradescope.static_dict(spec.name, problems, verdict, [compiled_line, *notes]), indent=2)
    if fmt == "html":
        from grader.report import html
        return html.static_html(spec.name, str(submission), rep.arch, compiled_line, kernel_rows(rep), problems,
                                notes, verdict, exit_code)
    from grader.report import junit
    on_kernel = [p for p in problems if p.startswith("kernel.cu") and rep.compiled]
    not_compiled = next((s for s in rep.skipped if "NOT compiled" in s), "no compiler here")
    return junit.static_xml(spec.name, on_kernel, [p for p in problems if p not in on_kernel], rep.compiler,
                            not_compiled, [compiled_line, *notes], unreadable=rep.unreadable)


def write(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n")
