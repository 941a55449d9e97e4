"""The `grade` command through click's runner (no GPU here: the host backend or the no-GPU path)."""
from __future__ import annotations

import json
import shutil

import pytest

from grader import cli
from tests.conftest import FIXTURES, ROOT

COURSE = FIXTURES / "course"


def test_help_documents_commands_and_exit_codes(runner):
    out = runner.invoke(cli.main, ["--help"])
    assert out.exit_code == 0
    for word in ("grade ex07", "--compile-only", "list", "Exit codes", "could not be graded"):
        assert word in out.output
    out = runner.invoke(cli.main, ["run", "--help"])
    assert out.exit_code == 0 and "--submission" in out.output and "--fail-under" in out.output


def test_list_shows_every_exercise(runner):
    out = runner.invoke(cli.main, ["list", "--root", str(ROOT)])
    assert out.exit_code == 0
    for name in ("ex01_vector_add", "ex04_reduction", "ex07_softmax"):
        assert name in out.output


def test_tables_written_to_a_file_are_not_folded_at_80_columns(monkeypatch):
    """New-user trial 14: off a terminal rich folds tables at 80 columns ("student_template/ex01_" /
    "vector_add"), in CI logs and report files alike; without COLUMNS the reports use LOG_WIDTH."""
    from click.testing import CliRunner
    monkeypatch.delenv("COLUMNS", raising=False)
    out = CliRunner().invoke(cli.main, ["list", "--root", str(ROOT)])
    assert out.exit_code == 0 and "student_template/ex01_vector_add" in out.output, out.output
    assert max(map(len, out.output.splitlines())) > 80
    monkeypatch.setenv("COLUMNS", "60")   # a width the user asked for still holds
    out = CliRunner().invoke(cli.main, ["list", "--root", str(ROOT)])
    assert max(map(len, out.output.splitlines())) <= 60


@pytest.mark.parametrize("columns", [None, "60"])
def test_a_message_off_a_terminal_stays_one_line(monkeypatch, tmp_path, columns):
    """New-user trial (twenty-seventh session): piped, or at COLUMNS=80, rich folded the one-line
    messages (--compile-only's problem lines, "... need a" / "GPU"); a CI log's grep found half."""
    from click.testing import CliRunner
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "student_template" / "ex01_vector_add", sub)
    (sub / "kernel.cu").write_text("#include <vector>\n" + (sub / "kernel.cu").read_text())
    out = CliRunner().invoke(cli.main, ["ex01", "--root", str(ROOT), "--compile-only", "--submission", str(sub)])
    problem = [ln for ln in out.output.splitlines() if ln.startswith("problem:")]
    assert len(problem) == 1 and "vector" in problem[0] and "NVRTC" in problem[0], out.output
    assert len(problem[0]) > 120


@pytest.mark.parametrize("query", ["7", "ex07", "ex07_softmax", "softmax"])
def test_exercise_names_resolve_and_no_gpu_is_one_clear_line(runner, no_gpu, query):
    out = runner.invoke(cli.main, [query, "--root", str(ROOT)])
    assert out.exit_code == cli.EXIT_ERROR
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in out.output
    assert "no CUDA GPU found" in lines[0] and "grade ex07_softmax --compile-only" in lines[0]


def test_no_gpu_still_writes_the_json_result(runner, no_gpu, tmp_path):
    path = tmp_path / "result.json"
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--format", "json", "--output", str(path)])
    assert out.exit_code == cli.EXIT_ERROR
    data = json.loads(path.read_text())
    assert data["status"] == "error" and data["reason_kind"] == "no_gpu" and data["exit_code"] == 4


def test_a_grade_stopped_after_the_early_output_check_leaves_no_result_file(runner, tmp_path, monkeypatch):
    """``--output`` is checked writable before grading; a grade stopped right after that check
    (killed, interrupted: here load_spec raises KeyboardInterrupt) leaves no empty result file, and
    an existing file is left exactly as it was. The folders made for it stay (the worker's
    isolation can hide only a folder that exists when it starts)."""
    from grader import check, publish, spec   # noqa: F401 - imported before the patch: both bind load_spec
                                              # at import, and would keep the patched one for later tests

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(spec, "load_spec", stopped)
    new = tmp_path / "made" / "for it" / "result.json"
    kept = tmp_path / "kept.json"
    kept.write_text("an earlier result\n")
    before = kept.stat()
    for path in (new, kept):
        out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--format", "json", "--output", str(path)])
        assert out.exit_code != 0 and "cannot write" not in out.output, out.output
    assert not new.exists() and new.parent.is_dir() and not any(new.parent.iterdir())
    assert kept.read_text() == "an earlier result\n" and kept.stat().st_mtime_ns == before.st_mtime_ns


