"""The HTML report and the roofline plot (grader.report.html, grader.report.roofline_plot): on the
host backend (CPU), the page holds the result, the timing table and the plot; values are escaped;
and the page opens in a real browser (the system's Chromium, headless) without console errors."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from grader.device import Ceilings
from grader.report import html as html_report
from grader.report import roofline_plot
from tests.conftest import fake_submission as fake, grade_folder
from tests.test_pipeline_host import FAST, SOFTMAX, small_softmax

matplotlib = pytest.importorskip("matplotlib", reason="matplotlib is a dependency of the grader (pyproject.toml)")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A correct host-backend grade, timed against a reference, with ceilings as a GPU would give."""
    tmp = tmp_path_factory.mktemp("html")
    r = grade_folder(small_softmax(), fake(tmp, SOFTMAX, "sub"), backend="host", reference=fake(tmp, SOFTMAX, "ref"),
                     policy=FAST)
    assert r.status == "graded" and r.benchmarks
    return replace(r, ceilings=Ceilings(copy_gbps=4000.0, fp32_tflops=50.0))


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):  # noqa: ANN001
        self.tags.append(tag)


def test_the_page_holds_the_score_the_timing_table_and_the_plot(graded):
    page = html_report.to_html(graded, 0)
    parser = Tags()
    parser.feed(page)
    assert parser.tags[:2] == ["html", "head"] and "svg" in parser.tags and parser.tags.count("table") >= 1
    assert f"{graded.score.total:.1f} / {graded.score.maximum:.0f} points" in page
    for b in graded.benchmarks:
        assert f"<td>{b.name}</td>" in page.replace("&#x27;", "'")
    assert "copy bandwidth 4,000 GB/s" in page            # the ceiling drawn in the plot
    # self-contained: no script, nothing fetched (namespace URIs in the SVG are names, not requests)
    assert "<script" not in page and not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)|@import|url\((?!#)""", page)


def test_values_from_the_grade_are_escaped(graded):
    evil = replace(graded, flags=("<script>alert(1)</script>",), submission="/tmp/<b>x</b>")
    page = html_report.to_html(evil, 0)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "/tmp/&lt;b&gt;x&lt;/b&gt;" in page
    error = html_report.error_html("ex07_softmax", "/s", "compile_error", "kernel.cu:3: error: <oops>", 3)
    assert "&lt;oops&gt;" in error and "Not graded (compile_error)" in error


def test_the_plot_is_written_as_png_or_svg(graded, tmp_path):
    roofline_plot.write(graded, tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    roofline_plot.write(graded, tmp_path / "r.svg")
    assert "<svg" in (tmp_path / "r.svg").read_text()
    with pytest.raises(roofline_plot.PlotUnavailable, match=r"\.png or \.svg"):
        roofline_plot.write(graded, tmp_path / "r.pdf")
    untimed = replace(graded, benchmarks=())
    with pytest.raises(roofline_plot.PlotUnavailable, match="no timed shape"):
        roofline_plot.figure(untimed)
    assert "No roofline plot" not in html_report.to_html(graded, 0)


def _chromium() -> str | None:
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def _open(page: Path) -> tuple[str, list[str]]:
    """(the DOM after load, the console lines) of ``page`` in headless Chromium."""
    proc = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, [ln for ln in proc.stderr.splitlines() if re.search(r"CONSOLE|Uncaught", ln)]


@pytest.mark.skipif(_chromium() is None, reason="no Chromium on this machine (.ci/run installs the system's)")
def test_the_page_opens_in_a_headless_browser_without_console_errors(graded, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(html_report.to_html(graded, 0))
    dom, console = _open(page)
    assert "<svg" in dom and dom.count("<table") >= 1 and "% roofline" in dom
    assert not console, console
    index = tmp_path / "index.html"
    index.write_text(html_report.class_index(
        [{"student": "<alice>", "exercise": "ex07_softmax", "status": "graded", "score": 91.5, "max_score": 100.0,
          "report": "alice/ex07_softmax.html", "reason": "correct"},
         {"student": "bob", "exercise": "ex07_softmax", "status": "error", "score": None, "max_score": 100.0,
          "report": "", "reason": "no GPU"}], "2026-12-01T12:00:00+0000"))
    dom, console = _open(index)
    assert "&lt;alice&gt;" in dom and "1 scored (1 without a score)" in dom and "90-100%" in dom
    assert not console, console
    bad = tmp_path / "bad.html"   # the check itself: a page with a script error is seen
    bad.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>")
    assert any("undefinedFunction" in ln for ln in _open(bad)[1])


def test_grade_writes_an_html_report_and_a_plot(runner, tmp_path):
    from grader import cli
    from tests.test_instructor import COURSE
    out, plot = tmp_path / "r.html", tmp_path / "r.svg"
    res = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--format", "html", "-o", str(out),
                                   "--plot", str(plot), "--submission", str(COURSE / "solutions" / "ex90_add")])
    assert res.exit_code == 0, res.output
    assert out.read_text().startswith("<!DOCTYPE html>") and "ex90_add" in out.read_text()
    assert "<svg" in plot.read_text()
    stub = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--plot", str(tmp_path / "s.png")])
    assert "no roofline plot written: ex90_add: no timed shape" in stub.output and not (tmp_path / "s.png").exists()


def test_the_cli_offers_every_report_format():
    from grader import cli
    from grader.report.formats import FORMATS
    assert cli.FORMATS == FORMATS


def test_a_failing_grade_shows_its_details_and_what_to_try(graded):
    from grader.grade import CaseResult
    bad = CaseResult(token="T1", description="rows=3 cols=5", origin="edge", size=15, status="fail",
                     message="wrong output (y: 3 of 15 elements wrong)", details=("first wrong at (0, 1): got 0.5, expected 0.25",))
    r = replace(graded, cases=(bad, *graded.cases[1:]), smallest_failure=bad, repro="grade ex07 --case 'T1'",
                flags=())
    page = html_report.to_html(r, 0)
    assert "first wrong at (0, 1): got 0.5, expected 0.25" in page and "grade ex07 --case &#x27;T1&#x27;" in page
    assert "(quick mode)" in page or "mode)</h2>" in page
    assert "Ratio: the reference" in page


def test_a_kernel_profile_is_in_every_report(graded):
    """grade --profile's section in the text, JSON (valid against the schema) and HTML reports."""
    import json

    from grader import profiling
    from grader.report.formats import render
    from tests.test_profiling import kernels
    (k,) = kernels("ex08_naive")
    rep = profiling.ProfileReport("16384x4096", "rows=16384,cols=4096/x=0/seed=1", (k,), ncu="/usr/local/cuda/bin/ncu")
    data = {**profiling.to_dict(rep), "agreement": profiling.agreement(rep, 3.5)}
    r = replace(graded, kernel_profile=data)
    text = render(r, "text", 0)
    assert "Nsight Compute on 16384x4096" in text and "layernorm_rows" in text and "ncu/grader = 0.97" in text
    assert "DRAM throughput 6.7 % of peak" in text
    page = html_report.to_html(r, 0)
    assert "<h2>Nsight Compute: 16384x4096</h2>" in page and "<h3>layernorm_rows</h3>" in page
    out = json.loads(render(r, "json", 0))
    assert out["kernel_profile"]["kernels"][0]["name"] == "layernorm_rows"
    jsonschema = pytest.importorskip("jsonschema")
    from grader.report.json_report import schema
    jsonschema.validate(out, schema())
    skipped = replace(graded, kernel_profile={"shape": "s", "case": "t", "status": "skipped", "kernels": [],
                                              "message": "not run: the submission is not correct"})
    assert "skipped: not run: the submission is not correct" in render(skipped, "text", 0)


def test_what_to_try_next_reads_the_ridge_from_the_rate_that_was_measured(graded):
    """A matrix product at 45 % of its roofline: with only the fp16 rate measured (a tensor-core
    exercise), 1000 FLOP per byte is above the ridge (600 TFLOP/s / 4000 GB/s = 150): the advice is
    reuse, not wider loads; 10 FLOP per byte is below it; with no rate at all, memory-bound."""
    from grader.report.text import hints
    b0 = graded.benchmarks[0]

    def advice(flops_per_byte: float, ceilings: Ceilings) -> str:
        b = replace(b0, bytes=1e8, flops=1e8 * flops_per_byte, ceiling_fraction=0.45)
        r = replace(graded, benchmarks=(b,), ceilings=ceilings, kernels=())
        (line,) = [h for h in hints(r) if "of the roofline" in h]
        return line

    fp16 = Ceilings(copy_gbps=4000.0, fp16_tflops=600.0)
    assert "45% of the roofline" in advice(1000, fp16) and "reuse each loaded element" in advice(1000, fp16)
    assert "16-byte loads" in advice(10, fp16)
    assert "16-byte loads" in advice(1000, Ceilings(copy_gbps=4000.0))
    assert "reuse each loaded element" in advice(1000, Ceilings(copy_gbps=4000.0, fp32_tflops=50.0))
