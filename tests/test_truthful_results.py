"""Issue 12: every result the grader writes is true (compile-only, the CI formats, odd bytes, a hang
at import), tried as a student or CI would on a machine without a GPU. One test per row, at least."""
from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from grader import cli, static
from grader.report.json_report import schema
from tests.conftest import FIXTURES, ROOT

COURSE = FIXTURES / "course"
BROKEN_KERNEL = 'extern "C" __global__ void vector_add(const float* a, const float* b, float* c, long n)\n{\n  c[0] = nope;\n}\n'
STUB = ROOT / "student_template" / "ex01_vector_add"


@pytest.fixture
def no_nvcc(monkeypatch):
    monkeypatch.setattr(static, "nvcc_path", lambda: None)


@pytest.fixture
def no_compiler(monkeypatch, no_nvcc):
    monkeypatch.setattr(static, "nvrtc_unavailable", lambda: "NVRTC cannot be loaded (test)")


def _submission(tmp_path: Path, kernel: str | bytes, solution: str | None = None) -> Path:
    sub = tmp_path / "sub"
    sub.mkdir(exist_ok=True)
    (sub / "kernel.cu").write_bytes(kernel if isinstance(kernel, bytes) else kernel.encode())
    (sub / "solution.py").write_text(solution if solution is not None else (STUB / "solution.py").read_text())
    return sub


def _compile_only(runner, sub: Path | None, *extra: str):  # type: ignore[no-untyped-def]
    args = ["ex01", "--root", str(ROOT), "--compile-only", *(["--submission", str(sub)] if sub else []), *extra]
    return runner.invoke(cli.main, args)


# -- compile-only compiles with NVRTC, the compiler grading uses, and never claims what it did not check


def test_a_compile_error_is_not_reported_as_compiled_in_any_format(runner, tmp_path, no_nvcc):
    sub = _submission(tmp_path, BROKEN_KERNEL)
    out = tmp_path / "r.json"
    runner.invoke(cli.main, ["ex01", "--submission", str(sub), "--compile-only", "--format", "json", "-o", str(out)])
    data = json.loads(out.read_text())
    assert data["compiled"] is False and data["compiler"].startswith("NVRTC")
    xml = tmp_path / "r.xml"
    runner.invoke(cli.main, ["ex01", "--submission", str(sub), "--compile-only", "--format", "junit", "-o", str(xml)])
    assert "FAILED" in xml.read_text() and "kernel.cu compiled with" not in xml.read_text()
    page = tmp_path / "r.html"   # an HTML page, not the JUnit XML it used to fall through to
    runner.invoke(cli.main, ["ex01", "--submission", str(sub), "--compile-only", "--format", "html", "-o", str(page)])
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "problem: kernel.cu" in text and "<testsuites" not in text
    assert "kernel.cu compiled with" not in text


def test_junit_skips_the_compile_of_an_unreadable_submission(runner, tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "kernel.cu").write_text('extern "C" __global__ void vector_add() {}\n')   # no solution.py
    xml = tmp_path / "r.xml"
    runner.invoke(cli.main, ["ex01", "--submission", str(sub), "--compile-only", "--format", "junit", "-o", str(xml)])
    text = xml.read_text()
    assert "not compiled: the submission could not be read" in text and "no compiler here" not in text
    assert 'errors="0"' in text
def test_compile_only_without_nvcc_compiles_with_nvrtc_and_names_the_line(runner, tmp_path, no_nvcc):
    out = _compile_only(runner, _submission(tmp_path, BROKEN_KERNEL))
    assert out.exit_code == cli.EXIT_NOT_GRADED, out.output
    assert "kernel.cu:3: error:" in out.output and "nope" in out.output
    assert "compiling kernel.cu with NVRTC" in out.output and "FAILED" in out.output
    assert "kernel.cu compiled with" not in out.output and "no problems found" not in out.output


def test_compile_only_without_any_compiler_says_not_compiled_and_exits_4(runner, no_compiler):
    out = _compile_only(runner, None)
    assert out.exit_code == cli.EXIT_ERROR, out.output
    assert "NOT compiled" in out.output and "NVRTC cannot be loaded (test)" in out.output
    assert "no problems found" not in out.output


