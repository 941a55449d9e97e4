"""The own-kernels check (grader.sandbox.kernel_trace): name matching, the trace file, the tracer
build, and the report formats' knowledge of its failure kind. The check on a GPU is in
tests/test_cheats.py (the library cheats) and tests/test_gpu.py."""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess

import pytest

from grader.grade import _strip_comments
from grader.report.json_report import schema
from grader.sandbox import kernel_trace as kt
from grader.sandbox.supervisor import KIND_TEXT


@pytest.mark.parametrize("traced, base", [
    ("vector_add", "vector_add"),                       # extern "C"
    ("_Z10vector_addPKfS0_Pfx", "vector_add"),           # C++ linkage
    ("_ZN2ns6kernelILi4EEEvPf", "kernel"),               # namespace + template
    ("_Z6kernelILi128ELi4EEvPKfPf", "kernel"),            # template at global scope
    ("_ZN12_GLOBAL__N_16kernelEPf", "kernel"),            # anonymous namespace
    ("_ZL6staticPf", "static"),                          # internal linkage
    ("_ZN2at6native29vectorized_elementwise_kernelILi4EEEvi", "vectorized_elementwise_kernel"),
    ("_Zgarbage", "_Zgarbage"),                          # unparsable: kept whole
])
def test_base_name_of_traced_kernels(traced, base):
    assert kt.base_name(traced) == base


PTX = """
.visible .entry block_sum(
.visible .entry store(
.visible .entry _Z4tileILi4EEvPf(
"""


def test_foreign_names_library_kernels_and_honours_allowed_patterns():
    own = kt.OwnKernels.of(["extern \"C\" __global__ void block_sum(float* x) {}"], [PTX])
    traced = ["block_sum", "store", "cupy_sum", "block_sum", "cupy_copy__float16_float16"]
    assert kt.foreign(traced, own) == ["cupy_sum", "cupy_copy__float16_float16"]
    allowing = kt.OwnKernels.of([], [PTX], ("cupy_copy__float16_float16",))
    assert kt.foreign(traced, allowing) == ["cupy_sum"]
    assert own.names() == ["block_sum", "store", "tile"]


def test_library_namesakes_are_not_own_kernels():
    """Red-team findings: a namesake of a library kernel, declared in kernel.cu (compiled), in an
    uncompiled header, behind #if 0, or matched after stripping a mangled name's namespaces."""
    sources = ["template <int B> __global__ void softmax_warp_forward(float* x) {}",
               'extern "C" __global__ void cupy_add__float32_float32_float32(float* x) {}']
    ptx = PTX + ".visible .entry cupy_add__float32_float32_float32(\n.visible .entry cunn_SoftMaxForward(\n"
    own = kt.OwnKernels.of(sources, [ptx])
    torch = "_ZN2at6native43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6320softmax_warp_forwardIfffLi10ELb0ELb0EEEvPT0_PKT_iiiPKbib"
    cunn = "_ZN2at6native19cunn_SoftMaxForwardILi4EfffEEvPT1_PKT0_l"
    assert kt.base_name(torch) == "softmax_warp_forward"       # the same unqualified name...
    assert kt.foreign([torch, cunn], own) == [torch, cunn]     # ...but namespaced: not kernel.cu's
    assert kt.foreign(["cupy_add__float32_float32_float32"], own) == ["cupy_add__float32_float32_float32"]  # reserved
    assert kt.foreign(["_Z20softmax_warp_forwardILi4EEvPf", "_Z4tileILi4EEvPf"], own) == []   # global templates


def test_declared_names_count_only_where_a_file_did_not_compile():
    header = "__global__ void helper_kernel(float* x) {}"      # in a header nobody compiles
    compiled = kt.OwnKernels.of([header], [PTX])
    assert kt.foreign(["helper_kernel"], compiled) == ["helper_kernel"]
    uncompiled = kt.OwnKernels.of([header], [PTX, ""])          # a second .cu file failed to compile here
    assert kt.foreign(["helper_kernel"], uncompiled) == []


def test_declared_names_ignore_commented_out_declarations():
    source = '''
    // __global__ void cupy_sum(float* x) {}          a library's name in a comment
    /* extern "C" __global__ void reduce_kernel(float* x) {} */
    extern "C" __global__ void __launch_bounds__(256) block_sum(const float* x) {}
    template <int B> __global__ void tile(float* x) {}
    '''
    assert kt.OwnKernels.of([_strip_comments(source, "kernel.cu")], [""]).fallback == frozenset({"block_sum", "tile"})