@pytest.mark.parametrize("option, name", [("--output", "result.json"), ("--plot", "roofline.svg")])
def test_an_unwritable_output_is_refused_before_grading(runner, tmp_path, option, name):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), option, str(blocker / name)])
    assert out.exit_code == 2 and "cannot write" in out.output and option in out.output, out.output
    assert "is a file, not a folder" in out.output and "File exists" not in out.output, out.output


def test_unknown_exercise_is_a_usage_error(runner):
    out = runner.invoke(cli.main, ["ex99", "--root", str(ROOT)])
    assert out.exit_code == 2 and "no exercise matches 'ex99'" in out.output and "ex07_softmax" in out.output
    assert "did you mean" not in out.output     # nothing is close to ex99


@pytest.mark.parametrize("args, suggestion", [
    (["ex07_sofmax"], "(did you mean ex07_softmax?)"), (["softmx"], "(did you mean ex07_softmax?)"),
    (["exo7"], "(did you mean ex07_softmax?)"), (["ex1o"], "(did you mean ex10_gemm_smem?)"),
    (["lst"], "(did you mean `grade list`?)"), (["chek"], "(did you mean `grade check`?)"),
    (["check", "ex07_sofmax"], "(did you mean ex07_softmax?)"), (["batch", ".", "--exercises", "reducton"],
                                                                 "(did you mean ex04_reduction?)")])
def test_a_misspelt_exercise_or_command_gets_a_suggestion_in_the_one_error_line(runner, args, suggestion):
    out = runner.invoke(cli.main, [*args, "--root", str(ROOT)])
    assert out.exit_code == 2, out.output
    error = [ln for ln in out.output.splitlines() if ln.startswith("Error:")]
    assert len(error) == 1 and suggestion in error[0] and "known: ex01_vector_add" in error[0], out.output


def test_a_submission_folder_that_does_not_exist_says_check_the_path(runner, tmp_path):
    out = runner.invoke(cli.main, ["ex07", "--root", str(ROOT), "--compile-only", "--submission",
                                   str(tmp_path / "doesnotexist")])
    assert out.exit_code == cli.EXIT_NOT_GRADED
    text = " ".join(out.output.split())
    assert f"{tmp_path / 'doesnotexist'}: no such folder; fix: check the path" in text
    assert "pass --submission DIR" not in text


@pytest.mark.nvcc
def test_compile_only_reports_resources_of_the_stub(runner):
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--compile-only"])
    assert out.exit_code == 0, out.output
    assert "vector_add" in out.output and "no problems found" in out.output
    assert "correctness and timing need a GPU" in out.output


def test_compile_only_says_an_arch_specific_exercise_ignores_another_arch(runner):
    """New-user trial (2026-12-04): `grade ex15 --arch sm_80 --compile-only` compiled for sm_90a (the
    spec's [features] arch, as grading does) under a header that said sm_80; now the header names
    the target used and one line says --arch was not used."""
    out = runner.invoke(cli.main, ["ex15", "--root", str(ROOT), "--compile-only", "--arch", "sm_80"])
    text = " ".join(out.output.split())
    assert "--arch sm_80 not used: ex15_gemm_fp8_blockscaled compiles for sm_90a only" in text, out.output
    assert "(sm_90a)" in text and "(sm_80)" not in text, out.output


def test_compile_only_accepts_imports_of_modules_without_a_spec(runner, tmp_path, monkeypatch):
    """`import __main__` (a module with no import spec, as under a console script) is installed,
    not a grader error."""
    import shutil
    import sys
    monkeypatch.setattr(sys.modules["__main__"], "__spec__", None)
    shutil.copytree(ROOT / "student_template" / "ex01_vector_add", tmp_path / "sub")
    sol = tmp_path / "sub" / "solution.py"
    sol.write_text("import __main__\n" + sol.read_text())
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--compile-only", "--submission", str(tmp_path / "sub")])
    assert "grader error" not in out.output and "__spec__" not in out.output, out.output
    assert out.exit_code == 0, out.output