def test_compile_only_refuses_a_host_header_as_grading_would(runner, tmp_path):
    """NVRTC has no host headers: a kernel that includes <vector> fails when graded, so here too."""
    sub = _submission(tmp_path, "#include <vector>\n" + (STUB / "kernel.cu").read_text())
    out = _compile_only(runner, sub)
    assert out.exit_code == cli.EXIT_NOT_GRADED, out.output
    assert "kernel.cu:1: catastrophic error:" in out.output and 'source file "vector"' in out.output


def test_compile_only_with_nvcc_instead_of_nvrtc_says_they_differ(runner, tmp_path, monkeypatch):
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc on PATH")
    monkeypatch.setattr(static, "nvrtc_unavailable", lambda: "NVRTC cannot be loaded (test)")
    out = _compile_only(runner, None)
    assert out.exit_code == cli.EXIT_OK, out.output
    assert "compiled with nvcc, not with NVRTC, the compiler grading uses" in out.output


def test_the_nvrtc_options_are_the_ones_grading_uses():
    """CuPy adds these when a RawModule is compiled with NVRTC (cupy/cuda/compiler.py), after
    assembling the include folders (cupy._core.core), as the static check does."""
    import inspect
    from cupy._core.core import assemble_cupy_compiler_options
    from cupy.cuda import compiler
    source = inspect.getsource(compiler)
    for option in static.CUPY_NVRTC_OPTIONS:
        assert f"'{option}'" in source
    opts = static.grading_options(("-std=c++17", "-arch=sm_80"), "sm_90")
    assert opts == [*assemble_cupy_compiler_options(("-std=c++17",)), "-arch=sm_90", *static.CUPY_NVRTC_OPTIONS]


# -- a usage error for a bad --arch ----------------------------------------------------------------
def test_an_unknown_arch_is_a_usage_error_listing_valid_values(runner):
    out = runner.invoke(cli.main, ["ex07", "--root", str(ROOT), "--compile-only", "--arch", "foo"])
    assert out.exit_code == 2, out.output
    assert "'foo' is not a GPU architecture; valid values:" in out.output and "sm_90" in out.output
    assert static.arch_problem("sm_90a") is None and static.arch_problem("sm_90") is None
    assert static.arch_problem("sm_75a") is not None and static.arch_problem("compute_90") is not None


# -- every JSON result validates against the schema ------------------------------------------------
def _host(sub: Path | None, *extra: str) -> list[str]:
    return ["90", "--root", str(COURSE), "--backend", "host", *(["--submission", str(sub)] if sub else []), *extra]


def _every_status(tmp_path: Path, monkeypatch) -> dict[str, tuple[list[str], int]]:  # type: ignore[no-untyped-def]
    """name -> (grade arguments, expected exit code), one per kind of result."""
    empty = tmp_path / "empty"
    empty.mkdir()
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "kernel.cu").write_text("//\n")
    (slow / "solution.py").write_text("import time\ndef solve(a, b, c):\n    time.sleep(1.0)\n    c[...] = a + b\n")
    broken = _submission(tmp_path, BROKEN_KERNEL)
    latin1 = tmp_path / "latin1"
    shutil.copytree(STUB, latin1)
    (latin1 / "kernel.cu").write_bytes(b"// caf\xe9\n" + (STUB / "kernel.cu").read_bytes())
    return {
        "graded": (_host(COURSE / "solutions" / "ex90_add", "--no-timing"), 0),
        "graded below --fail-under": (_host(None, "--no-timing", "--fail-under", "50"), 1),
        "not graded": (_host(empty), 3),
        "time limit": (_host(slow, "--time-limit", "2"), 4),
        "no GPU": (["ex01", "--root", str(ROOT)], 4),
        "compile-only": (["ex01", "--root", str(ROOT), "--compile-only"], 0),
        "compile error": (["ex01", "--root", str(ROOT), "--compile-only", "--submission", str(broken)], 3),
        "not compiled": (["ex01", "--root", str(ROOT), "--compile-only", "--submission", str(STUB), "--arch",
                          "sm_90"], 4),
        "odd byte": (["ex01", "--root", str(ROOT), "--compile-only", "--submission", str(latin1)], 3),
    }


