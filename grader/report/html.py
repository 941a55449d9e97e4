"""The HTML report of one grade: a single self-contained page (inline CSS and SVG, no script, no
network access needed to view it) with the result, the smallest failing case and its repro line,
the timing table, the roofline plot (:mod:`grader.report.roofline_plot`, when matplotlib is
installed) and the kernels' resources. Every value from the grade is HTML-escaped."""
from __future__ import annotations

import statistics
from html import escape
from urllib.parse import quote
from typing import Any

from grader.grade import GradeResult

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; } th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f3f3f3; text-align: left; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.score { font-size: 1.2em; font-weight: bold; } .fail { color: #a00; } .ok { color: #070; }
.bar { background: #4a7bd0; height: 0.8em; display: inline-block; }
.flag { background: #fff4d6; padding: 0.3em 0.6em; margin: 0.2em 0; } code, pre { background: #f6f6f6; }
pre { padding: 0.5em; overflow-x: auto; } .meta { color: #666; font-size: 0.85em; }
"""


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _table(head: list[str], rows: list[list[str]], numeric_from: int = 1, cls: str = "") -> str:
    """An HTML table; ``rows`` hold already-escaped cells."""
    out = [f'<table class="{cls}"><tr>' + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f'<td class="num">{c}</td>' if i >= numeric_from else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _plot(result: GradeResult) -> str:
    from grader.report import roofline_plot
    try:
        return f'<div class="plot">{roofline_plot.svg(result)}</div>'
    except roofline_plot.PlotUnavailable as exc:
        return f'<p class="meta">No roofline plot: {escape(str(exc))}</p>'


def to_html(result: GradeResult, exit_code: int) -> str:
    """The page for a grade (a complete HTML document)."""
    r, s = result, result.score
    parts = [f"<h1>{escape(r.exercise)}: {escape(r.title)}</h1>",
             f'<p class="meta">submission {escape(r.submission)} · {escape(r.started)} · exit code {exit_code}</p>']
    if not r.graded:
        parts.append(f'<p class="score fail">Not graded ({escape(r.reason_kind)}): {escape(r.reason)}</p>')
    else:
        parts.append(f'<p class="score">{s.total:.1f} / {s.maximum:.0f} points: correctness {s.correctness:.1f} of '
                     f'{s.correctness_max:.0f}, performance {s.performance:.1f} of {s.performance_max:.0f}'
                     f'{" (basis: " + escape(s.basis) + ")" if s.basis else ""}</p>')
    if s.note:
        parts.append(f"<p>{escape(s.note)}</p>")
    parts += [f'<div class="flag">{escape(f)}</div>' for f in r.flags]
    if r.cases:
        failed = [c for c in r.cases if not c.passed]
        parts.append(f"<h2>Correctness ({escape(r.profile)} mode)</h2>")
        parts.append(f'<p class="{"fail" if failed else "ok"}">{len(r.cases) - len(failed)} of {len(r.cases)} '
                     f'cases passed.</p>')
        if r.hidden_cases and r.profile != "grading":
            parts.append(f"<p>{r.hidden_cases} hidden edge case(s) and {r.hidden_benchmarks} hidden benchmark "
                         f"shape(s) run only when grading (--mode grading).</p>")
        f = r.smallest_failure
        if f is not None:
            parts.append(f"<p>Smallest failing case ({len(failed)} failed): {escape(f.description)}</p>"
                         f"<pre>{escape(chr(10).join([f.message, *f.details]))}</pre>")
            if r.repro:
                parts.append(f"<p>Reproduce it: <code>{escape(r.repro)}</code></p>")
    from grader.report.text import hints
    advice = hints(r)
    if advice:
        parts += ["<h2>What to try next</h2>", "<ul>" + "".join(f"<li>{escape(h)}</li>" for h in advice) + "</ul>"]
    if r.benchmarks:
        rows = []
        for b in r.benchmarks:
            st = b.submission.stats
            ref = b.reference_ms
            rows.append([escape(b.name), _num(st.median_ms if st else None, ".4f"), _num(st.iqr_ms if st else None, ".4f"),
                         _num(b.gbps, ",.0f"), _num(b.tflops if b.tflops and b.tflops >= 0.005 else None, ",.2f"),
                         "-" if b.ceiling_fraction is None else f"{b.ceiling_fraction:.0%}", _num(ref, ".4f"),
                         _num(b.ratio, ".2f")])
        parts += ["<h2>Timing</h2>",
                  _table(["shape", "median ms", "IQR ms", "GB/s", "TFLOP/s", "% roofline", "reference ms", "ratio"],
                         rows, cls="timing"),
                  '<p class="meta">Median and interquartile range of your time per call (CUDA events, L2 flushed). '
                  "GB/s and TFLOP/s: the spec's minimum bytes and FLOPs over your time. % roofline: the time the "
                  "measured copy bandwidth and compute rate allow for those bytes and FLOPs, over your time. Ratio: "
                  "the reference's time over yours (above 1: faster than the reference); the basis says where the "
                  "reference time comes from (side-by-side: timed beside yours; calibration: its calibrated time for "
                  "this GPU model; roofline: no reference time, the % roofline is scored).</p>",
                  "<h2>Roofline</h2>", _plot(r)]
    if r.kernels:
        keys = ["name", "registers", "shared_bytes", "local_bytes", "max_threads"]
        parts += ["<h2>Kernels</h2>",
                  _table(["kernel", "registers", "shared B", "local B", "max threads"],
                         [[escape(str(k.get(key, "-"))) for key in keys] for k in r.kernels], cls="kernels")]
    if r.kernel_profile is not None:
        parts += _kernel_profile(r.kernel_profile)
    device = r.device.name if r.device is not None else "no GPU"
    parts.append(f'<p class="meta">{escape(device)} · seed {r.seed} · {escape(r.isolation)} · '
                 f'{" · ".join(f"{escape(k)} {escape(str(v))}" for k, v in r.versions.items())}</p>')
    return _page(f"{r.exercise}: {s.total:.1f} / {s.maximum:.0f}" if r.graded else f"{r.exercise}: not graded",
                 "\n".join(parts))


def _kernel_profile(p: dict) -> list[str]:
    """grade --profile's section: one block per kernel with ncu's readings."""
    out = [f"<h2>Nsight Compute: {escape(p['shape'])}</h2>"]
    if p["status"] != "ok":
        return out + [f'<p class="flag">{escape(p["status"])}: {escape(p["message"])}</p>']
    for k in p["kernels"]:
        t = f"{k['time_ms']:.4f} ms" if k.get("time_ms") is not None else "time not measured"
        out.append(f"<h3>{escape(k['name'])}</h3><p class=\"meta\">block {escape(k['block'])}, grid {escape(k['grid'])}, "
                   f"{t}</p><ul>" + "".join(f"<li>{escape(x)}</li>" for x in k["readings"]) + "</ul>")
    if p.get("agreement"):
        out.append(f"<p>{escape(p['agreement'])}</p>")
    return out


def error_html(exercise: str, submission: str, kind: str, message: str, exit_code: int) -> str:
    """The page for a grade that could not run."""
    body = (f"<h1>{escape(exercise)}</h1><p class=\"meta\">submission {escape(submission)} · exit code {exit_code}</p>"
            f'<p class="score fail">Not graded ({escape(kind)}): {escape(message)}</p>')
    return _page(f"{exercise}: not graded", body)


def static_html(exercise: str, submission: str, arch: str, compiled_line: str, kernels: list[list[str]],
                problems: list[str], notes: list[str], verdict: str, exit_code: int) -> str:
    """The page of ``grade EX --compile-only``: the compile line, per-kernel resources (``kernels``:
    rows of formats.KERNEL_COLUMNS, as text), the problems, warnings and what was not checked, and
    the verdict."""
    from grader.report.formats import KERNEL_COLUMNS
    body = [f"<h1>{escape(exercise)}: static report</h1><p class=\"meta\">submission {escape(submission)} · "
            f"{escape(arch)} · exit code {exit_code}</p>", f"<p>{escape(compiled_line)}</p>"]
    if kernels:
        body.append(_table(list(KERNEL_COLUMNS), [[escape(c) for c in row] for row in kernels]))
    body += [f'<p class="score fail">problem: {escape(p)}</p>' for p in problems]
    body += [f"<p>{escape(n)}</p>" for n in notes]
    body.append(f'<p class="score {"fail" if problems else "ok"}">{escape(verdict)}</p>')
    return _page(f"{exercise}: static report", "\n".join(body))


def class_index(rows: list[dict[str, Any]], generated: str, exercises: list[dict[str, Any]] | None = None) -> str:
    """The class page of ``grade batch``: per exercise, the score distribution (graded rows:
    count, median, mean, min, max, and a histogram in tenths of the maximum); then every row
    (student, exercise, status, score, the reason) linked to its report. ``rows`` are the summary
    rows (``summary.json``): a missing submission counts as its 0, a row without a score (status
    "error") apart."""
    parts = [f"<h1>Class results</h1><p class=\"meta\">{len(rows)} results · generated {escape(generated)}</p>"]
    for ex in sorted({r["exercise"] for r in rows}):
        mine = [r for r in rows if r["exercise"] == ex]
        top = next((r["max_score"] for r in mine if r.get("max_score")), None)
        # a missing submission counts as the 0 it gets; a grade that could not run ("error") has no score
        scored = [r for r in mine if r.get("score") is not None and r.get("status") != "error"]
        parts.append(f"<h2>{escape(ex)}</h2>")
        if not scored or not top:
            parts.append(f"<p>No scores ({len(mine)} rows, none graded).</p>")
            continue
        pts = [r["score"] for r in scored]
        fracs = [p / top for p in pts]
        parts.append(f"<p>{len(scored)} scored ({len(mine) - len(scored)} without a score): median "
                     f"{statistics.median(pts):.1f}, mean {statistics.fmean(pts):.1f}, min {min(pts):.1f}, "
                     f"max {max(pts):.1f} of {top:.0f}.</p>")
        counts = [0] * 10
        for f in fracs:
            counts[min(9, int(f * 10))] += 1
        hist = [[f"{10 * i}-{10 * i + 10}%", str(n), f'<span class="bar" style="width:{12 * n}px"></span>']
                for i, n in enumerate(counts)]
        parts.append(_table(["score", "students", ""], hist, numeric_from=1, cls="histogram"))
        summary = next((e for e in exercises or () if e["exercise"] == ex), None)
        if summary is not None:
            fast = ", ".join(f"fast_{p} " + ("unknown" if v is None else f"{v:.0%}") for p, v in summary["fast_p"].items())
            fastest = "-" if summary["fastest"] is None else f"{summary['fastest']:.2f}x the reference"
            pending = f" ({summary['pending']} pending: not graded here)" if summary["pending"] else ""
            parts.append(f"<p>{summary['correct']} of {summary['submissions']} correct{pending}; fastest correct: "
                         f"{fastest}; {fast} (the share correct and at least p times as fast as the reference; "
                         f"unknown while grades are pending or without a reference time).</p>")
    body = []
    for r in rows:
        score = "-" if r.get("score") is None else f"{r['score']:.1f}"
        # a relative path, percent-encoded: a student folder named "javascript:..." stays a path
        report = escape(quote(r.get("report") or ""))
        name = f'<a href="{report}">{escape(r["student"])}</a>' if report else escape(r["student"])
        body.append([name, escape(r["exercise"]), escape(r["status"]), escape(str(r.get("reason", ""))[:200]), score])
    parts += ["<h2>Every result</h2>", _table(["student", "exercise", "status", "reason", "score"], body,
                                               numeric_from=4, cls="rows")]
    return _page("Class results", "\n".join(parts))


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n")