def test_compile_only_accepts_a_helper_module_of_the_submission(runner, tmp_path):
    """solution.py importing a module that sits beside it (the worker puts the folder on
    sys.path) is fine; an uninstalled package still is not, with the fix named."""
    import shutil
    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "student_template" / "ex01_vector_add", sub)
    (sub / "mycfg.py").write_text("BLOCK = 256\n")
    sol = sub / "solution.py"
    sol.write_text("import mycfg\n" + sol.read_text())
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--compile-only", "--submission", str(sub)])
    assert out.exit_code == 0 and "mycfg" not in out.output, out.output
    sol.write_text("import nopackage_xyz\n" + sol.read_text())
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--compile-only", "--submission", str(sub)])
    assert "imports 'nopackage_xyz', which is not installed here; fix:" in out.output, out.output


def test_compile_only_refuses_kernels_that_inline_cub(runner, tmp_path):
    """A kernel that only wraps cub::BlockReduce is refused before any GPU time ([features]
    forbidden_headers, "cub/" by default), with the kernel and the header named."""
    from grader.static import nvrtc_unavailable
    if nvrtc_unavailable() is not None:
        pytest.skip("NVRTC cannot be loaded on this machine")
    import shutil
    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "student_template" / "ex04_reduction", sub)
    (sub / "kernel.cu").write_text(
        "#include <cub/block/block_reduce.cuh>\n"
        'extern "C" __global__ void block_sum(const float* x, float* out, int n) {\n'
        "  typedef cub::BlockReduce<float, 256> BR;\n  __shared__ typename BR::TempStorage tmp;\n"
        "  int i = blockIdx.x * 256 + threadIdx.x;\n  float s = BR(tmp).Sum(i < n ? x[i] : 0.f);\n"
        "  if (threadIdx.x == 0) atomicAdd(out, s);\n}\n")
    (sub / "solution.py").write_text("import numpy as np\nfrom grader.kernel import load\n\n"
                                     "_k = load('kernel.cu').get_function('block_sum')\n\n\n"
                                     "def solve(x, out):\n    _k(((x.size + 255) // 256,), (256,), (x, out, np.int32(x.size)))\n")
    out = runner.invoke(cli.main, ["ex04", "--root", str(ROOT), "--compile-only", "--submission", str(sub)])
    assert out.exit_code == cli.EXIT_NOT_GRADED, out.output
    assert "block_sum inlines device code of cub/block/block_reduce.cuh" in out.output, out.output
    assert "forbidden_headers" in out.output


@pytest.mark.nvcc
def test_compile_only_names_the_line_of_a_compile_error(runner, tmp_path):
    (tmp_path / "kernel.cu").write_text('extern "C" __global__ void vector_add(float* c)\n{\n  c[0] = nope;\n}\n')
    (tmp_path / "solution.py").write_text("def solve(a, b, c):\n    pass\n")
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--compile-only", "--submission", str(tmp_path)])
    assert out.exit_code == cli.EXIT_NOT_GRADED
    assert "kernel.cu:3: error:" in out.output and "nope" in out.output


@pytest.mark.nvcc
def test_compile_only_prints_brackets_as_text(runner, tmp_path):
    """Paths and messages are printed literally: '[/x]' or '[features]' is not rich markup."""
    import shutil
    sub = tmp_path / "[/x]alice"
    shutil.copytree(ROOT / "student_template" / "ex11_gemm_regtile", sub)
    (sub / "solution.py").write_text((sub / "solution.py").read_text() + "\n_x = lambda a, b: cupy.matmul(a, b)\n")
    out = runner.invoke(cli.main, ["ex11", "--root", str(ROOT), "--compile-only", "--submission", str(sub)])
    assert out.exit_code == cli.EXIT_NOT_GRADED, out.output
    assert "[/x]alice" in out.output and "[features] forbidden" in out.output


@pytest.mark.nvcc
def test_compile_only_warns_about_a_missing_required_instruction(runner):
    out = runner.invoke(cli.main, ["ex12", "--root", str(ROOT), "--compile-only"])   # the stub: no mma yet
    assert out.exit_code == 0, out.output
    assert "warning:" in out.output and "required_ptx" in out.output
    assert "no problems found by the static checks, 1 warning above" in " ".join(out.output.split())