def test_every_json_result_validates_against_the_schema(runner, tmp_path, monkeypatch, no_gpu):
    jsonschema = pytest.importorskip("jsonschema")
    cases = _every_status(tmp_path, monkeypatch)
    for name, (args, code) in cases.items():
        with monkeypatch.context() as m:
            if name == "not compiled":
                m.setattr(static, "nvrtc_unavailable", lambda: "NVRTC cannot be loaded (test)")
                m.setattr(static, "nvcc_path", lambda: None)
            path = tmp_path / f"{name}.json"
            out = runner.invoke(cli.main, [*args, "--format", "json", "-o", str(path)])
        assert out.exit_code == code, (name, out.output)
        data = json.loads(path.read_text())
        try:
            jsonschema.validate(data, schema())
        except jsonschema.ValidationError as exc:
            pytest.fail(f"{name}: {exc.message} at {list(exc.absolute_path)}")
        assert data["exit_code"] == code, name
    data = json.loads((tmp_path / "compile-only.json").read_text())
    assert data["status"] == "compile_only" and data["compiled"] and data["kernels"][0]["local_bytes"] == 0
    # nothing graded, no score: null, not 0 (a submission that cannot be graded does score 0)
    for name in ("no GPU", "time limit", "compile-only", "not compiled", "compile error", "odd byte"):
        assert json.loads((tmp_path / f"{name}.json").read_text())["score"]["total"] is None, name
    assert json.loads((tmp_path / "not graded.json").read_text())["score"]["total"] == 0


def test_the_schema_refuses_a_score_for_a_run_that_graded_nothing():
    jsonschema = pytest.importorskip("jsonschema")
    from grader.report.json_report import error_dict
    data = error_dict("ex01_vector_add", "sub", "no_gpu", "no CUDA GPU found", 4)
    jsonschema.validate(data, schema())
    data["score"]["total"] = 0.0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema())


def test_no_gpu_names_the_compile_only_command_for_the_same_submission(runner, tmp_path, no_gpu):
    sub = tmp_path / "my sub"
    shutil.copytree(STUB, sub)
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "-s", str(sub)])
    assert out.exit_code == 4
    assert f"`grade ex01_vector_add --submission '{sub}' --compile-only`" in " ".join(out.output.split())


def test_sanitize_without_the_tool_or_a_gpu_names_both_the_gpu_first(runner, monkeypatch, no_gpu):
    from grader import sanitize
    monkeypatch.setattr(sanitize, "find_sanitizer", lambda: None)
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--sanitize"])
    text = " ".join(out.output.split())
    assert out.exit_code == 4 and text.startswith("grade: no CUDA GPU found: --sanitize runs kernels on a GPU"), text
    assert "compute-sanitizer not found" in text and "`grade ex01_vector_add --compile-only`" in text
    assert len([ln for ln in out.output.splitlines() if ln.strip()]) == 1
    monkeypatch.setattr(sanitize, "find_sanitizer", lambda: "/usr/bin/compute-sanitizer")   # only the GPU missing
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--sanitize"])
    assert out.exit_code == 4 and "no CUDA GPU found" in out.output and "compute-sanitizer not found" not in out.output


@pytest.mark.parametrize("what, kernel, solution, words", [
    ("compile error", BROKEN_KERNEL, None, "kernel.cu:3: error"),
    ("no solve", None, "import numpy as np\n", "solution.py: defines no function solve"),
    ("malformed solve", None, "def solve(a):\n    pass\n", "solve takes 1 positional argument; the exercise passes 3")])
def test_without_a_gpu_a_problem_the_static_checks_find_is_the_submissions(runner, tmp_path, no_gpu, what, kernel,
                                                                          solution, words):
    """A new user's trial: without a GPU a missing kernel.cu was exit 3, but a compile error or a
    missing solve() only "no GPU" (exit 4). Now what --compile-only finds is reported (exit 3), as
    grade batch records it, with the missing GPU named in the same line."""
    sub = _submission(tmp_path, kernel if kernel is not None else (STUB / "kernel.cu").read_text(), solution)
    path = tmp_path / "r.json"
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "-s", str(sub), "--json", str(path)])
    assert out.exit_code == cli.EXIT_NOT_GRADED, out.output
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0] and "no CUDA GPU found" in lines[0], lines
    assert f"`grade ex01_vector_add --submission {sub} --compile-only`" in lines[0]
    data = json.loads(path.read_text())
    assert data["status"] == "not_graded" and data["reason_kind"] == "static_check" and data["score"]["total"] == 0


