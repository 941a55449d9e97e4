"""The own-kernels check (grader.sandbox.kernel_trace): name matching, the trace file, the tracer
build, and the report formats' knowledge of its failure kind. The check on a GPU is in
tests/test_cheats.py (the library cheats) and tests/test_gpu.py."""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys

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


def test_declared_names_stand_in_only_when_no_compiler_could_be_loaded():
    header = "__global__ void helper_kernel(float* x) {}"      # in a header nobody compiles
    compiled = kt.OwnKernels.of([header], [PTX])
    assert kt.foreign(["helper_kernel"], compiled) == ["helper_kernel"]
    # a .cu file that failed to compile here contributes no names (an #error unless solve's own
    # options are given must not turn the check into a name match)
    failed = kt.OwnKernels.of([header], [PTX, ""], uncompiled=("extra.cu",))
    assert kt.foreign(["helper_kernel"], failed) == ["helper_kernel"]
    assert "extra.cu did not compile here" in failed.why_not("helper_kernel")
    no_compiler = kt.OwnKernels.of([header], [], compiler=False)
    assert kt.foreign(["helper_kernel", "_Z13helper_kernelPf"], no_compiler) == []
    # even then, a namespaced name with the same unqualified name is not the submission's
    torch = "_ZN2at6native13helper_kernelILi4EEEvPf"
    assert kt.foreign([torch], no_compiler) == [torch]


def test_template_instantiations_match_only_templates_the_sources_define():
    """cuBLAS's global-scope dot_kernel<...> instantiation against a kernel.cu that only declares
    a template of that name (no body): not own; one the sources define still is."""
    source = ("template <typename T, int N, int M, typename P> __global__ void dot_kernel(const T* x, P p);\n"
              "template <int B> __global__ void tile(float* x) { }\n")
    own = kt.OwnKernels.of([source], [PTX])
    dot = "_Z10dot_kernelIfLi128ELi0E15cublasDotParamsI16cublasGemvTensorIKfE30cublasGemvTensorStridedBatchedIfEEEvT2_"
    assert kt.foreign([dot, "_Z4tileILi4EEvPf"], own) == [dot]


def test_extern_c_identifiers_spelling_a_mangled_name_are_never_own():
    """kernel.cu declaring extern "C" kernels named exactly like torch's mangled kernels: NVRTC
    keeps the identifier, so the PTX entry equals torch's name; a C++ kernel never spells it."""
    torch_add = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_"
    source = f'extern "C" __global__ void {torch_add}(int n) {{}}\nextern "C" __global__ void add(float* x) {{}}'
    ptx = f".visible .entry {torch_add}(\n.visible .entry add(\n"
    own = kt.OwnKernels.of([source], [ptx])
    assert kt.foreign([torch_add, "add"], own) == [torch_add]
    assert "mangled" in own.why_not(torch_add)


def test_declared_names_ignore_commented_out_declarations():
    source = '''
    // __global__ void cupy_sum(float* x) {}          a library's name in a comment
    /* extern "C" __global__ void reduce_kernel(float* x) {} */
    extern "C" __global__ void __launch_bounds__(256) block_sum(const float* x) {}
    template <int B> __global__ void tile(float* x) {}
    '''
    assert kt.OwnKernels.of([_strip_comments(source, "kernel.cu")], [""], compiler=False).fallback == \
        frozenset({"block_sum", "tile"})


class SignedLines:
    """Writes lines as the tracer does (kernel_trace.c): every line chained into the MAC, S lines
    carrying it."""

    def __init__(self, f: kt.TraceFile):
        self.f, self.mac = f, 0

    def lines(self, *lines: bytes) -> bytes:
        out = b""
        for line in lines:
            self.mac = kt.chain_mac(self.f.key, self.mac, line)
            out += line + (b" %016x" % self.mac if line.startswith(b"S ") else b"") + b"\n"
        return out

    def write(self, *lines: bytes) -> None:
        os.write(self.f.worker_fd, self.lines(*lines))


