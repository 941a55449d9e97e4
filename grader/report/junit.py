"""JUnit XML for CI test reporters (GitHub Actions and GitLab read ``testsuites/testsuite/testcase``
with ``failure`` / ``error`` / ``skipped`` children). One testcase per correctness case and per
benchmark shape; the score is a property of the suite."""
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
    if r.status != "graded":
        tests, errors = 1, 1
        case = ET.SubElement(suite, "testcase", classname=r.exercise, name="submission", time="0")
        ET.SubElement(case, "error", message=r.reason[:500], type=r.reason_kind).text = r.reason
    for c in r.cases:
        tests += 1
        case = ET.SubElement(suite, "testcase", classname=f"{r.exercise}.correctness",
                             name=f"{c.origin}: {c.description}", time=f"{c.seconds:.3f}")
        if c.passed:
            continue
        tag = "failure" if c.status == "fail" else "error"
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


def error_xml(exercise: str, kind: str, message: str) -> str:
    """A one-testcase report for a grade that could not run."""
    suites = ET.Element("testsuites", name="grade")
    suite = ET.SubElement(suites, "testsuite", name=exercise, tests="1", failures="0", errors="1")
    case = ET.SubElement(suite, "testcase", classname=exercise, name="grading")
    ET.SubElement(case, "error", message=message[:500], type=kind).text = message
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