def test_compile_only_checks_solve_without_a_compiler(runner, tmp_path, monkeypatch):
    import grader.static as static
    monkeypatch.setattr(static, "nvcc_path", lambda: None)
    monkeypatch.setattr(static, "nvrtc_unavailable", lambda: "NVRTC cannot be loaded (test)")
    (tmp_path / "kernel.cu").write_text("// nothing\n")
    (tmp_path / "solution.py").write_text("def solve(a, b):\n    pass\n")
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--compile-only", "--submission", str(tmp_path)])
    assert out.exit_code == cli.EXIT_NOT_GRADED
    assert "solve takes 2 positional arguments; the exercise passes 3" in out.output
    assert "NOT compiled (NVRTC cannot be loaded (test); nvcc is not on PATH either)" in out.output


def test_host_grade_of_the_solution_writes_valid_json(runner, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from grader.report.json_report import schema
    path = tmp_path / "r.json"
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--submission",
                                   str(COURSE / "solutions" / "ex90_add"), "--format", "json", "-o", str(path)])
    assert out.exit_code == 0, out.output
    data = json.loads(path.read_text())
    jsonschema.validate(data, schema())
    assert data["correct"] and data["score"]["correctness"] == 30 and data["exit_code"] == 0
    assert data["benchmarks"][0]["submission"]["n"] >= 10


def test_fail_under_and_not_graded_exit_codes(runner, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from grader.report.json_report import schema
    stub = ["90", "--root", str(COURSE), "--backend", "host", "--format", "json"]
    out = runner.invoke(cli.main, [*stub, "--fail-under", "50", "-o", str(tmp_path / "a.json")])
    assert out.exit_code == cli.EXIT_BELOW
    empty = tmp_path / "empty"
    empty.mkdir()
    out = runner.invoke(cli.main, [*stub, "--submission", str(empty), "-o", str(tmp_path / "b.json")])
    assert out.exit_code == cli.EXIT_NOT_GRADED
    data = json.loads((tmp_path / "b.json").read_text())
    jsonschema.validate(data, schema())
    assert data["status"] == "not_graded" and data["reason_kind"] == "bad_submission"


def test_a_submissions_escapes_and_lone_surrogates_reach_no_report_as_such(runner, tmp_path):
    """What solve raises reaches the report (the worker sends it as JSON, where "\\ud800" decodes to a
    lone surrogate): it used to crash the terminal report and the --output file's write after the
    grade (exit 1, a 0-byte file, no score for a wrong submission), and its ANSI escapes reached the
    terminal as such (a cursor moved up, lines erased, a fake "Score: 100 / 100")."""
    from tests.conftest import fake_submission
    sub = fake_submission(tmp_path, '''
        def solve(a, b, c):
            raise ValueError("x\\ud800\\x1b[1A\\x1b[2K\\rScore: 100 / 100\\x9b\\u202e")
    ''')
    path = tmp_path / "report.txt"
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--submission", str(sub),
                                   "--no-timing", "-o", str(path)])
    assert out.exit_code == 0, out.output
    for text in (out.output, path.read_text(encoding="utf-8")):
        assert "Score: 0 / 100" in text
        assert "x\\ud800\\x1b[1A\\x1b[2K\\x0dScore: 100 / 100\\x9b\\u202e" in text   # shown, escaped
        assert not any(ord(ch) < 0x20 and ch not in "\n\t" or 0x7f <= ord(ch) < 0xa0 for ch in text)


def test_the_submissions_worker_cannot_write_where_the_result_goes(runner, tmp_path):
    """The worker reads --output from the grader's /proc/PID/cmdline; were the result's folder in
    its reach, a forged results.json (a full score) would stay wherever the grader does not get to
    write its own (the worker, of the same user, can kill it). The folder is hidden from it: what
    it writes there lands in its own empty tmpfs."""
    from tests.conftest import fake_submission
    results = tmp_path / "results"
    results.mkdir()
    path = results / "results.json"
    sub = fake_submission(tmp_path, f'''
        import json
        def solve(a, b, c):
            c[...] = a - b   # wrong
            try:   # (here the path is given: the grader of this test is pytest, whose cmdline does not hold it)
                with open({str(path)!r}, "w") as f:
                    json.dump({{"score": 100.0}}, f)
                open({str(results / "forged")!r}, "w").close()
            except OSError:
                pass
    ''')
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--submission", str(sub),
                                   "--no-timing", "--format", "gradescope", "--output", str(path)])
    assert out.exit_code == 0, out.output
    assert not (results / "forged").exists(), "the worker wrote into the result's folder"
    assert json.loads(path.read_text())["score"] == 0


