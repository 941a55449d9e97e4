"""`grade EX --sanitize`: compute-sanitizer logs parsed into findings at kernel.cu:LINE, the command,
the missing-tool message, a stand-in sanitizer run end to end (CPU); the planted bugs found on a GPU."""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from grader import cli, sanitize as san
from grader.sanitize import RunContext, parse_report
from tests.conftest import FIXTURES, ROOT, spec_of

LOGS = FIXTURES / "sanitizer"
CTX = RunContext((("kernel.cu", ("vector_add", "reduce_sum", "row_max")),),
                 (("a", 0x7F5E3A000200, 4), ("b", 0x7F5E3A000400, 4), ("c", 0x7F5E3A000600, 4)))


def log(name: str) -> str:
    return (LOGS / name).read_text()


# -- parsing ------------------------------------------------------------------------------------------
def test_memcheck_out_of_bounds_reads_map_to_kernel_cu_and_name_the_argument():
    r = parse_report("memcheck", log("memcheck_oob_read.log"), CTX)
    assert r.error_count == 3 and not r.clean
    a, b, api = r.findings
    assert (a.kind, a.kernel, a.file, a.line) == ("Invalid __global__ read of size 4 bytes", "vector_add", "kernel.cu", 6)
    assert a.where == "kernel.cu:6 in vector_add"
    assert "by thread (1,0,0) in block (0,0,0)" in a.message and "argument 'a'" in a.message
    assert "argument 'b'" in b.message  # a different allocation: its own finding
    assert api.kind.startswith("Program hit cudaErrorLaunchFailure") and api.line is None


def test_racecheck_analysis_report_gives_both_accesses_and_the_severity():
    r = parse_report("racecheck", log("racecheck_race_smem.log"), CTX)
    assert r.error_count == 2
    err, warn = r.findings
    assert err.kind == "Race reported between Write access and Read access"
    assert (err.kernel, err.file, err.line, err.severity) == ("reduce_sum", "kernel.cu", 16, "error")
    assert err.message == "Write access at kernel.cu:16 and Read access at kernel.cu:16 [3072 hazards]"
    assert warn.severity == "warning" and "Read access at kernel.cu:21 [31 hazards]" in warn.message


def test_racecheck_hazard_report_is_read_too():
    (f,) = parse_report("racecheck", log("racecheck_hazard_mode.log"), CTX).findings
    assert (f.kind, f.file, f.line, f.kernel) == ("Potential RAW hazard", "kernel.cu", 16, "reduce_sum")
    assert "Write by thread (32,0,0) at kernel.cu:16" in f.message


def test_initcheck_and_templated_kernel_names():
    (f,) = parse_report("initcheck", log("initcheck_uninit.log"), CTX).findings
    assert f.kind == "Uninitialized __global__ memory read of size 4 bytes"
    assert (f.kernel, f.file, f.line) == ("row_max<256>", "kernel.cu", 21)


def test_synccheck_reports_per_thread_are_merged_and_the_unprinted_counted():
    r = parse_report("synccheck", log("synccheck_divergent.log"), CTX)
    (f,) = r.findings
    assert f.kind == "Barrier error detected. Divergent thread(s) in warp" and f.where == "kernel.cu:14 in reduce_sum"
    assert f.repeats == 20 and r.error_count == 32 and r.not_printed == 12


def test_clean_legacy_and_line_less_logs():
    assert parse_report("memcheck", log("memcheck_clean.log")).clean
    (old,) = parse_report("memcheck", log("memcheck_legacy_format.log"), CTX).findings
    assert (old.kernel, old.file, old.line) == ("vector_add", "kernel.cu", 5)
    (bare,) = parse_report("memcheck", log("memcheck_no_lineinfo.log"), CTX).findings
    assert (bare.kernel, bare.file, bare.line, bare.where) == ("vector_add", "", None, "in vector_add")
    tool = parse_report("memcheck", log("tool_no_process.log"), CTX)
    assert tool.findings == () and tool.error_count == 0


def test_temporary_nvrtc_names_map_by_kernel_when_several_sources_were_loaded():
    ctx = RunContext((("kernel.cu", ("vector_add",)), ("extra.cu", ("reduce_sum",))))
    r = parse_report("racecheck", log("racecheck_race_smem.log"), ctx)
    assert r.findings[0].file == "extra.cu"
    elsewhere = "=========     at k+0x10 in /usr/local/cuda/include/cuda_fp16.hpp:120\n"
    f = parse_report("memcheck", "========= Invalid __shared__ read of size 2 bytes\n" + elsewhere, ctx).findings[0]
    assert f.file == "/usr/local/cuda/include/cuda_fp16.hpp" and f.line == 120