def test_siphash_matches_the_reference_test_vector():
    # SipHash-2-4, key 00..0f, message 00..0e: Aumasson and Bernstein (2012), appendix A
    assert kt.siphash24(bytes(range(16)), bytes(range(15))) == 0xA129CA6149BE45E5
    assert kt.siphash24(bytes(range(16)), b"") == 0x726FDB47DD0E0E31


def test_trace_file_reads_new_complete_lines_and_notices_truncation():
    f = kt.TraceFile()
    t = SignedLines(f)
    try:
        env = f.env(kt.Tracer(kt.Path("/x/lib.so"), ()))
        assert env[kt.FD_VAR] == str(f.worker_fd) and env[kt.KEY_FD_VAR] == str(f.key_fd)
        assert os.read(f.key_fd, 64) == f.key and len(f.key) == 16   # the key the tracer reads, then EOF
        data = t.lines(b"R CUPTI 130001", b"K 1 block_sum", b"S 1", b"K 2 cupy_sum", b"D 3 kernel names dropped")
        cut = data.index(b"cupy_s") + len(b"cupy_s")
        os.write(f.worker_fd, data[:cut])
        assert f.names() == ["block_sum"] and f.status == "CUPTI 130001" and not f.error and f.reported
        os.write(f.worker_fd, data[cut:])
        assert f.names() == ["cupy_sum"] and "lost names" in f.error and not f.reported
        assert f.after_report == ["cupy_sum"]   # launched after the last flush
        assert f.names() == []
        f.error = ""
        os.ftruncate(f.worker_fd, 0)      # what a worker holding the descriptor could do
        f.names()
        assert "truncated" in f.error
    finally:
        f.close()
    assert f.worker_fd == -1 and f.key_fd == -1


@pytest.mark.parametrize("lines, what", [
    ([b"K 1 mine", b"K 3 mine2", b"S 3"], "kernel line '3' follows line 1"),       # K 2 truncated away
    ([b"K 1 mine", b"K 2 cupy_sum", b"S 1"], "the tracer wrote 1 kernel lines, 2 arrived"),
    ([b"K 1 mine", b"T the kernel launch callbacks were turned off inside the worker", b"S 1"], "turned off"),
    ([b"K 1 mine", b"K 2 two words", b"S 2"], "malformed kernel line"),
    ([b"K 1 mine", b"R CUPTI 130001", b"S 1"], "a line the tracer does not write"),   # R only first
    ([b"K 1 mine", b"X 1", b"S 1"], "a line the tracer does not write"),
])
def test_gaps_forgeries_and_tracer_reports_are_tampering(lines, what):
    f = kt.TraceFile()
    try:
        SignedLines(f).write(b"R CUPTI 130001", *lines)
        f.names()
        assert "tampered with inside the worker" in f.error and what in f.error
    finally:
        f.close()


def test_lines_the_worker_writes_rewrites_or_removes_break_the_mac():
    """Without the key, whatever the worker does to the file shows at the next S line: a K line
    forged with the right number, a line absorbed into another ("R " written before the tracer's
    K line), a name rewritten in place with the same length, a flush line replayed."""
    def check(mutate) -> str:
        f = kt.TraceFile()
        try:
            t = SignedLines(f)
            os.write(f.worker_fd, mutate(t))
            f.names()
            return f.error
        finally:
            f.close()
    honest = check(lambda t: t.lines(b"R CUPTI 130001", b"K 1 zero", b"K 2 cupy_sum", b"S 2"))
    assert honest == ""
    forged = check(lambda t: t.lines(b"R CUPTI 130001", b"K 1 zero", b"S 1") + b"K 2 block_sum\nS 2 0000000000000000\n")
    assert "MAC" in forged
    rewritten = check(lambda t: t.lines(b"R CUPTI 130001", b"K 1 zero", b"K 2 cupy_sum", b"S 2")
                      .replace(b"cupy_sum", b"tile_sum"))
    assert "MAC" in rewritten
    absorbed = check(lambda t: t.lines(b"R CUPTI 130001", b"K 1 zero") + b"R " + t.lines(b"K 2 cupy_sum")
                     + b"K 2 block_sum\n" + t.lines(b"S 2"))
    assert "MAC" in absorbed or "does not write" in absorbed

    def replay(t: SignedLines) -> bytes:
        first = t.lines(b"R CUPTI 130001", b"K 1 zero", b"S 1")
        return first + first.splitlines(keepends=True)[-1]   # the same S line again: the flush patched out
    assert "MAC" in check(replay)