def test_trace_file_reads_new_complete_lines_and_notices_truncation():
    f = kt.TraceFile()
    try:
        assert f.env(kt.Tracer(kt.Path("/x/lib.so"), ()))[kt.FD_VAR] == str(f.worker_fd)
        os.write(f.worker_fd, b"R CUPTI 130001\nK block_sum\nK cupy_s")
        assert f.names() == ["block_sum"] and f.status == "CUPTI 130001" and not f.error
        os.write(f.worker_fd, b"um\nD 3 kernel names dropped\n")
        assert f.names() == ["cupy_sum"] and "lost names" in f.error
        assert f.names() == []
        os.ftruncate(f.worker_fd, 0)      # what a worker holding the descriptor could do
        f.names()
        assert "truncated" in f.error
    finally:
        f.close()
    assert f.worker_fd == -1


def test_a_tracer_that_could_not_start_says_why():
    f = kt.TraceFile()
    try:
        os.write(f.worker_fd, b"E CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\n")
        f.names()
        assert f.status == "" and "did not start: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" in f.error
    finally:
        f.close()


def test_find_cupti_reports_a_reason_when_there_is_none(monkeypatch, tmp_path):
    monkeypatch.setattr(kt, "_cuda_roots", lambda: [tmp_path])
    reason = kt.find_cupti()
    assert isinstance(reason, str) and "no CUPTI found" in reason and "CUDA_HOME" in reason
    monkeypatch.setattr(kt, "_BUILT", {})
    assert kt.build(tmp_path / "cache") == reason


@pytest.mark.skipif(isinstance(kt.find_cupti(), str) or shutil.which("cc") is None,
                    reason="no CUPTI (CUDA toolkit) or no C compiler on this machine: the tracer cannot be built")
def test_the_tracer_builds_once_and_exports_its_entry_points(tmp_path, monkeypatch):
    monkeypatch.setattr(kt, "_BUILT", {})
    tracer = kt.build(tmp_path)
    assert isinstance(tracer, kt.Tracer), tracer
    assert tracer.library.is_file() and str(tracer.library.parent) in tracer.folders
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(tracer.library)], capture_output=True,
                             text=True).stdout if shutil.which("nm") else ""
    if symbols:
        assert "InitializeInjection" in symbols and "grader_trace_flush" in symbols
    else:
        lib = ctypes.CDLL(str(tracer.library))
        assert lib.InitializeInjection and lib.grader_trace_flush
    mtime = tracer.library.stat().st_mtime_ns
    monkeypatch.setattr(kt, "_BUILT", {})
    assert kt.build(tmp_path) == tracer and tracer.library.stat().st_mtime_ns == mtime   # not rebuilt


def test_report_schema_knows_every_failure_kind_and_case_origin():
    case = schema()["$defs"]["case"]["properties"]
    assert set(KIND_TEXT) | {"pass", "fail"} <= set(case["status"]["enum"])
    assert {"edge", "hypothesis", "repro", "benchmark", "trace"} <= set(case["origin"]["enum"])
    json.dumps(schema())


def test_every_data_file_of_the_grader_package_is_installed():
    """A pip-installed grader (a fresh venv, the student bundle) has only the package data that
    pyproject.toml lists: the tracer's C source among them."""
    import fnmatch
    import tomllib
    from pathlib import Path
    root = Path(kt.__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["grader"]
    package = root / "grader"
    data = [str(p.relative_to(package)) for p in package.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert "sandbox/kernel_trace.c" in data
    assert all(any(fnmatch.fnmatch(f, pat) for pat in patterns) for f in data), (data, patterns)


def test_an_unwritable_cache_is_a_reason_not_a_traceback(tmp_path, monkeypatch):
    if isinstance(kt.find_cupti(), str) or shutil.which("cc") is None:
        pytest.skip("no CUPTI or no C compiler here: the build stops before writing")
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setattr(kt, "_BUILT", {})
    reason = kt.build(blocker)
    assert isinstance(reason, str) and reason.startswith("building the kernel tracer failed")


def test_descends_from_walks_the_parent_chain():
    from grader.sandbox.watch import descends_from
    child = subprocess.Popen(["sleep", "5"])
    try:
        assert descends_from(child.pid, os.getpid())
        assert not descends_from(os.getpid(), child.pid) and not descends_from(child.pid, child.pid)
    finally:
        child.kill()
        child.wait()


def test_nvml_process_queries_share_one_listing(monkeypatch):
    """device_memory_bytes and gpu_processes read the same NVML listing (a fake pynvml here)."""
    import sys
    import types
    from grader.sandbox import watch
    P = types.SimpleNamespace
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 2, nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetComputeRunningProcesses=lambda h: [P(pid=10 + h, usedGpuMemory=100), P(pid=20, usedGpuMemory=None)])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(watch, "_nvml_state", {})
    assert watch.gpu_processes() == {10, 11, 20}
    assert watch.device_memory_bytes([10, 11]) == 200 and watch.device_memory_bytes([20]) == 0
    assert watch.device_memory_bytes([99]) is None
    fake.nvmlDeviceGetCount = lambda: 1 / 0     # NVML failing: no verdict
    assert watch.gpu_processes() is None and watch.device_memory_bytes([10]) is None