# -- the tool, the command -------------------------------------------------------------------------------
def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_find_sanitizer_looks_on_path_then_cuda_bin_then_cuda_home(tmp_path, monkeypatch):
    monkeypatch.setattr(san, "CUDA_BIN", tmp_path / "usr-local-cuda" / "bin")
    on_path = _exe(tmp_path / "p" / "compute-sanitizer")
    home = _exe(tmp_path / "home" / "bin" / "compute-sanitizer")
    assert san.find_sanitizer({"PATH": str(on_path.parent), "CUDA_HOME": str(home.parent.parent)}) == str(on_path)
    assert san.find_sanitizer({"PATH": str(tmp_path), "CUDA_HOME": str(home.parent.parent)}) == str(home)
    cuda_bin = _exe(san.CUDA_BIN / "compute-sanitizer")
    assert san.find_sanitizer({"PATH": str(tmp_path), "CUDA_HOME": str(home.parent.parent)}) == str(cuda_bin)
    cuda_bin.unlink()
    assert san.find_sanitizer({"PATH": str(tmp_path)}) is None


def test_command_line_for_each_tool(tmp_path):
    cmd = san.command("/cs", "racecheck", tmp_path / "r.log", Path("/c/spec.toml"), Path("/s"), "n=3/a=0,b=1/seed=5",
                      tmp_path / "st.json", python="/py")
    assert cmd[:3] == ["/cs", "--tool", "racecheck"]
    opts = dict(zip(cmd[1:cmd.index("/py")], cmd[2:cmd.index("/py")]))
    assert opts["--print-limit"] == "20" and opts["--error-exitcode"] == "0" and opts["--log-file"] == str(tmp_path / "r.log")
    assert opts["--racecheck-report"] == "analysis"
    assert cmd[cmd.index("/py"):] == ["/py", "-P", "-m", "grader.sanitize_run", "/c/spec.toml", "/s",
                                      "n=3/a=0,b=1/seed=5", "--status", str(tmp_path / "st.json")]
    assert "--racecheck-report" not in san.command("/cs", "memcheck", tmp_path / "m.log", Path("s"), Path("d"), "t",
                                                   tmp_path / "st.json")
    assert san.timeout_for(20, 120) == 120 + 20 * 20 + 60


def test_tool_lists():
    assert san.parse_tools("racecheck, memcheck,racecheck") == ("racecheck", "memcheck")
    with pytest.raises(ValueError, match="helgrind: not a compute-sanitizer tool"):
        san.parse_tools("memcheck,helgrind")


# -- a stand-in compute-sanitizer, end to end ---------------------------------------------------------------
FAKE = """\
#!{python}
import os, shutil, sys, time
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
status = args[args.index("--status") + 1]
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
if os.environ.get("FAKE_LOG"):
    shutil.copy(os.environ["FAKE_LOG"], log)
if os.environ.get("FAKE_STATUS"):
    open(status, "w").write(os.environ["FAKE_STATUS"])
if not os.environ.get("FAKE_QUIET"):
    print("a line the submission printed")
for made, target in ((log, os.environ.get("FAKE_LINK_LOG")), (status, os.environ.get("FAKE_LINK_STATUS"))):
    if target:  # what a submission can do: it knows both paths and runs as the grader's user
        if os.path.lexists(made):
            os.unlink(made)
        os.symlink(target, made)
"""
STATUS_OK = {"ok": True, "stage": "done", "sources": [{"file": "kernel.cu", "kernels": ["vector_add"]}],
             "allocations": [{"name": "a", "ptr": 0x7F5E3A000200, "bytes": 4}]}


@pytest.fixture
def fake(tmp_path, monkeypatch) -> str:
    path = tmp_path / "bin" / "compute-sanitizer"
    path.parent.mkdir()
    path.write_text(FAKE.format(python=sys.executable))
    path.chmod(0o755)
    monkeypatch.setenv("FAKE_STATUS", json.dumps(STATUS_OK))
    return str(path)