def test_text_report_shows_the_smallest_failure_and_how_to_reproduce(runner):
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host"])
    assert out.exit_code == 0
    assert "Smallest failing case: n=1" in out.output
    assert "never written" in out.output and "--case 'n=1/" in out.output
    assert "Score: 0 / 100" in out.output


def test_bad_case_token_is_one_line(runner):
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--case", "n=oops"])
    assert out.exit_code == 2  # a usage error, found before any grading
    assert "Invalid value for --case: 'n=oops': expected" in out.output and "Traceback" not in out.output
    assert out.output.count("--case") == 1   # the option named once (it was "--case: --case 'n=oops'")


def test_options_that_cannot_work_together_are_refused_before_grading(runner, tmp_path):
    base = ["90", "--root", str(COURSE), "--backend", "host"]
    out = runner.invoke(cli.main, base + ["--compile-only", "--plot", str(tmp_path / "p.svg")])
    assert out.exit_code == 2 and "--compile-only times nothing" in out.output
    same = str(tmp_path / "r.json")
    out = runner.invoke(cli.main, base + ["--format", "json", "-o", same, "--json", same])
    assert out.exit_code == 2 and "is the --output file too" in out.output
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "p.svg").exists()


def test_broken_spec_is_one_line_naming_file_and_field(runner, tmp_path):
    import shutil
    course = tmp_path / "course"
    shutil.copytree(COURSE, course)
    spec = course / "exercises" / "ex90_add" / "spec.toml"
    spec.write_text(spec.read_text().replace("max = 5000", "max = 0"))
    out = runner.invoke(cli.main, ["90", "--root", str(course), "--backend", "host"])
    assert out.exit_code == cli.EXIT_ERROR
    assert "spec.toml: [dims.n] max (0) is below min (1); fix: set max >= min" in out.output


def test_a_file_given_as_submission_says_to_pass_its_folder(runner, tmp_path):
    f = tmp_path / "solution.py"
    f.write_text("def solve(a, b, c): pass\n")
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--submission", str(f)])
    assert out.exit_code == cli.EXIT_NOT_GRADED
    assert "is a file; fix: pass the folder" in out.output


def test_the_reproduce_line_carries_the_root_it_was_graded_with(runner):
    """A failing case's repro line, pasted as printed, finds the same course (--root after the exercise)."""
    from tests.test_instructor import COURSE
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host"])
    line = next(ln for ln in out.output.splitlines() if "reproduce:" in ln).split("reproduce:")[1].strip()
    assert line.startswith(f"grade ex90_add --root {COURSE}")
    again = runner.invoke(cli.main, __import__("shlex").split(line)[1:] + ["--backend", "host"])
    assert "1 of 1 cases passed" not in again.output and "no exercise matches" not in again.output, again.output


def test_a_plot_of_another_kind_is_a_usage_error_before_grading(runner):
    from tests.test_instructor import COURSE
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--plot", "/tmp/x.jpg"])
    assert out.exit_code == 2 and "written as .png or .svg" in out.output and "Correctness" not in out.output