def test_grade_and_grade_batch_share_the_no_gpu_static_checks(runner, tmp_path, no_gpu, monkeypatch):
    """Both commands ask grader.static.without_gpu; a problem it reports is each one's verdict."""
    from grader import batch as gb
    real = static.without_gpu
    monkeypatch.setattr(static, "without_gpu", lambda spec, sub, arch="sm_90": ("kernel.cu:1: planted", real(spec, sub, arch)[1]))
    sub = _submission(tmp_path, (STUB / "kernel.cu").read_text())
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "-s", str(sub)])
    assert out.exit_code == cli.EXIT_NOT_GRADED and "kernel.cu:1: planted" in out.output, out.output
    from grader.spec import list_exercises
    ex = next(e for e in list_exercises(ROOT) if e.name == "ex01_vector_add")
    (row,) = gb.static_rows([gb.Job("ann", ex, sub)], [], "no CUDA GPU found")
    assert (row.status, row.exit_code, row.reason) == ("not_graded", 3, "kernel.cu:1: planted")


def test_without_a_gpu_a_clean_submission_is_still_the_no_gpu_line(runner, tmp_path, no_gpu):
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "-s", str(_submission(tmp_path, (STUB / "kernel.cu").read_text()))])
    assert out.exit_code == cli.EXIT_ERROR and "no CUDA GPU found: grading runs kernels on a GPU" in out.output


def test_the_grade_commands_usage_shows_the_exercise_form(runner):
    for args in (["ex07", "--help"], ["run", "--help"]):
        out = runner.invoke(cli.main, args)
        assert out.exit_code == 0 and out.output.startswith("Usage: grade EXERCISE [OPTIONS]"), out.output[:80]


# -- JUnit: a clean compile-only passes; a wrong result is a failure, an environment problem an error
def _junit(runner, tmp_path, args: list[str]) -> tuple[int, ET.Element]:  # type: ignore[no-untyped-def]
    path = tmp_path / "junit.xml"
    out = runner.invoke(cli.main, [*args, "--format", "junit", "-o", str(path)])
    suite = ET.parse(path).getroot().find("testsuite")
    assert int(suite.get("tests")) == len(suite.findall("testcase"))
    for tag in ("failures", "errors", "skipped"):
        child = tag.removesuffix("s") if tag != "skipped" else "skipped"
        assert int(suite.get(tag, "0")) == len(suite.findall(f"testcase/{child}")), tag
    return out.exit_code, suite


def test_junit_tells_passes_failures_and_errors_apart(runner, tmp_path, no_gpu):
    code, suite = _junit(runner, tmp_path, ["ex01", "--root", str(ROOT), "--compile-only"])
    assert code == 0 and suite.get("failures") == "0" and suite.get("errors") == "0"
    assert suite.get("skipped") == "1"
    code, suite = _junit(runner, tmp_path, ["ex01", "--root", str(ROOT), "--compile-only", "--submission",
                                            str(_submission(tmp_path, BROKEN_KERNEL))])
    assert code == 3 and suite.get("failures") == "1" and suite.get("errors") == "0"
    assert "kernel.cu:3: error" in suite.find("testcase/failure").get("message")
    code, suite = _junit(runner, tmp_path, ["ex01", "--root", str(ROOT)])      # no GPU: the machine's problem
    assert code == 4 and suite.get("errors") == "1" and suite.get("failures") == "0"
    code, suite = _junit(runner, tmp_path, _host(tmp_path / "nowhere"))       # the submission's problem
    assert code == 3 and suite.get("failures") == "1" and suite.get("errors") == "0"


# -- Gradescope: a run that did not grade is not a score of 0 --------------------------------------
def _gradescope(runner, tmp_path, args: list[str]) -> tuple[int, dict]:  # type: ignore[no-untyped-def]
    path = tmp_path / "results.json"
    out = runner.invoke(cli.main, [*args, "--format", "gradescope", "-o", str(path)])
    return out.exit_code, json.loads(path.read_text())


