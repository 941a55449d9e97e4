"""JUnit XML for CI test reporters (GitHub Actions and GitLab read ``testsuites/testsuite/testcase``
with ``failure`` / ``error`` / ``skipped`` children). One testcase per correctness case and per
benchmark shape; the score is a property of the suite.

A wrong result of the submission (a wrong output, a crash, a compile error, a malformed ``solve``)
is a ``<failure>``; a problem of the grader or the machine (no GPU, time limit, a grader error, a
compiler that is not installed) is an ``<error>``; what was not run (correctness and timing under
``--compile-only``) is ``<skipped>``."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from grader.grade import GradeResult


def to_xml(r: GradeResult) -> str:
    """The report as a JUnit XML document (UTF-8 text)."""
    suites = ET.Element("testsuites", name="grade")
    suite = ET.SubElement(suites, "testsuite", name=r.exercise, time=f"{r.seconds:.3f}", timestamp=r.started)
    props = ET.SubElement(suite, "properties")
    for k, v in (("score", f"{r.score.total:g}"), ("max_score", f"{r.score.maximum:g}"),
                 ("withheld", f"{r.score.withheld:g}"), ("note", r.score.note), ("status", r.status),
                 ("device", r.device.name if r.device else "none"), ("seed", str(r.seed))):
        ET.SubElement(props, "property", name=k, value=v)
    failures = errors = tests = 0
    if not r.graded:  # the submission could not be graded: its problem, so a failure
        tests, failures = 1, 1
        case = ET.SubElement(suite, "testcase", classname=r.exercise, name="submission", time="0")
        ET.SubElement(case, "failure", message=r.reason[:500], type=r.reason_kind).text = r.reason
    for c in r.cases:
        tests += 1
        case = ET.SubElement(suite, "testcase", classname=f"{r.exercise}.correctness",
                             name=f"{c.origin}: {c.description}", time=f"{c.seconds:.3f}")
        if c.passed:
            continue
        tag = "error" if c.status == "grader_error" else "failure"
        failures += tag == "failure"
        errors += tag == "error"
        ET.SubElement(case, tag, message=c.message[:500], type=c.status).text = "\n".join((c.message, *c.details))
    for b in r.benchmarks:
        tests += 1
        st = b.submission.stats
        case = ET.SubElement(suite, "testcase", classname=f"{r.exercise}.performance", name=b.name,
                             time=f"{(st.median_ms if st else 0) / 1e3:.6f}")
        if b.submission.failure:
            failures += 1
            ET.SubElement(case, "failure", message=b.submission.failure[:500], type="timing").text = b.submission.failure
        else:
            ET.SubElement(case, "system-out").text = (
                f"median {st.median_ms:.4f} ms, IQR {st.iqr_ms:.4f} ms, {b.gbps or 0:,.0f} GB/s, "
                f"ratio {b.ratio or 0:.3f}")
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _document(suites: ET.Element) -> str:
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def error_xml(exercise: str, kind: str, message: str, exit_code: int = 4) -> str:
    """A one-testcase report for a grade that could not run: a ``<failure>`` when the submission
    cannot be graded (exit code 3), else an ``<error>`` (the grader or the machine)."""
    tag = "failure" if exit_code == 3 else "error"
    suites = ET.Element("testsuites", name="grade")
    suite = ET.SubElement(suites, "testsuite", name=exercise, tests="1", failures=str(int(tag == "failure")),
                          errors=str(int(tag == "error")), skipped="0")
    case = ET.SubElement(suite, "testcase", classname=exercise, name="grading")
    ET.SubElement(case, tag, message=message[:500], type=kind).text = message
    return _document(suites)


def static_xml(exercise: str, compile_problems: list[str], other_problems: list[str], compiled: str | None,
               not_compiled: str, details: list[str], unreadable: bool = False) -> str:
    """The ``--compile-only`` report: a testcase for compiling kernel.cu (a ``<failure>`` with the
    compile errors; an ``<error>`` when no compiler ran, ``not_compiled`` saying why), one for the
    other static checks (``<failure>`` with their problems) and a ``<skipped>`` one for correctness
    and timing. ``compiled`` names the compiler, None when kernel.cu was not compiled; ``unreadable``:
    it was not compiled because the submission could not be read (a ``<skipped>``, not an error of
    the environment)."""
    suites = ET.Element("testsuites", name="grade")
    suite = ET.SubElement(suites, "testsuite", name=exercise, tests="3")
    counts = {"failure": 0, "error": 0, "skipped": 0}

    def add(name: str, tag: str | None, message: str, text: str) -> None:
        case = ET.SubElement(suite, "testcase", classname=f"{exercise}.static", name=name, time="0")
        if tag is None:
            ET.SubElement(case, "system-out").text = text
            return
        counts[tag] += 1
        el = ET.SubElement(case, tag, message=message[:500], **({} if tag == "skipped" else {"type": tag}))
        el.text = text

    if compiled is None and unreadable:
        add("compile kernel.cu", "skipped", "not compiled: the submission could not be read", "")
    elif compiled is None:
        add("compile kernel.cu", "error", f"kernel.cu was NOT compiled: {not_compiled}", not_compiled)
    elif compile_problems:
        add("compile kernel.cu", "failure", compile_problems[0], "\n".join(compile_problems))
    else:
        add("compile kernel.cu", None, "", f"compiled with {compiled}")
    if other_problems:
        add("solution.py and features", "failure", other_problems[0], "\n".join(other_problems))
    else:
        add("solution.py and features", None, "", "\n".join(details) or "no problems found")
    add("correctness and timing", "skipped", "not run: --compile-only (correctness and timing need a GPU)", "")
    suite.set("failures", str(counts["failure"]))
    suite.set("errors", str(counts["error"]))
    suite.set("skipped", str(counts["skipped"]))
    return _document(suites)