@pytest.mark.parametrize("plant", ["sparse_40_gb_notes_py", "link_to_a_file_that_never_ends", "linked_folder"])
def test_a_folder_too_big_or_holding_a_link_is_refused_before_anything_is_read(runner, tmp_path, plant):
    """Red-team 14b's batch_unbounded_read, a single grade: a 40 GB sparse notes.py exhausted the
    grader's memory in static_check (traceback, no result file) and a link to a file that blocks
    (/proc/kmsg, a FIFO here) hung it before --time-limit applied. Both are a one-line refusal now,
    with the result file written, and nothing of them is read."""
    import json
    import os
    import shutil
    import time
    sub = tmp_path / "eve"
    shutil.copytree(COURSE / "solutions" / "ex90_add", sub)
    if plant == "sparse_40_gb_notes_py":
        with open(sub / "notes.py", "wb") as fh:
            fh.truncate(40 << 30)                      # sparse: takes no disk
        expect = "holds more than 256 MiB of files (notes.py among them); fix: submit kernel.cu, solution.py"
    elif plant == "link_to_a_file_that_never_ends":
        os.mkfifo(tmp_path / "fifo")
        (sub / "notes.txt").symlink_to(tmp_path / "fifo")   # opened, it would block forever
        expect = "notes.txt: is a symbolic link; fix: replace it with the file or folder itself, or move it out of"
    else:
        (sub / "lib").symlink_to(tmp_path, target_is_directory=True)
        expect = "lib: is a symbolic link; fix: replace it with the file or folder itself"
    result = tmp_path / "result.json"
    t0 = time.monotonic()
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--submission", str(sub),
                                   "--format", "gradescope", "--output", str(result)])
    assert time.monotonic() - t0 < 60
    assert out.exit_code == cli.EXIT_NOT_GRADED and "Traceback" not in out.output, out.output
    assert expect in out.output
    assert expect in json.loads(result.read_text())["output"]


@pytest.mark.parametrize("name", ["z\ngrader-preload: compiling other.cu", "tab\there.cu", "bad\udcff.cu"])
def test_a_file_name_with_a_control_character_is_refused(runner, tmp_path, name):
    """Red-team pass 18: a newline in a .cu file's name forged the line of the worker's log that
    names the file NVRTC crashed on (and would break PTX .file lines); names with control
    characters or bytes that are not UTF-8 are refused before anything runs, in one line."""
    import os
    import shutil
    sub = tmp_path / "eve"
    shutil.copytree(COURSE / "solutions" / "ex90_add", sub)
    with open(os.path.join(os.fsencode(sub), os.fsencode(name)), "w") as fh:
        fh.write("// nothing\n")
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--submission", str(sub)])
    assert out.exit_code == cli.EXIT_NOT_GRADED and "Traceback" not in out.output, out.output
    assert "a file or folder name with a control character" in out.output and "fix: rename it" in out.output


@pytest.mark.parametrize("body, expect", [
    ("x = " + "+".join(["1"] * 200_000) + "\n", "solution.py: Python cannot parse it (RecursionError"),
    ("x = 1\0\n", "solution.py: syntax error"),
])
def test_compile_only_reports_an_unparsable_solution_py_as_the_submissions_problem(tmp_path, body, expect):
    """Red-team pass 18: a 200,000-term sum made ast.parse raise RecursionError, reported as "grader
    error in the static checks"; a NUL byte's syntax error said "solution.py:None"."""
    from grader.static import check_solution_py
    path = tmp_path / "solution.py"
    path.write_text(body + "def solve(a, b, c):\n    pass\n")
    problems = check_solution_py(path, 3)
    assert len(problems) == 1 and problems[0].startswith(expect) and ":None" not in problems[0], problems


def test_a_cuda_submission_on_the_host_backend_is_an_error_of_the_machine_not_a_zero(runner, tmp_path):
    """--backend host runs NumPy submissions: a solution.py that needs CUDA fails to load there
    through no fault of its own (new-user trial: "CUDA driver version is insufficient" read as the
    student's 0/100). It is not graded, exit 4 (environment), and the line says what to do."""
    import shutil
    sub = tmp_path / "sub"
    shutil.copytree(COURSE / "solutions" / "ex90_add", sub)
    (sub / "solution.py").write_text(
        "class CUDARuntimeError(RuntimeError):   # as cupy raises it on a machine without a GPU driver\n"
        "    pass\n"
        "raise CUDARuntimeError('cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version')\n"
        "def solve(a, b, c):\n    pass\n")
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--submission", str(sub)])
    assert out.exit_code == cli.EXIT_ERROR, out.output
    text = " ".join(out.output.split())
    assert "cudaErrorInsufficientDriver" in text and "runs NumPy submissions only" in text and "--compile-only" in text


@pytest.mark.parametrize("option", ["--output", "--json", "--plot"])
def test_in_grading_mode_a_result_file_directly_in_the_temporary_folder_is_refused(runner, option):
    """The worker's isolation stages its mounts under the system's temporary folder, so a result file
    directly there (or in /) cannot be hidden from it; in grading mode such a path is refused before
    anything runs, with a folder of its own proposed (red-team 14)."""
    import tempfile
    import uuid
    from pathlib import Path
    name = f"grade-{uuid.uuid4().hex}.{'svg' if option == '--plot' else 'json'}"
    path = Path(tempfile.gettempdir()) / name
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--mode", "grading",
                                   option, str(path)])
    assert out.exit_code == 2 and option in out.output, out.output
    text = " ".join(out.output.split())
    assert "a result file goes in a folder of its own" in text and f"grade/{name}" in text
    assert not path.exists()