def test_a_run_reads_the_log_and_the_runner_status(fake, monkeypatch):
    monkeypatch.setenv("FAKE_LOG", str(LOGS / "memcheck_oob_read.log"))
    r = san.run_tool(fake, "memcheck", ROOT / "exercises/ex01_vector_add/spec.toml", FIXTURES / "gpu/oob_read",
                     "n=1/a=0,b=0/seed=0", 30)
    assert r.status == "ok" and r.error_count == 3 and "argument 'a'" in r.findings[0].message
    monkeypatch.setenv("FAKE_STATUS", json.dumps({**STATUS_OK, "ok": False, "stage": "solve",
                                                  "message": "illegal memory access (at solution.py:11 in solve)"}))
    r = san.run_tool(fake, "memcheck", ROOT / "exercises/ex01_vector_add/spec.toml", FIXTURES / "gpu/oob_read",
                     "n=1/a=0,b=0/seed=0", 30)
    assert r.status == "ok" and r.note.startswith("solve raised: illegal memory access")


def test_a_run_that_times_out_or_never_starts_says_so(fake, monkeypatch):
    spec = ROOT / "exercises/ex01_vector_add/spec.toml"
    monkeypatch.setenv("FAKE_SLEEP", "5")
    r = san.run_tool(fake, "racecheck", spec, FIXTURES / "gpu/oob_read", "n=1/a=0,b=0/seed=0", 0.5)
    assert r.status == "timeout" and "did not finish within 0.5 s" in r.message and r.seconds < 4
    monkeypatch.setenv("FAKE_SLEEP", "0")
    monkeypatch.setenv("FAKE_STATUS", "")
    monkeypatch.setenv("FAKE_LOG", str(LOGS / "tool_no_process.log"))
    r = san.run_tool(fake, "memcheck", spec, FIXTURES / "gpu/oob_read", "n=1/a=0,b=0/seed=0", 30)
    assert r.status == "failed" and "Target application terminated before first instrumented API call" in r.message
    monkeypatch.setenv("FAKE_STATUS", json.dumps({"ok": False, "stage": "load", "message": "kernel.cu:3: error: x"}))
    monkeypatch.setenv("FAKE_LOG", str(LOGS / "memcheck_clean.log"))
    r = san.run_tool(fake, "memcheck", spec, FIXTURES / "gpu/oob_read", "n=1/a=0,b=0/seed=0", 30)
    assert r.status == "failed" and r.message == "load: kernel.cu:3: error: x"
    assert san.summary_line(r) == "memcheck: could not run"


def test_a_run_reads_its_files_through_its_folder_never_through_a_link(fake, monkeypatch, tmp_path):
    """The sanitized run (the submission, as the grader's user) replaces the tool's log and its
    status file with links to a secret: neither is read, so the report's tail cannot show it."""
    secret = tmp_path / "secret.txt"
    secret.write_text("========= TOPSECRET-91c2\n")
    monkeypatch.setenv("FAKE_LOG", str(LOGS / "memcheck_oob_read.log"))
    monkeypatch.setenv("FAKE_LINK_LOG", str(secret))
    monkeypatch.setenv("FAKE_LINK_STATUS", str(secret))
    r = san.run_tool(fake, "memcheck", ROOT / "exercises/ex01_vector_add/spec.toml", FIXTURES / "gpu/oob_read",
                     "n=1/a=0,b=0/seed=0", 30)
    assert "TOPSECRET" not in f"{r.raw_tail}\n{r.message}\n{r.note}", r
    assert r.status == "failed" and r.error_count == 0 and "a line the submission printed" in r.raw_tail


def test_a_run_that_leaves_no_status_log_or_output_is_reported_not_a_grader_crash(fake, monkeypatch):
    monkeypatch.setenv("FAKE_STATUS", "")
    monkeypatch.setenv("FAKE_QUIET", "1")
    r = san.run_tool(fake, "memcheck", ROOT / "exercises/ex01_vector_add/spec.toml", FIXTURES / "gpu/oob_read",
                     "n=1/a=0,b=0/seed=0", 30)
    assert r.status == "failed" and "did not complete: it wrote no status and printed nothing" in r.message


# -- the runner's arrays (numpy standing in for cupy) -------------------------------------------------------
class _NumpyAsCupy:
    cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(deviceSynchronize=lambda: None))

    def __getattr__(self, name):  # noqa: ANN001, ANN204
        return getattr(np, name)