@pytest.mark.parametrize("how, what", [("redirect", "redirected"), ("unappend", "no longer opened for appending")])
def test_the_trace_descriptor_is_checked_from_outside_the_worker(how, what):
    f = kt.TraceFile()
    child = subprocess.Popen([sys.executable, "-c", "import sys, os\nfd = int(sys.argv[1])\n"
                              "line = sys.stdin.readline()\n"
                              "if line.startswith('redirect'): os.dup2(os.open(os.devnull, os.O_WRONLY), fd)\n"
                              "if line.startswith('unappend'):\n import fcntl\n"
                              " fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_APPEND)\n"
                              "print('done', flush=True)\nsys.stdin.readline()\n", str(f.worker_fd)],
                             pass_fds=(f.worker_fd,), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        f.handed_over()
        assert f.check_descriptor(child.pid) == ""                    # intact
        child.stdin.write(how + "\n")
        child.stdin.flush()
        assert child.stdout.readline() == "done\n"
        assert "descriptor" in f.check_descriptor(child.pid) and what in f.error
    finally:
        child.stdin.close()
        child.wait()
        f.close()


def test_a_tracer_that_could_not_start_says_why():
    f = kt.TraceFile()
    try:
        SignedLines(f).write(b"E CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")
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


# A stand-in for libcupti, enough for the tracer: subscribe, enable, query, and a launch to call back.
FAKE_CUPTI = r"""
#include <cupti.h>
static CUpti_CallbackFunc callback;
static unsigned char enabled[8][4096];
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc f, void *u) {
    (void)u; callback = f; *s = (CUpti_SubscriberHandle)1; return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle s, CUpti_CallbackDomain d,
                                         CUpti_CallbackId c) { (void)s; enabled[d][c] = on; return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t *on, CUpti_SubscriberHandle s, CUpti_CallbackDomain d,
                                           CUpti_CallbackId c) { (void)s; *on = enabled[d][c]; return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **t) { (void)r; *t = "fake"; return CUPTI_SUCCESS; }
void fake_launch(const char *name) {   /* what the driver does on cuLaunchKernel */
    CUpti_CallbackData data = {0};
    data.callbackSite = CUPTI_API_ENTER;
    data.symbolName = name;
    if (enabled[CUPTI_CB_DOMAIN_DRIVER_API][CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel])
        callback(0, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &data);
}
void fake_disable(void) { enabled[CUPTI_CB_DOMAIN_DRIVER_API][CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel] = 0; }
"""

# In the worker's place: the tracer started, launches, flushes; then the known tampering routes.
TRACED_PROCESS = r"""
import ctypes, os, sys
fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
tracer = ctypes.CDLL(sys.argv[2])
fd = int(os.environ["GRADE_KERNEL_TRACE_FD"])
assert tracer.grader_trace_flush() == 1           # before CUDA loaded it: nothing, and no tampering noted
tracer.InitializeInjection()
step = sys.stdin.readline
step()
for name in (b"mine", b"mine", b"cupy_sum"):
    fake.fake_launch(name)
tracer.grader_trace_flush()
print("flushed", flush=True)                      # 1: two names, once each, then S
step()
fake.fake_launch(b"mine")                         # written again after a flush
saved, null = os.dup(fd), os.open(os.devnull, os.O_WRONLY)
os.dup2(null, fd)                                 # redirected during a call, restored before the reply
fake.fake_launch(b"torch_softmax")
os.dup2(saved, fd)
tracer.grader_trace_flush()
print("redirected", flush=True)                   # 2: T, and the lost K 4 leaves a gap
step()
import fcntl
flags = fcntl.fcntl(fd, fcntl.F_GETFL)
fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_APPEND)   # to rewrite lines in place with pwrite
fake.fake_launch(b"mine")
fcntl.fcntl(fd, fcntl.F_SETFL, flags)
tracer.grader_trace_flush()
print("unappended", flush=True)                   # 3: T
step()
fake.fake_disable()                               # what cuptiFinalize or cuptiEnableCallback(0) does
tracer.grader_trace_flush()
print("disabled", flush=True)                     # 4: T
step()
"""


@pytest.mark.skipif(isinstance(kt.find_cupti(), str) or shutil.which("cc") is None,
                    reason="no CUPTI headers (CUDA toolkit) or no C compiler on this machine")
def test_the_tracer_writes_names_at_launch_and_reports_tampering(tmp_path, monkeypatch):
    """The tracer's own code on a CPU, against a stand-in libcupti: names written at their first
    launch since a flush, numbered; S at each flush; a redirected descriptor and turned-off
    callbacks reported."""
    include, _ = kt.find_cupti()
    fake_dir = tmp_path / "fake"
    fake_dir.mkdir()
    (fake_dir / "fake_cupti.c").write_text(FAKE_CUPTI)
    fake = fake_dir / "libcupti.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(fake_dir / "fake_cupti.c"), f"-I{include}", "-o", str(fake)],
                   check=True)
    monkeypatch.setattr(kt, "find_cupti", lambda: (include, fake_dir))
    monkeypatch.setattr(kt, "_BUILT", {})
    tracer = kt.build(tmp_path / "cache")
    assert isinstance(tracer, kt.Tracer), tracer
    f = kt.TraceFile()
    env = {**os.environ, kt.FD_VAR: str(f.worker_fd), kt.KEY_FD_VAR: str(f.key_fd)}
    child = subprocess.Popen([sys.executable, "-c", TRACED_PROCESS, str(fake), str(tracer.library)], env=env,
                             pass_fds=f.pass_fds, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def step() -> str:
        child.stdin.write("go\n")
        child.stdin.flush()
        return child.stdout.readline().strip()
    try:
        f.handed_over()
        assert step() == "flushed"
        assert f.names() == ["mine", "cupy_sum"] and f.reported and not f.error
        assert f.status.startswith("CUPTI") and f.check_descriptor(child.pid) == ""
        assert step() == "redirected"
        assert f.names() == ["mine"] and f.reported
        assert "tampered with inside the worker" in f.error and "redirected, closed" in f.error
        f.error = ""
        assert step() == "unappended"
        assert f.names() == [] and "made rewritable" in f.error   # the line is not written, the gap shows
        f.error = ""
        assert step() == "disabled"
        f.names()
        assert "launch callbacks were turned off" in f.error
    finally:
        child.stdin.close()
        child.wait(timeout=10)
        f.close()


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


def test_descends_from_has_no_depth_limit(monkeypatch):
    """A helper started 81 generations below the worker (a chain of shells) is still its descendant."""
    from grader.sandbox import watch
    parents = {1000 + i: 999 + i for i in range(1, 200)}   # 1199 -> 1198 -> ... -> 1000 -> 999
    parents[1000] = 999
    parents[999] = 1
    monkeypatch.setattr(watch, "_stat_fields", lambda pid: ["S", str(parents[pid])])
    assert watch.descends_from(1199, 999) and watch.descends_from(1081, 1000)
    assert not watch.descends_from(999, 1199)


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