@pytest.mark.parametrize("path", ["/usr/grade-x.json", "/etc/grader/grade-x.json", "/dev/shm/grade/grade-x.json"])
def test_in_grading_mode_a_result_file_in_a_system_folder_is_refused(runner, path):
    """Red-team pass 15: `--output /usr/x.json` as root hid /usr from the worker, whose start then
    failed; the reference scored 0/100 "worker crashed". System folders are refused up front."""
    from pathlib import Path
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--mode", "grading",
                                   "--output", path])
    assert out.exit_code == 2 and "--output" in out.output, out.output
    assert "a result file goes in a folder of its own" in " ".join(out.output.split())
    assert not Path(path).exists()


def test_the_time_limit_covers_the_static_checks(runner, tmp_path, monkeypatch):
    """Red-team pass 15: --time-limit was armed after the static checks, so a submission folder that
    made them slow ran past it; now the limit holds from the static checks on."""
    import time
    from grader import static

    def slow(spec, sub):  # noqa: ANN001, ANN202
        time.sleep(5)
        return None
    monkeypatch.setattr(static, "static_check", slow)
    json_path = tmp_path / "r.json"
    t0 = time.monotonic()
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--time-limit", "1",
                                   "--json", str(json_path)])
    assert out.exit_code == cli.EXIT_ERROR and time.monotonic() - t0 < 4, out.output
    data = json.loads(json_path.read_text())
    assert data["reason_kind"] == "time_limit" and "1 s time limit" in data["reason"], data


def test_a_worker_that_cannot_be_isolated_is_not_graded_with_exit_4(runner, tmp_path, monkeypatch):
    """An isolation failure is the machine's: "not graded", exit 4 (grader or environment error),
    never a score of 0 for the student."""
    from grader.sandbox import supervisor
    real = supervisor.Worker.ensure

    def ensure(self):  # noqa: ANN001, ANN202
        if self.config.trusted:
            return real(self)
        return supervisor.Outcome(False, "isolation", "the worker could not be isolated (mount: denied); "
                                                      "the submission never ran")
    monkeypatch.setattr(supervisor.Worker, "ensure", ensure)
    json_path, gradescope = tmp_path / "r.json", tmp_path / "results.json"
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--json", str(json_path),
                                   "--format", "gradescope", "--output", str(gradescope)])
    assert out.exit_code == cli.EXIT_ERROR, out.output
    data = json.loads(json_path.read_text())   # an error in every format: no score (red-team pass 16)
    assert data["status"] == "error" and data["reason_kind"] == "no_isolation" and data["score"]["total"] is None
    assert "could not be isolated (mount: denied)" in data["reason"] and "machine's problem" in data["reason"]
    gs = json.loads(gradescope.read_text())
    assert "score" not in gs and "NOT GRADED" in gs["output"] and "could not be isolated" in gs["output"], gs


def test_a_result_path_that_is_a_link_is_judged_by_its_own_folder_too(runner, tmp_path):
    """Red-team pass 15: /tmp/r.json -> /tmp/g/r.json passed the "directly in /tmp" refusal (only
    the target's folder was looked at), and the link's own folder stayed writable to the worker."""
    import tempfile
    import uuid
    from pathlib import Path
    target = tmp_path / "g" / "r.json"
    target.parent.mkdir()
    target.write_text("")
    link = Path(tempfile.gettempdir()) / f"grade-{uuid.uuid4().hex}.json"
    link.symlink_to(target)
    try:
        out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--mode", "grading",
                                       "--output", str(link)])
    finally:
        link.unlink()
    assert out.exit_code == 2 and "a result file goes in a folder of its own" in " ".join(out.output.split())
    assert cli._result_folders(str(tmp_path / "l.json")) == (tmp_path,)   # noqa: SLF001
    (tmp_path / "l.json").symlink_to(target)
    assert set(cli._result_folders(str(tmp_path / "l.json"))) == {tmp_path, target.parent}   # noqa: SLF001