def test_runner_gives_each_argument_its_own_exact_allocation_outputs_poisoned():
    from grader.cases import make_inputs, parse_token
    from grader.sanitize_run import allocate
    spec = spec_of("ex01_vector_add")
    case = parse_token(spec, "n=33/a=0,b=1/seed=5")
    args, allocs = allocate(spec, case, _NumpyAsCupy())
    a, b, c = args
    want = make_inputs(spec, case, np)
    assert np.array_equal(a, want["a"]) and np.array_equal(b, want["b"])
    assert c.shape == (33,) and np.all(c.view(np.uint32) == 0x7FD1DEAD)
    assert [(x["name"], x["bytes"]) for x in allocs] == [("a", 132), ("b", 132), ("c", 132)]


def test_runner_stores_a_bfloat16_argument_as_its_uint16_bits():
    """A bfloat16 case (``--sanitize`` on ex12 with T=bfloat16): the arrays are allocated in the
    storage dtype (uint16 bits, as the grader's buffers hold them; CuPy has no bfloat16 dtype),
    hold the encoded drawn values, and the float32 output is still poisoned."""
    from grader.cases import make_inputs, parse_token
    from grader.dtypes import decode
    from grader.sanitize_run import allocate
    spec = spec_of("ex12_gemm_tensorcore")
    dims = ",".join(f"{d.name}=16" for d in spec.dims)
    case = parse_token(spec, f"{dims},T=bfloat16//seed=3")
    assert case.type_dict == {"T": "bfloat16"}
    args, allocs = allocate(spec, case, _NumpyAsCupy())
    a, b, c = (args[spec.arg_order.index(n)] for n in ("a", "b", "c"))
    want = make_inputs(spec, case, np)
    assert a.dtype == b.dtype == np.uint16 and c.dtype == np.float32
    assert np.array_equal(a, want["a"]) and np.array_equal(b, want["b"])
    assert np.all(np.isfinite(decode(np, a, "bfloat16"))) and np.any(a != 0)
    assert np.all(c.view(np.uint32) == 0x7FD1DEAD)
    sizes = {x["name"]: x["bytes"] for x in allocs}
    assert sizes["a"] == a.size * 2 + 2 * spec.argument("a").offset_elements(case.dim_dict)


# -- the command line ----------------------------------------------------------------------------------------
def test_missing_sanitizer_is_one_line_naming_the_fix(runner, tmp_path, monkeypatch):
    monkeypatch.setattr(san, "CUDA_BIN", tmp_path / "nothing")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--submission", str(FIXTURES / "gpu/oob_read"),
                                   "--sanitize"])
    assert out.exit_code == cli.EXIT_ERROR
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in out.output
    assert "compute-sanitizer not found" in lines[0] and "/usr/local/cuda/bin" in lines[0] and "fix:" in lines[0]


@pytest.mark.parametrize("extra", [["--sanitize-tools", "memcheck,valgrind"], ["--sanitize", "--compile-only"],
                                   ["--sanitize", "--format", "junit"]])
def test_bad_sanitize_options_are_usage_errors(runner, extra):
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), *extra])
    assert out.exit_code == 2, out.output


def test_help_documents_sanitize(runner):
    out = runner.invoke(cli.main, ["run", "--help"])
    assert "--sanitize" in out.output and "--sanitize-tools" in out.output and "compute-sanitizer" in out.output


def test_the_case_sanitized_is_the_given_then_the_smallest_failure_then_the_largest_capped_edge_case():
    spec = spec_of("ex01_vector_add")
    failing = types.SimpleNamespace(token="n=3/a=0,b=0/seed=9", description="n=3", status="fail")
    assert san.sanitize_case(spec, types.SimpleNamespace(smallest_failure=failing), "quick", 0, None,
                             "n=5/a=0,b=0/seed=1") == ("n=5/a=0,b=0/seed=1", "the case given with --case")
    token, why = san.sanitize_case(spec, types.SimpleNamespace(smallest_failure=failing), "quick", 0, None, None)
    assert token == failing.token and why.startswith("the smallest failing case")
    token, why = san.sanitize_case(spec, types.SimpleNamespace(smallest_failure=None), "quick", 0, None, None)
    assert token.startswith("n=1000003/")   # many warps and blocks, not n = 1
    assert why.startswith("no case failed, so the largest edge case within the sanitizer's size cap")