def _scores(data: dict) -> list:
    return [data[k] for k in ("score",) if k in data] + [t["score"] for t in data["tests"] if "score" in t]


@pytest.mark.parametrize("args, words", [(["--compile-only"], "NOT GRADED (no score)"), ([], "NOT GRADED: no CUDA GPU")])
def test_gradescope_has_no_score_when_nothing_was_graded(runner, tmp_path, no_gpu, args, words):
    code, data = _gradescope(runner, tmp_path, ["ex01", "--root", str(ROOT), *args])
    assert _scores(data) == [] and words in data["output"] and ".." not in data["output"]
    assert all(t.get("status") != "failed" for t in data["tests"])
    assert code in (0, 4)


def test_gradescope_scores_zero_for_a_submission_that_cannot_be_graded(runner, tmp_path):
    code, data = _gradescope(runner, tmp_path, _host(tmp_path / "nowhere"))
    assert code == 3 and data["score"] == 0 and data["tests"][0]["status"] == "failed"


# -- a byte that is not UTF-8 ----------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["compile-only", "grade"])
def test_a_latin1_byte_is_one_line_naming_file_and_line_and_the_result_is_written(runner, tmp_path, mode):
    jsonschema = pytest.importorskip("jsonschema")
    sub = tmp_path / "latin1"
    sub.mkdir()
    (sub / "kernel.cu").write_bytes(b'extern "C" __global__ void add(float* c)\n{\n  c[0] = 1.0f; // caf\xe9\n}\n')
    (sub / "solution.py").write_text("def solve(a, b, c):\n    pass\n")
    path = tmp_path / "r.json"
    args = (["ex01", "--root", str(ROOT), "--compile-only", "--submission", str(sub)] if mode == "compile-only"
            else _host(sub))
    out = runner.invoke(cli.main, [*args, "--format", "json", "-o", str(path)])
    assert out.exit_code == cli.EXIT_NOT_GRADED, out.output
    assert "Traceback" not in out.output and isinstance(out.exception, SystemExit)
    data = json.loads(path.read_text())
    assert "kernel.cu:3: byte 0xE9 is not UTF-8 text; fix: save kernel.cu as UTF-8" in data["reason"]
    jsonschema.validate(data, schema())


# -- a hang at import is named as such -------------------------------------------------------------
def test_a_hang_while_importing_solution_py_says_so_and_where(runner, tmp_path):
    course = tmp_path / "course"
    shutil.copytree(COURSE, course, ignore=shutil.ignore_patterns("__pycache__"))
    spec = course / "exercises" / "ex90_add" / "spec.toml"
    spec.write_text(spec.read_text().replace("compile_s = 30", "compile_s = 6"))   # room for a loaded CI machine
    sub = tmp_path / "hang"
    sub.mkdir()
    (sub / "kernel.cu").write_text("//\n")
    (sub / "solution.py").write_text("import numpy as np\n\nwhile True:\n    pass\n\ndef solve(a, b, c):\n    c[...] = a + b\n")
    path = tmp_path / "r.json"
    out = runner.invoke(cli.main, ["90", "--root", str(course), "--backend", "host", "--submission", str(sub),
                                   "--format", "json", "-o", str(path)])
    assert out.exit_code == cli.EXIT_NOT_GRADED, out.output
    reason = json.loads(path.read_text())["reason"]
    assert "solution.py did not finish importing within 6 s ([limits] compile_s)" in reason
    # the loop is lines 3-4: a sample can land on either (CI saw :4 once on a loaded machine)
    assert re.search(r"it was at solution\.py:[34]\b", reason) and "never finishes" not in reason, reason