def test_text_section_lists_each_tools_first_errors():
    reports = [parse_report("memcheck", log("memcheck_oob_read.log"), CTX),
               parse_report("racecheck", log("racecheck_race_smem.log"), CTX),
               parse_report("synccheck", log("memcheck_clean.log"), CTX)]
    from io import StringIO
    from rich.console import Console
    buf = StringIO()
    console = Console(file=buf, width=200, color_system=None)
    for line in san.report_lines(reports):
        console.print(line, highlight=False)
    text = buf.getvalue()
    assert "memcheck: 3 errors" in text and "racecheck: 2 errors" in text and "synccheck: clean" in text
    assert "kernel.cu:6 in vector_add: Invalid __global__ read of size 4 bytes" in text
    assert "kernel.cu:16 in reduce_sum: Race reported between Write access and Read access" in text
    assert "[warning]" in text


# -- on a GPU: the planted bugs ------------------------------------------------------------------------------
def _need_sanitizer() -> None:
    if san.find_sanitizer() is None:
        pytest.skip(san.MISSING)


def _sanitize_json(runner, exercise: str, fixture: str, *extra: str):  # noqa: ANN202
    _need_sanitizer()
    out = runner.invoke(cli.main, [exercise, "--root", str(ROOT), "--submission", str(FIXTURES / "gpu" / fixture),
                                   "--sanitize", "--format", "json", *extra])
    start = out.output.index("{")
    return out, json.loads(out.output[start:])


def _findings(data, tool: str) -> list[dict]:  # noqa: ANN001
    (t,) = [t for t in data["tools"] if t["tool"] == tool]
    assert t["status"] == "ok", t
    return t["findings"]


def _line_of(fixture: str, marker: str) -> int:
    lines = (FIXTURES / "gpu" / fixture / "kernel.cu").read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if marker in ln)


@pytest.mark.gpu
def test_racecheck_finds_the_missing_syncthreads(runner):
    out, data = _sanitize_json(runner, "ex04", "race_smem", "--sanitize-tools", "memcheck,racecheck",
                               "--case", "n=4099/x=0/seed=3")
    assert out.exit_code == cli.EXIT_BELOW, out.output
    assert data["case"] == "n=4099/x=0/seed=3" and _findings(data, "memcheck") == []
    races = _findings(data, "racecheck")
    line = _line_of("race_smem", "RACE:")
    assert any(f["kernel"] == "reduce_sum" and f["file"] == "kernel.cu" and f["line"] == line
               and f["kind"].startswith("Race reported between") for f in races), races


@pytest.mark.gpu
def test_memcheck_finds_the_read_past_the_end(runner):
    out, data = _sanitize_json(runner, "ex01", "oob_read")
    assert out.exit_code == cli.EXIT_BELOW, out.output
    # its output is right, so the largest edge case within the size cap is sanitized (many warps
    # and blocks; the read past the end happens at any n)
    assert data["case"].startswith("n=1000003/") and data["case_reason"].startswith("no case failed"), data
    reads = [f for f in _findings(data, "memcheck") if f["kind"] == "Invalid __global__ read of size 4 bytes"]
    assert reads and all((f["kernel"], f["file"], f["line"]) == ("vector_add", "kernel.cu", _line_of("oob_read", "OOB READ"))
                         for f in reads), reads
    assert any("argument 'a'" in f["message"] or "argument 'b'" in f["message"] for f in reads)
    assert all(t["status"] == "ok" for t in data["tools"]), data["tools"]


@pytest.mark.gpu
def test_the_smallest_failing_case_is_sanitized_in_the_text_report(runner):
    _need_sanitizer()
    out = runner.invoke(cli.main, ["ex01", "--root", str(ROOT), "--submission", str(FIXTURES / "gpu/oob_write"),
                                   "--sanitize-tools", "memcheck"])
    assert out.exit_code == cli.EXIT_BELOW, out.output
    assert "the smallest failing case" in out.output
    assert "kernel.cu:5 in vector_add: Invalid __global__ write of size 4 bytes" in out.output, out.output


def test_fixtures_say_what_is_planted():
    for name in ("race_smem", "oob_read"):
        first = (FIXTURES / "gpu" / name / "solution.py").read_text().splitlines()[0]
        assert first.startswith("# Planted bug:"), first