def test_a_batch_result_for_a_grade_that_wrote_nothing_validates(tmp_path):
    """grade batch writes each student's JSON itself when the grade process died before it could."""
    jsonschema = pytest.importorskip("jsonschema")
    from grader.batch import Job, run_job
    from grader.spec import list_exercises
    ex = next(e for e in list_exercises(COURSE) if e.name == "ex90_add")
    job = Job("alice", ex, COURSE / "solutions" / "ex90_add")
    data = run_job(job, tmp_path, COURSE, None, "json", None, ["--no-such-option"])
    jsonschema.validate(data, schema())
    assert data["status"] == "error" and data["exit_code"] == 4 and "grade exited 2 without a result" in data["reason"]
    assert json.loads((tmp_path / "alice" / "ex90_add.json").read_text()) == data
    from grader.batch import row
    assert row(job, data, False, tmp_path, "json").score is None   # the summary shows no score, not 0


# -- CUDA 13's crt/ headers: <mma.h> includes crt/mma.h, which CuPy's pip headers may lack -----------------
def test_the_crt_headers_are_added_only_where_the_include_folders_lack_them(tmp_path, monkeypatch):
    import sys
    have, lack, toolkit = tmp_path / "have", tmp_path / "lack", tmp_path / "toolkit"
    for folder in (have / "crt", lack, toolkit / "include" / "crt"):
        folder.mkdir(parents=True)
    (have / "crt" / "mma.h").write_text("")
    (toolkit / "include" / "crt" / "mma.h").write_text("")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")])   # no nvidia wheels
    monkeypatch.setattr(static, "nvcc_path", lambda: None)
    monkeypatch.setenv("CUDA_PATH", str(toolkit))
    static.crt_include_folder.cache_clear()
    try:
        assert static.crt_include_folder((str(have),)) is None
        assert static.crt_include_folder((str(lack),)) == str((toolkit / "include").resolve())
        monkeypatch.setenv("CUDA_PATH", str(lack))
        static.crt_include_folder.cache_clear()
        assert static.crt_include_folder((str(lack),)) in (None, str(Path("/usr/local/cuda/include").resolve()))
        # the working folder (a "" or relative sys.path entry) is never a candidate: a student's folder
        work = tmp_path / "work"
        (work / "nvidia" / "cu13" / "include" / "crt").mkdir(parents=True)
        (work / "nvidia" / "cu13" / "include" / "crt" / "mma.h").write_text("")
        monkeypatch.chdir(work)
        monkeypatch.setattr(sys, "path", ["", "."])
        static.crt_include_folder.cache_clear()
        assert static.crt_include_folder((str(lack),)) in (None, str(Path("/usr/local/cuda/include").resolve()))
    finally:
        static.crt_include_folder.cache_clear()


def test_a_missing_crt_header_names_the_fix():
    from grader.kernel import CompileError, parse_compiler_log
    log = '/site/nvidia/cu13/include/mma.h(55): catastrophic error: cannot open source file "crt/mma.h"\n'
    diags = parse_compiler_log(log, "kernel.cu")
    assert diags and "nvidia-cuda-crt" in diags[0][3] and "CUDA_PATH" in diags[0][3]
    assert "nvidia-cuda-crt" in str(CompileError("kernel.cu", diags, log))


def test_a_host_standard_library_header_names_why_it_is_missing():
    """New-user trial (2026-12-04): `#include <vector>` in kernel.cu gave only NVRTC's "cannot open
    source file"; the message now says NVRTC has no host C++ library. A header of the submission's
    own that is missing gets no such note."""
    from grader.kernel import parse_compiler_log
    diags = parse_compiler_log('kernel.cu(3): catastrophic error: cannot open source file "vector"\n', "kernel.cu")
    assert diags and "host's C++ standard library" in diags[0][3] and diags[0][:2] == ("kernel.cu", 3)
    own = parse_compiler_log('kernel.cu(3): catastrophic error: cannot open source file "vector_ops.cuh"\n', "kernel.cu")
    assert own and "standard library" not in own[0][3]


def test_a_missing_solution_py_says_where_to_start_from(tmp_path):
    from grader.spec import load_spec
    from grader.static import static_check
    root = Path(__file__).resolve().parents[1]
    (tmp_path / "kernel.cu").write_text("// nothing yet\n")
    kind, message = static_check(load_spec(root / "exercises" / "ex01_vector_add" / "spec.toml"), tmp_path)
    assert kind == "bad_submission" and message.endswith("fix: add it (the exercise's starting point is "
                                                         "student_template/ex01_vector_add/solution.py)"), message

