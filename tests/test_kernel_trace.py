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
from pathlib import Path

import pytest

from grader.static import strip_comments
from grader.report.json_report import schema
from grader.sandbox import kernel_trace as kt
from grader.sandbox.supervisor import KIND_TEXT
from tests.conftest import cheat_submission

ROOT_CHEATS = Path(__file__).resolve().parent / "cheats"


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


def foreign_names(traced: list[str], own: kt.OwnKernels, own_module: bool = True) -> list[str]:
    """The names :func:`kt.foreign` refuses among ``traced``, all launched from an own module (or
    all from another one)."""
    return [x.name for x in kt.foreign([kt.Launch(n, own_module) for n in traced], own)]


def test_foreign_names_library_kernels_and_honours_allowed_patterns():
    own = kt.OwnKernels.of(["extern \"C\" __global__ void block_sum(float* x) {}"], [PTX])
    traced = ["block_sum", "store", "cupy_sum", "block_sum", "cupy_copy__float16_float16"]
    assert foreign_names(traced, own) == ["cupy_sum", "cupy_copy__float16_float16"]
    allowing = kt.OwnKernels.of([], [PTX], ("cupy_copy__float16_float16",))
    assert foreign_names(traced, allowing) == ["cupy_sum"]
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
    assert foreign_names([torch, cunn], own) == [torch, cunn]     # ...but namespaced: not kernel.cu's
    assert foreign_names(["cupy_add__float32_float32_float32"], own) == ["cupy_add__float32_float32_float32"]  # reserved
    assert foreign_names(["_Z20softmax_warp_forwardILi4EEvPf", "_Z4tileILi4EEvPf"], own) == []   # global templates


def test_declared_names_stand_in_only_when_no_compiler_could_be_loaded():
    header = "__global__ void helper_kernel(float* x) {}"      # in a header nobody compiles
    compiled = kt.OwnKernels.of([header], [PTX])
    assert foreign_names(["helper_kernel"], compiled) == ["helper_kernel"]
    # a .cu file that failed to compile here contributes no names (an #error unless solve's own
    # options are given must not turn the check into a name match)
    failed = kt.OwnKernels.of([header], [PTX, ""], uncompiled=("extra.cu",))
    assert foreign_names(["helper_kernel"], failed) == ["helper_kernel"]
    assert "extra.cu did not compile here" in failed.why_not(kt.Launch("helper_kernel", True))
    no_compiler = kt.OwnKernels.of([header], [], compiler=False)
    assert foreign_names(["helper_kernel", "_Z13helper_kernelPf"], no_compiler) == []
    # even then, a namespaced name with the same unqualified name is not the submission's
    torch = "_ZN2at6native13helper_kernelILi4EEEvPf"
    assert foreign_names([torch], no_compiler) == [torch]


def test_template_instantiations_match_only_templates_the_sources_define():
    """cuBLAS's global-scope dot_kernel<...> instantiation against a kernel.cu that only declares
    a template of that name (no body): not own; one the sources define still is."""
    source = ("template <typename T, int N, int M, typename P> __global__ void dot_kernel(const T* x, P p);\n"
              "template <int B> __global__ void tile(float* x) { }\n")
    own = kt.OwnKernels.of([source], [PTX])
    dot = "_Z10dot_kernelIfLi128ELi0E15cublasDotParamsI16cublasGemvTensorIKfE30cublasGemvTensorStridedBatchedIfEEEvT2_"
    assert foreign_names([dot, "_Z4tileILi4EEvPf"], own) == [dot]


def test_extern_c_identifiers_spelling_a_mangled_name_are_never_own():
    """kernel.cu declaring extern "C" kernels named exactly like torch's mangled kernels: NVRTC
    keeps the identifier, so the PTX entry equals torch's name; a C++ kernel never spells it."""
    torch_add = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_"
    source = f'extern "C" __global__ void {torch_add}(int n) {{}}\nextern "C" __global__ void add(float* x) {{}}'
    ptx = f".visible .entry {torch_add}(\n.visible .entry add(\n"
    own = kt.OwnKernels.of([source], [ptx])
    assert foreign_names([torch_add, "add"], own) == [torch_add]
    assert "mangled" in own.why_not(kt.Launch(torch_add, True))


def test_declared_names_ignore_commented_out_declarations():
    source = '''
    // __global__ void cupy_sum(float* x) {}          a library's name in a comment
    /* extern "C" __global__ void reduce_kernel(float* x) {} */
    extern "C" __global__ void __launch_bounds__(256) block_sum(const float* x) {}
    template <int B> __global__ void tile(float* x) {}
    '''
    assert kt.OwnKernels.of([strip_comments(source, "kernel.cu")], [""], compiler=False).fallback == \
        frozenset({"block_sum", "tile"})


LOC_PTX = """
.file 1 "/sub/kernel.cu"
.file 2 "/usr/local/cuda/include/cub/device/dispatch/kernels/reduce.cuh"
.file 3 "/sub/helpers.cuh"
.extern .func vprintf(
.visible .entry block_sum(
{
.loc 1 4 5
ret;
}
.visible .entry _ZN3cub18DeviceReduceKernelEv(
{
.loc 2 120 3
ret;
}
.visible .entry from_helper(
{
.loc 2 10 1
.loc 3 7 2, function_name $L__info_string0, inlined_at 2 11 1
ret;
}
.func helper(
{
.loc 1 9 1
ret;
}
"""


def test_entries_count_only_when_their_code_comes_from_the_submission_files():
    """The .loc rule: a kernel instantiated from an included library header (CUB's reduction,
    compiled under CuPy's own names) is not the submission's; one with a line of its files is."""
    assert kt.entries_from(kt.ptx_parse(LOC_PTX), kt.Path("/sub")) == {"block_sum", "from_helper"}
    assert kt.entries_from(kt.ptx_parse(LOC_PTX), None) == {"block_sum", "_ZN3cub18DeviceReduceKernelEv", "from_helper"}
    assert kt.entries_from(kt.ptx_parse(PTX), kt.Path("/sub")) == {"block_sum", "store", "_Z4tileILi4EEvPf"}   # no line info
    own = kt.OwnKernels.of(['extern "C" __global__ void block_sum(float* x) {}'], [LOC_PTX], folder=kt.Path("/sub"))
    cub = "_ZN3cub18DeviceReduceKernelEv"
    assert foreign_names([cub, "block_sum"], own) == [cub]
    assert "included library header" in own.why_not(kt.Launch(cub, True))


@pytest.mark.skipif(__import__("grader.static", fromlist=["x"]).nvrtc_unavailable() is not None,
                    reason="NVRTC cannot be loaded on this machine")
def test_ptx_of_names_the_files_each_kernel_comes_from(tmp_path):
    """With NVRTC: a template kernel of a header outside the submission, instantiated in its
    kernel.cu, is not own; kernels written in kernel.cu, or inlined from its own header, are."""
    from grader.static import ptx_of
    lib, sub = tmp_path / "lib", tmp_path / "sub"
    lib.mkdir()
    sub.mkdir()
    (lib / "lib.cuh").write_text("template <int N> __global__ void lib_kernel(float* x) { x[N] = 2.0f * x[N]; }\n")
    (sub / "helpers.cuh").write_text("__device__ __forceinline__ float twice(float x) { return 2.0f * x; }\n")
    (sub / "kernel.cu").write_text(f'#include "{lib / "lib.cuh"}"\n#include "helpers.cuh"\n'
                                   'template __global__ void lib_kernel<3>(float*);\n'
                                   'extern "C" __global__ void mine(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n')
    ptx = ptx_of(sub / "kernel.cu", ("-std=c++17",), "sm_90")
    assert ptx is not None
    assert kt.entries_from(kt.ptx_parse(ptx), sub) == {"mine"}
    assert "_Z10lib_kernelILi3EEvPf" in kt.entries_from(kt.ptx_parse(ptx), None)


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
        data = t.lines(b"R CUPTI 130001", b"K 1 + block_sum", b"S 1", b"K 2 - cupy_sum", b"D 3 kernel names dropped")
        cut = data.index(b"cupy_s") + len(b"cupy_s")
        os.write(f.worker_fd, data[:cut])
        assert f.names() == [kt.Launch("block_sum", True)] and f.status == "CUPTI 130001" and not f.error and f.reported
        os.write(f.worker_fd, data[cut:])
        assert f.names() == [kt.Launch("cupy_sum", False)] and "lost names" in f.error and not f.reported
        assert f.after_report == [kt.Launch("cupy_sum", False)]   # launched after the last flush
        assert f.names() == []
        f.error = ""
        os.ftruncate(f.worker_fd, 0)      # what a worker holding the descriptor could do
        f.names()
        assert "truncated" in f.error
    finally:
        f.close()
    assert f.worker_fd == -1 and f.key_fd == -1


@pytest.mark.parametrize("lines, what", [
    ([b"K 1 + mine", b"K 3 + mine2", b"S 3"], "kernel line '3' follows line 1"),       # K 2 truncated away
    ([b"K 1 + mine", b"K 2 - cupy_sum", b"S 1"], "the tracer wrote 1 kernel lines, 2 arrived"),
    ([b"K 1 + mine", b"T the kernel launch callbacks were turned off inside the worker", b"S 1"], "turned off"),
    ([b"K 1 + mine", b"K 2 + two words", b"S 2"], "malformed kernel line"),
    ([b"K 1 + mine", b"R CUPTI 130001", b"S 1"], "a line the tracer does not write"),   # R only first
    ([b"K 1 + mine", b"X 1", b"S 1"], "a line the tracer does not write"),
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
    honest = check(lambda t: t.lines(b"R CUPTI 130001", b"K 1 + zero", b"K 2 - cupy_sum", b"S 2"))
    assert honest == ""
    forged = check(lambda t: t.lines(b"R CUPTI 130001", b"K 1 + zero", b"S 1") + b"K 2 + block_sum\nS 2 0000000000000000\n")
    assert "MAC" in forged
    rewritten = check(lambda t: t.lines(b"R CUPTI 130001", b"K 1 + zero", b"K 2 - cupy_sum", b"S 2")
                      .replace(b"- cupy_sum", b"+ tile_sum"))
    assert "MAC" in rewritten
    absorbed = check(lambda t: t.lines(b"R CUPTI 130001", b"K 1 + zero") + b"R " + t.lines(b"K 2 - cupy_sum")
                     + b"K 2 + block_sum\n" + t.lines(b"S 2"))
    assert "MAC" in absorbed or "does not write" in absorbed

    def replay(t: SignedLines) -> bytes:
        first = t.lines(b"R CUPTI 130001", b"K 1 + zero", b"S 1")
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


# A stand-in for libcupti, enough for the tracer: subscribe, enable, query, and the driver and runtime
# calls to call back (a function's module is its address with the low byte cleared).
FAKE_CUPTI = r"""
#include <cupti.h>
#include <stdint.h>
static CUpti_CallbackFunc callback;
static unsigned char enabled[8][4096];
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc f, void *u) {
    (void)u; callback = f; *s = (CUpti_SubscriberHandle)1; return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle s, CUpti_CallbackDomain d,
                                         CUpti_CallbackId c) { (void)s; enabled[d][c] = on; return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t *on, CUpti_SubscriberHandle s, CUpti_CallbackDomain d,
                                           CUpti_CallbackId c) { (void)s; *on = enabled[d][c]; return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **t) { (void)r; *t = "fake"; return CUPTI_SUCCESS; }
CUresult cuFuncGetModule(CUmodule *m, CUfunction f) { *m = (CUmodule)((uintptr_t)f & ~(uintptr_t)0xff); return CUDA_SUCCESS; }
/* addresses from 0xd000 on are device memory, from 0xb000 page-locked host memory, below unknown (pageable) */
CUresult cuPointerGetAttribute(void *out, CUpointer_attribute a, CUdeviceptr p) {
    if (a != CU_POINTER_ATTRIBUTE_MEMORY_TYPE || p < 0xb000) return CUDA_ERROR_INVALID_VALUE;
    *(unsigned int *)out = p >= 0xd000 ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    return CUDA_SUCCESS;
}
static void call(CUpti_CallbackDomain d, CUpti_CallbackId c, CUpti_ApiCallbackSite site, const char *function,
                 const char *symbol, const void *params, CUresult *ret) {
    CUpti_CallbackData data = {0};
    data.callbackSite = site;
    data.functionName = function;
    data.symbolName = symbol;
    data.functionParams = params;
    data.functionReturnValue = ret;
    if (enabled[d][c]) callback(0, d, c, &data);
}
void fake_launch_from(const char *name, uintptr_t f) {   /* cuLaunchKernel(f, ...) */
    void *params[11] = {(void *)f};
    call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, "cuLaunchKernel",
         name, params, 0);
}
void fake_launch(const char *name) { fake_launch_from(name, 0x2001); }
void fake_load(uintptr_t module) {   /* cuModuleLoadData(&module, image), at its exit */
    CUmodule m = (CUmodule)module;
    CUresult ok = CUDA_SUCCESS;
    void *params[2] = {&m, 0};
    call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, CUPTI_API_EXIT, "cuModuleLoadData",
         0, params, &ok);
}
void fake_unload(uintptr_t module) {
    void *params[1] = {(void *)module};
    call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, CUPTI_API_ENTER, "cuModuleUnload",
         0, params, 0);
}
void fake_copy(void) {
    void *params[4] = {0};
    call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2, CUPTI_API_ENTER,
         "cuMemcpy2DAsync_v2", 0, params, 0);
}
void fake_runtime_copy(int kind, uintptr_t src) {   /* cudaMemcpyAsync(dst, src, count, kind, stream) */
    struct { void *dst; const void *src; size_t count; int kind; void *stream; } params = {0, (const void *)src, 4, kind, 0};
    call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, CUPTI_API_ENTER,
         "cudaMemcpyAsync", 0, &params, 0);
}
void fake_to_symbol(int kind) {   /* cudaMemcpyToSymbol(symbol, src, count, offset, kind) */
    struct { const void *symbol; const void *src; size_t count; size_t offset; int kind; } params = {0, 0, 4, 0, kind};
    call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020, CUPTI_API_ENTER,
         "cudaMemcpyToSymbol", 0, &params, 0);
}
void fake_htod(uintptr_t src) {   /* cuMemcpyHtoDAsync_v2(dst, src, count, stream) */
    struct { CUdeviceptr dst; const void *src; size_t count; void *stream; } params = {0xd100, (const void *)src, 4, 0};
    call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, CUPTI_API_ENTER,
         "cuMemcpyHtoDAsync_v2", 0, &params, 0);
}
void fake_host_alloc(void) {   /* cuMemHostAlloc(&p, bytes, flags) */
    void *params[3] = {0};
    call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, CUPTI_API_ENTER, "cuMemHostAlloc",
         0, params, 0);
}
void fake_reset(void) {
    call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, CUPTI_API_ENTER,
         "cudaDeviceReset", 0, 0, 0);
}
void fake_stream_wait(void) {
    void *params[4] = {0};
    call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2, CUPTI_API_ENTER,
         "cuStreamWaitValue32_v2", 0, params, 0);
}
CUresult cuCtxGetCurrent(CUcontext *c) { *c = (CUcontext)0x77; return CUDA_SUCCESS; }
CUresult cuCtxPushCurrent_v2(CUcontext c) { return c == (CUcontext)0x77 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }
CUresult cuCtxPopCurrent_v2(CUcontext *c) { *c = (CUcontext)0x77; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
void fake_disable(void) { enabled[CUPTI_CB_DOMAIN_DRIVER_API][CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel] = 0; }
"""

# In the worker's place: the tracer started, the own window, launches, copies, flushes; then the
# known tampering routes.
TRACED_PROCESS = r"""
import ctypes, os, sys
fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
tracer = ctypes.CDLL(sys.argv[2])
fd = int(os.environ["GRADE_KERNEL_TRACE_FD"])
assert tracer.grader_trace_flush() == 1           # before CUDA loaded it: nothing, and no tampering noted
tracer.InitializeInjection()
step = sys.stdin.readline
step()
fake.fake_load(0x1000)                            # before the window: not own
assert tracer.grader_trace_own_window(1) == 1
fake.fake_load(0x2000)                            # the worker's trusted load of kernel.cu
assert tracer.grader_trace_own_window(0) == 2
assert tracer.grader_trace_own_window(1) == 2     # closed for good
fake.fake_load(0x3000)
fake.fake_launch(b"mine")
fake.fake_launch(b"mine")
fake.fake_launch_from(b"cupy_sum", 0x1001)
fake.fake_launch_from(b"mine", 0x1001)            # the same name from another module
fake.fake_launch_from(b"mine", 0x3001)
fake.fake_copy()
fake.fake_runtime_copy(1, 0x100)                  # host to device from pageable memory: not written
fake.fake_runtime_copy(1, 0xb100)                 # ... from page-locked memory: not written
fake.fake_runtime_copy(2, 0xd100)                 # device to host
fake.fake_htod(0x100)                             # the driver's upload from host memory: not written
fake.fake_stream_wait()
fake.fake_to_symbol(1)                            # host to device: not written
fake.fake_to_symbol(3)                            # device to device
fake.fake_htod(0xd200)                            # labelled host to device, from device memory
fake.fake_host_alloc()                            # host memory the GPU can reach
tracer.grader_trace_flush()
print("flushed", flush=True)                      # 1: the lines, once each, then S
step()
fake.fake_reset()                                 # frees every module: none is own any more
fake.fake_launch(b"mine")
fake.fake_runtime_copy(1, 0xd200)                 # labelled host to device, from device memory
tracer.grader_trace_flush()
print("reset", flush=True)
step()
fake.fake_unload(0x2000)
fake.fake_load(0x2000)                            # the handle reused after an unload: own no more
fake.fake_launch(b"mine")
tracer.grader_trace_flush()
print("reloaded", flush=True)                     # 2
step()
fake.fake_launch(b"mine")                         # written again after a flush
saved, null = os.dup(fd), os.open(os.devnull, os.O_WRONLY)
os.dup2(null, fd)                                 # redirected during a call, restored before the reply
fake.fake_launch(b"torch_softmax")
os.dup2(saved, fd)
tracer.grader_trace_flush()
print("redirected", flush=True)                   # 3: T, and the lost K line leaves a gap
step()
import fcntl
flags = fcntl.fcntl(fd, fcntl.F_GETFL)
fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_APPEND)   # to rewrite lines in place with pwrite
fake.fake_launch(b"mine")
fcntl.fcntl(fd, fcntl.F_SETFL, flags)
tracer.grader_trace_flush()
print("unappended", flush=True)                   # 4: T
step()
fake.fake_disable()                               # what cuptiFinalize or cuptiEnableCallback(0) does
tracer.grader_trace_flush()
print("disabled", flush=True)                     # 5: T
step()
"""


@pytest.mark.skipif(isinstance(kt.find_cupti(), str) or shutil.which("cc") is None,
                    reason="no CUPTI headers (CUDA toolkit) or no C compiler on this machine")
def test_the_tracer_writes_names_at_launch_and_reports_tampering(tmp_path, monkeypatch):
    """The tracer's own code on a CPU, against a stand-in libcupti: names written at their first
    launch since a flush, numbered, "+" only for functions of modules loaded in the own window
    (which opens once and closes for good; an unloaded module is own no more); device copies and
    stream memory operations written, host-to-device copies not unless their source is device
    memory (the label alone says nothing); S at each flush; a redirected
    descriptor and turned-off callbacks reported."""
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
        L = kt.Launch
        assert f.names() == [L("mine", True), L("cupy_sum", False), L("mine", False),
                             L("<memcpy:cuMemcpy2DAsync_v2>", False), L("<memcpy:cudaMemcpyAsync>", False),
                             L("<stream-memory-op:cuStreamWaitValue32_v2>", False), L("<memcpy:cudaMemcpyToSymbol>", False),
                             L("<memcpy:cuMemcpyHtoDAsync_v2>", False), L("<host-memory:cuMemHostAlloc>", False)]
        assert f.reported and not f.error
        assert step() == "reset"
        assert f.names() == [L("mine", False), L("<memcpy:cudaMemcpyAsync>", False)] and not f.error
        assert f.status.startswith("CUPTI") and f.check_descriptor(child.pid) == ""
        assert step() == "reloaded"
        assert f.names() == [L("mine", False)] and not f.error
        assert step() == "redirected"
        assert f.names() == [L("mine", False)] and f.reported
        assert "tampered with inside the worker" in f.error and "redirected, closed" in f.error
        f.error = ""
        assert step() == "unappended"
        assert f.names() == [] and "made rewritable" in f.error   # the line is not written, the gap shows
        f.error = ""
        assert step() == "disabled"
        f.names()
        assert "callbacks were turned off" in f.error
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


@pytest.mark.skipif(__import__("grader.static", fromlist=["x"]).nvrtc_unavailable() is not None,
                    reason="NVRTC cannot be loaded on this machine")
def test_kernels_inlining_a_forbidden_library_are_not_own(tmp_path):
    """Red-team finding (fifth session): a kernel the student only wraps around CUB's block or
    agent algorithms (cub::BlockReduce here; cub::AgentScan for a whole single-pass scan) has
    .loc lines in kernel.cu, yet its work is CUB's: with "cub/" forbidden it is not own, and the
    message says which header; without, it is."""
    from grader.static import ptx_of
    (tmp_path / "kernel.cu").write_text(
        "#include <cub/block/block_reduce.cuh>\n"
        'extern "C" __global__ void block_sum(const float* x, float* out, int n) {\n'
        "  typedef cub::BlockReduce<float, 256> BR;\n  __shared__ typename BR::TempStorage tmp;\n"
        "  float v = 0.f;\n  for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) v += x[i];\n"
        "  float s = BR(tmp).Sum(v);\n  if (threadIdx.x == 0) atomicAdd(out, s);\n}\n"
        'extern "C" __global__ void zero(float* out) { *out = 0.f; }\n')
    ptx = ptx_of(tmp_path / "kernel.cu", ("-std=c++17",), "sm_90")
    assert ptx is not None
    assert kt.library_code(kt.ptx_parse(ptx), ("cub/", "thrust/")) == {"block_sum": "cub/block/block_reduce.cuh"}
    forbidding = kt.OwnKernels.of([], [ptx], folder=tmp_path, forbidden_headers=("cub/",))
    assert foreign_names(["block_sum", "zero"], forbidding) == ["block_sum"]
    assert "cub/block/block_reduce.cuh" in forbidding.why_not(kt.Launch("block_sum", True))
    refusal = forbidding.forbidden_code()     # grade refuses such a submission before it runs
    assert "block_sum inlines device code of cub/block/block_reduce.cuh" in refusal and "forbidden_headers" in refusal
    assert "zero" not in refusal
    allowing = kt.OwnKernels.of([], [ptx], folder=tmp_path)
    assert foreign_names(["block_sum", "zero"], allowing) == []
    assert allowing.forbidden_code() == ""


@pytest.mark.skipif(__import__("grader.static", fromlist=["x"]).nvrtc_unavailable() is not None,
                    reason="NVRTC cannot be loaded on this machine")
def test_cooperative_groups_reduce_and_scan_are_library_code_but_its_tiles_are_not(tmp_path):
    """Red-team finding (seventh session): cg::reduce over a 512-thread tile is a whole block's
    reduction, and cg::reduce_update_async the grid's combine: CG's reduce and scan headers are
    forbidden by default (header files, not the folder), while a reduction written with CG's tiles
    and shuffles is the student's own."""
    from grader.spec import DEFAULT_FORBIDDEN_HEADERS
    from grader.static import ptx_of
    (tmp_path / "kernel.cu").write_text(
        "#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\n#include <cuda/atomic>\n"
        "namespace cg = cooperative_groups;\n"
        'extern "C" __global__ void __launch_bounds__(512) cg_sum(const float* x, double* acc, int n) {\n'
        "  __shared__ cg::block_tile_memory<512> scratch;\n"
        "  auto tile = cg::tiled_partition<512>(cg::this_thread_block(scratch));\n"
        "  float v = 0.f;\n  for (int i = blockIdx.x * 512 + threadIdx.x; i < n; i += gridDim.x * 512) v += x[i];\n"
        "  cuda::atomic_ref<double, cuda::thread_scope_device> dst(acc[0]);\n"
        "  cg::reduce_update_async(tile, dst, (double)v, cg::plus<double>());\n}\n"
        'extern "C" __global__ void warp_sum(const float* x, float* out, int n) {\n'
        "  auto warp = cg::tiled_partition<32>(cg::this_thread_block());\n"
        "  float v = 0.f;\n  for (int i = blockIdx.x * 32 + threadIdx.x; i < n; i += gridDim.x * 32) v += x[i];\n"
        "  for (int o = 16; o > 0; o /= 2) v += warp.shfl_down(v, o);\n"
        "  if (warp.thread_rank() == 0) atomicAdd(out, v);\n}\n")
    ptx = ptx_of(tmp_path / "kernel.cu", ("-std=c++17",), "sm_90")
    assert ptx is not None
    found = kt.library_code(kt.ptx_parse(ptx), DEFAULT_FORBIDDEN_HEADERS)
    assert list(found) == ["cg_sum"] and found["cg_sum"].startswith("cooperative_groups/"), found
    assert found["cg_sum"] in DEFAULT_FORBIDDEN_HEADERS
    assert kt.library_code(kt.ptx_parse(ptx), ("cooperative_groups/reduce.hpp",)) == {}   # a file entry is the whole tail
    judged = kt.OwnKernels.of([], [ptx], folder=tmp_path, forbidden_headers=DEFAULT_FORBIDDEN_HEADERS)
    assert foreign_names(["cg_sum", "warp_sum"], judged) == ["cg_sum"]
    assert "cg_sum inlines device code of cooperative_groups/" in judged.forbidden_code()


@pytest.mark.skipif(__import__("grader.static", fromlist=["x"]).nvrtc_unavailable() is not None,
                    reason="NVRTC cannot be loaded on this machine")
def test_device_code_from_outside_the_submission_and_the_include_folders_is_not_own(tmp_path):
    """Red-team idea (seventh session): another package's device headers (torch's block_reduce.cuh,
    say) included by an absolute path are no forbidden_headers entry, yet not the student's work.
    Code from a header beside kernel.cu, or from the CUDA toolkit's headers (CG's tiles here), is."""
    from grader.static import include_folders, ptx_of
    other, sub = tmp_path / "site-packages" / "pkg" / "include", tmp_path / "sub"
    other.mkdir(parents=True)
    sub.mkdir()
    body = "template <class T> __device__ T block_total(T v) { for (int o = 16; o; o /= 2) v += __shfl_down_sync(~0u, v, o); return v; }\n"
    (other / "reduce.cuh").write_text(body)
    (sub / "mine.cuh").write_text(body.replace("block_total", "my_total"))
    (sub / "kernel.cu").write_text(
        f'#include "{other / "reduce.cuh"}"\n#include "mine.cuh"\n#include <cooperative_groups.h>\n'
        'extern "C" __global__ void theirs(float* x) { x[threadIdx.x] = block_total(x[threadIdx.x]); }\n'
        'extern "C" __global__ void mine(float* x) { x[threadIdx.x] = my_total(x[threadIdx.x]); }\n'
        'extern "C" __global__ void tiles(float* x) {\n'
        "  auto w = cooperative_groups::tiled_partition<32>(cooperative_groups::this_thread_block());\n"
        "  x[threadIdx.x] = w.shfl_down(x[threadIdx.x], 1);\n}\n")
    ptx = ptx_of(sub / "kernel.cu", ("-std=c++17",), "sm_90")
    assert ptx is not None
    roots = include_folders(("-std=c++17",))
    assert roots and all(Path(r).is_absolute() for r in roots)
    assert any("cooperative_groups" in f for f in kt.ptx_parse(ptx).files.values())   # CG's lines, under a root
    found = kt.library_code(kt.ptx_parse(ptx), ("cub/",), sub, roots)
    assert found == {"theirs": str((other / "reduce.cuh").resolve())}, found
    assert kt.library_code(kt.ptx_parse(ptx), ("cub/",), sub) == {}   # without roots: not checked
    judged = kt.OwnKernels.of([], [ptx], folder=sub, forbidden_headers=("cub/",), include_roots=roots)
    assert foreign_names(["theirs", "mine", "tiles"], judged) == ["theirs"]
    refusal = judged.forbidden_code()
    assert "theirs inlines" in refusal and "outside the submission's folder" in refusal and "forbidden_headers" not in refusal
    assert "outside the submission's folder" in judged.why_not(kt.Launch("theirs", True))


@pytest.mark.skipif(__import__("grader.static", fromlist=["x"]).nvrtc_unavailable() is not None,
                    reason="NVRTC cannot be loaded on this machine")
def test_a_wmma_kernel_is_the_submissions_own(tmp_path):
    """<mma.h>'s WMMA functions are inlined from CUDA's crt/ headers (crt/mma.hpp), which grading
    may take from a folder it adds (grader.static.crt_include_folder, the eighth session): that
    folder is one of the include folders, so a WMMA kernel for ex12 is the student's own, and its
    PTX meets ex12's required_ptx."""
    from grader.spec import DEFAULT_FORBIDDEN_HEADERS
    from grader.static import include_folders, missing_ptx, ptx_of
    from tests.conftest import spec_of
    (tmp_path / "kernel.cu").write_text(
        "#include <mma.h>\nusing namespace nvcuda;\n"
        'extern "C" __global__ void wmma_tile(const __half* a, const __half* b, float* c) {\n'
        "  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;\n"
        "  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;\n"
        "  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;\n"
        "  wmma::fill_fragment(fc, 0.0f);\n  wmma::load_matrix_sync(fa, a, 16);\n  wmma::load_matrix_sync(fb, b, 16);\n"
        "  wmma::mma_sync(fc, fa, fb, fc);\n  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);\n}\n")
    ptx = ptx_of(tmp_path / "kernel.cu", ("-std=c++17",), "sm_90")
    assert ptx is not None
    roots = include_folders(("-std=c++17",))
    files = list(kt.ptx_parse(ptx).files.values())
    assert any("mma" in Path(f).name for f in files), files   # WMMA's own lines, from the crt/ headers
    judged = kt.OwnKernels.of([], [ptx], folder=tmp_path, forbidden_headers=DEFAULT_FORBIDDEN_HEADERS,
                              include_roots=roots)
    assert foreign_names(["wmma_tile"], judged) == [] and judged.forbidden_code() == ""
    assert missing_ptx(spec_of("ex12_gemm_tensorcore"), ptx) == []


@pytest.mark.skipif(__import__("grader.static", fromlist=["x"]).nvrtc_unavailable() is not None
                    or shutil.which("readelf") is None, reason="needs NVRTC and readelf")
def test_the_judged_ptx_and_the_loaded_cubin_come_from_one_compile(tmp_path):
    """Red-team finding (fourth pass): kernel.cu that compiles to a plain kernel where it can include
    itself (the grader's check compile, named by its path) and to CUB's AgentScan elsewhere (CuPy's
    loader compiling the text from a temporary folder), under the same names: the grader judged PTX
    that never ran. Now grader.kernel compiles once, named by the path, and the worker loads that
    cubin and reports that PTX: the cheat's CUB branch is in neither, and the PTX's entries are
    the cubin's kernels."""
    from grader.kernel import compile_source
    from grader.static import compile_with_nvrtc, ptx_of
    cheat = cheat_submission(ROOT_CHEATS / "ex05_scan" / "cub_where_the_check_cannot_see", tmp_path / "cheat") / "kernel.cu"
    source = tmp_path / "kernel.cu"
    source.write_text(cheat.read_text())
    cubin, ptx = compile_source(source.read_text(), source, ("-std=c++17",), "sm_90")
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF"
    image = tmp_path / "kernel.cubin"
    image.write_bytes(cubin)
    symbols = subprocess.run(["readelf", "-sW", str(image)], capture_output=True, text=True, check=True).stdout
    functions = {line.split()[-1] for line in symbols.splitlines() if " FUNC " in line}
    entries = kt.ptx_parse(ptx).entries
    assert entries == {"scan_init_f32", "scan_init_i32", "scan_f32", "scan_i32"} and entries <= functions
    assert kt.library_code(kt.ptx_parse(ptx), ("cub/",)) == {} and "agent_scan" not in ptx
    own = kt.KernelPolicy((), tmp_path, forbidden_headers=("cub/",)).judge({"kernel.cu": ptx}, {})
    assert own.entries == entries and own.forbidden_code() == ""
    # the check without a GPU (grade --compile-only, the required-PTX warning) compiles it the same way
    assert compile_with_nvrtc(source, "sm_90", ("-std=c++17",))[0] == []
    assert "agent_scan" not in (ptx_of(source, ("-std=c++17",), "sm_90") or "agent_scan")


@pytest.mark.parametrize("domain, function, kind", [
    ("DRIVER", "cuLaunchKernel", ("TRACE_LAUNCH", 1)),
    ("DRIVER", "cuMemcpyDtoDAsync_v2", ("TRACE_COPY", 0)),
    ("RUNTIME", "cudaMemcpyAsync_v3020", ("TRACE_COPY", 1)),
    ("RUNTIME", "cudaMemcpyToSymbol_v3020", ("TRACE_COPY", 2)),
    ("DRIVER", "cuMemcpyHtoD_v2", ("TRACE_COPY", 3)),          # an upload only from host memory
    ("DRIVER", "cuMemcpyHtoAAsync_v2", ("TRACE_COPY", 4)),
    ("DRIVER", "cuMemHostAlloc", ("TRACE_HOST_MEMORY", 0)),
    ("DRIVER", "cuMemHostRegister_v2", ("TRACE_HOST_MEMORY", 0)),
    ("DRIVER", "cuMemAllocManaged", ("TRACE_HOST_MEMORY", 0)),
    ("RUNTIME", "cudaHostAlloc_v3020", ("TRACE_HOST_MEMORY", 0)),
    ("RUNTIME", "cudaMallocManaged_v6000", ("TRACE_HOST_MEMORY", 0)),
    ("DRIVER", "cuMemHostUnregister", None),                   # gives access up
    ("DRIVER", "cuMemHostGetFlags", None),
    ("DRIVER", "cuMemAlloc_v2", None),
    ("DRIVER", "cuLaunchHostFunc", None),
    ("DRIVER", "cuDevicePrimaryCtxReset_v2", ("TRACE_CONTEXT_END", 0)),
    ("DRIVER", "cuDevicePrimaryCtxRelease_v2", ("TRACE_CONTEXT_RELEASE", 0)),   # red-team pass 20
    ("DRIVER", "cuDevicePrimaryCtxRetain", None),
])
def test_what_the_tracer_follows(domain, function, kind):
    assert kt.traced_kind(domain, function) == kind


@pytest.mark.skipif(__import__("grader.static", fromlist=["x"]).nvrtc_unavailable() is not None,
                    reason="NVRTC cannot be loaded on this machine")
@pytest.mark.parametrize("cheat", ["ex04_reduction/cub_kernels_behind_ptx_comment",
                                   "ex05_scan/cub_agent_scan_behind_noinline"])
def test_library_code_is_found_behind_comments_and_calls(tmp_path, cheat):
    """Red-team finding (sixth session): CUB's code hidden from a line-by-line read of the PTX, by
    inline asm holding a PTX comment with fake .entry/.loc/.func lines, or by __noinline__ wrappers
    (CUB's lines then sit in .func bodies the kernels call). Read as the assembler reads it, every
    kernel that can run CUB's code is CUB's."""
    from grader.kernel import compile_source
    folder = tmp_path / "sub"
    shutil.copytree(cheat_submission(ROOT_CHEATS / cheat, tmp_path / "parts"), folder)
    source = folder / "kernel.cu"
    _, ptx = compile_source(source.read_text(), source, ("-std=c++17",), "sm_90")
    own = kt.KernelPolicy((), folder, forbidden_headers=("cub/", "thrust/")).judge({"kernel.cu": ptx}, {})
    assert own.headers and "forbidden_headers" in own.forbidden_code()
    assert not (set(own.entries) & {e for e, _ in own.headers})


@pytest.mark.skipif(__import__("grader.static", fromlist=["x"]).nvrtc_unavailable() is not None,
                    reason="NVRTC cannot be loaded on this machine")
def test_a_submission_in_a_folder_named_like_a_library_is_its_own(tmp_path):
    """Red-team finding (sixth session): forbidden_headers matched "thrust/" anywhere in a path,
    the submission's own included."""
    from grader.kernel import compile_source
    folder = tmp_path / "thrust" / "cub" / "alice"
    folder.mkdir(parents=True)
    source = folder / "kernel.cu"
    source.write_text('extern "C" __global__ void add(float* x) { x[threadIdx.x] += 1.0f; }\n')
    _, ptx = compile_source(source.read_text(), source, ("-std=c++17",), "sm_90")
    own = kt.KernelPolicy((), folder, forbidden_headers=("cub/", "thrust/")).judge({"kernel.cu": ptx}, {})
    assert own.entries == {"add"} and own.forbidden_code() == ""


def test_a_link_to_a_library_folder_is_the_library(tmp_path):
    """Red-team idea (sixth session): a link inside the submission to CUB's folder, so the .file path
    names neither "cub/" nor a file outside the submission as written."""
    (tmp_path / "include" / "cub" / "block").mkdir(parents=True)
    (tmp_path / "include" / "cub" / "block" / "reduce.cuh").write_text("")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "lib").symlink_to(tmp_path / "include" / "cub")
    ptx = (f'.file 1 "{sub}/kernel.cu"\n.file 2 "{sub}/lib/block/reduce.cuh"\n'
           ".visible .entry k(\n)\n{\n.loc 1 3 1\n.loc 2 7 1\nret;\n}\n")
    assert kt.library_code(kt.ptx_parse(ptx), ("cub/",), sub) == {"k": "cub/block/reduce.cuh"}


@pytest.mark.skipif(__import__("grader.static", fromlist=["x"]).nvrtc_unavailable() is not None,
                    reason="NVRTC cannot be loaded on this machine")
def test_library_code_anywhere_in_the_module_is_found(tmp_path):
    """Red-team finding (sixth session, third pass): CUB in a device function that no kernel is
    seen to call (a call written in inline asm without spaces; a pointer set in an initializer)."""
    from grader.kernel import compile_source
    folder = tmp_path / "sub"
    shutil.copytree(ROOT_CHEATS / "ex04_reduction" / "cub_behind_call_reader_cannot_follow", folder)
    source = folder / "kernel.cu"
    _, ptx = compile_source(source.read_text(), source, ("-std=c++17",), "sm_90")
    assert kt.ptx_parse(ptx).reachable({"block_sum"}) >= {"block_sum", "cub_sum"}   # the call is read now
    found = kt.library_code(kt.ptx_parse(ptx), ("cub/",), folder)
    assert set(found) == {"block_sum", "cub_sum"} and found["cub_sum"].startswith("cub/block/")


@pytest.mark.skipif(__import__("grader.static", fromlist=["x"]).nvrtc_unavailable() is not None,
                    reason="NVRTC cannot be loaded on this machine")
def test_an_error_in_an_included_header_names_the_header(tmp_path):
    """New-student trial (sixth session): with kernel.cu compiled by its path, `#include "helper.cuh"`
    works, and an error on line 3 of the header was reported as kernel.cu:3. Grading's compile and
    --compile-only both name the file now."""
    from grader.kernel import CompileError, compile_source
    from grader.static import compile_with_nvrtc
    (tmp_path / "helper.cuh").write_text("__device__ float f(float x) {\n  return x;\n  undefined_thing;\n}\n")
    source = tmp_path / "kernel.cu"
    source.write_text('#include "helper.cuh"\nextern "C" __global__ void k(float* x) { x[0] = f(x[0]); oops; }\n')
    expected = ['helper.cuh:3: error: identifier "undefined_thing" is undefined',
                'kernel.cu:2: error: identifier "oops" is undefined']
    with pytest.raises(CompileError) as caught:
        compile_source(source.read_text(), source, ("-std=c++17",), "sm_90")
    assert str(caught.value).splitlines() == expected
    assert compile_with_nvrtc(source, "sm_90", ("-std=c++17",))[0] == expected


def _copy_case(tmp_path):
    """(spec, a copy of the ex04 reference, the text of CG's details/reduce.h) or a skip."""
    from grader.spec import load_spec
    from grader.static import include_folders
    roots = include_folders(("-std=c++17",))
    source = next((Path(r) / "cooperative_groups" / "details" / "reduce.h" for r in roots
                   if (Path(r) / "cooperative_groups" / "details" / "reduce.h").is_file()), None)
    if source is None:
        pytest.skip("no CUDA toolkit headers with cooperative_groups here")
    root = ROOT_CHEATS.parents[1]
    sub = tmp_path / "sub"
    shutil.copytree(root / "solutions" / "ex04_reduction", sub)
    return load_spec(root / "exercises" / "ex04_reduction" / "spec.toml"), sub, source.read_text()


def test_a_copy_of_a_forbidden_library_in_the_submission_is_refused(tmp_path):
    """Red-team idea (seventh session): forbidden_headers reads the PTX's .loc files, and files under
    the submission's folder are its own whatever they are called, so CG's or CUB's source copied
    into the submission (or pasted into kernel.cu) would pass; its token sequences give it away."""
    from grader.static import LIBRARY_COPY_FINGERPRINTS, copied_library_code, static_check
    spec, sub, text = _copy_case(tmp_path)
    assert copied_library_code(spec, sub) is None and static_check(spec, sub) is None   # the reference is its own
    (sub / "mylib").mkdir()
    (sub / "mylib" / "tree.cuh").write_text(text)   # renamed, in a folder of its own
    kind, message = static_check(spec, sub)
    assert kind == "forbidden" and message.startswith("mylib/tree.cuh: shares ") and "forbidden_headers" in message
    assert int(message.split("shares ")[1].split()[0]) >= LIBRARY_COPY_FINGERPRINTS
    from dataclasses import replace
    assert copied_library_code(replace(spec, forbidden_headers=()), sub) is None   # a spec that forbids no header


@pytest.mark.parametrize("disguise", ["hidden_folder", "other_suffix", "comment_before_every_line", "small_files",
                                      "reformatted", "empty_macros_between_tokens", "splice_after_every_character",
                                      "identity_macro_around_every_identifier"])
def test_a_disguised_copy_of_a_forbidden_library_is_refused(tmp_path, disguise):
    """Red-team pass 8 (2026-12-01): a verbatim CUB/Thrust copy passed the line check in a hidden
    folder (.cccl/), with .inl names, or with /**/ before every line; files under 40 shared lines
    each would have passed too. The check now reads every file of the folder, together, by token
    sequences of the comment-free text. Red-team pass 19: a backslash-newline inside every token
    (the compiler splices them before it reads a token) left no token run in common with the
    library; the text is spliced first. So did an identity macro, ``#define I(x) x``, around every
    identifier: function-like macros of the submission's own are expanded too."""
    from grader.static import copied_library_code
    spec, sub, text = _copy_case(tmp_path)
    lines = text.splitlines()
    if disguise == "hidden_folder":
        (sub / ".cccl").mkdir()
        (sub / ".cccl" / "reduce.cuh").write_text(text)
    elif disguise == "other_suffix":
        (sub / "tree.inl").write_text(text)
    elif disguise == "comment_before_every_line":
        (sub / "tree.cuh").write_text("\n".join(f"/* ~ */ {ln}" for ln in lines))
    elif disguise == "small_files":
        for k in range(0, len(lines), 15):
            (sub / f"part{k:04d}.cuh").write_text("\n".join(lines[k:k + 15]))
    elif disguise == "identity_macro_around_every_identifier":
        import re
        (sub / "defs.cuh").write_text("#define I(x) x\n")
        (sub / "tree.cuh").write_text(re.sub(r"\b[A-Za-z_]\w*\b", lambda m: f"I({m.group(0)})", text))
    elif disguise == "splice_after_every_character":
        (sub / "tree.cuh").write_text("".join(ch + "\\\n" for ch in text))
    elif disguise == "reformatted":   # one token per line, no indentation
        import re
        (sub / "tree.cuh").write_text("\n".join(re.findall(r"[A-Za-z_]\w*|\d[\w.]*|\S", text)))
    else:   # macros of its own, defined in another file, that expand to nothing, between the tokens
        from grader.static import strip_comments
        (sub / "defs.cuh").write_text("#define _e\n#define _f()\n")
        body = [ln for ln in strip_comments(text, "x.h").splitlines() if not ln.lstrip().startswith("#")]
        (sub / "tree.cuh").write_text("\n".join(" _e ".join(ln.split()) + " _f()" for ln in body))
    message = copied_library_code(spec, sub)
    assert message is not None and "forbidden_headers" in message, disguise


def test_the_copy_check_reads_only_regular_files_and_bounds_what_it_reads(tmp_path, monkeypatch):
    """The copy check reads every file of the folder; the static check first refuses a folder it
    could not read safely (static.folder_problem), so the copy check never opens such a file."""
    from grader import static
    spec, sub, _ = _copy_case(tmp_path)

    def message():
        problem = static.static_check(spec, sub)
        return problem[1] if problem is not None and problem[0] == "bad_submission" else problem
    (sub / "zeros").symlink_to("/dev/zero")   # read as a file, it would never end
    assert message() is not None and "zeros: is a symbolic link" in message() and "fix:" in message()
    (sub / "zeros").unlink()
    os.mkfifo(sub / "fifo")                   # never opened: refused too (an #include would block on it)
    assert message() is not None and "fifo: is neither a file nor a folder" in message()
    (sub / "fifo").unlink()
    assert message() is None and static.copied_library_code(spec, sub) is None
    monkeypatch.setattr(static, "SUBMISSION_READ_LIMIT_BYTES", 4096)
    (sub / "padding.txt").write_text("x" * 8192)
    assert message() is not None and "holds more than" in message() and "fix:" in message()


@pytest.mark.parametrize("where", ["kernel.cu under #if 0", "a hidden notes file", "function-like macros"])
def test_a_macro_bomb_is_refused_without_exhausting_memory(tmp_path, where):
    """Red-team pass 18: three levels of 1000-token macros (20 KB of text, under #if 0 or in a hidden
    file: the copy check reads every file, as the preprocessor would expand it) expanded to 2 x 10^10
    tokens in the grader's own process: a MemoryError reported as a grader error, or memory growing
    at 0.5 GB/s until the time limit. The expansion now stops at EXPAND_EXTRA_TOKENS tokens beyond
    the file's own and the submission is refused, naming the file. Function-like macros (expanded
    since pass 19) are bounded the same way, before each replacement."""
    import resource
    from grader import static
    spec, sub, _ = _copy_case(tmp_path)
    bomb = ("#define BOMB_A " + " BOMB_B" * 1000 + "\n#define BOMB_B " + " BOMB_C" * 1000 + "\n#define BOMB_C "
            + " x" * 1000 + "\n" + " BOMB_A" * 20 + "\n")
    if where == "function-like macros":   # each level calls the next with a 1000-token argument
        bomb = ("#define BOMB_A(x) " + " BOMB_B(x x x x x x x x x x)" * 100 + "\n#define BOMB_B(x) " + " x" * 1000
                + "\n" + " BOMB_A(" + " y" * 1000 + ")" + "\n")
    if where.startswith("kernel.cu"):
        target = sub / "kernel.cu"
        target.write_text(target.read_text() + "\n#if 0\n" + bomb + "#endif\n")
    else:
        (sub / ".notes").mkdir()
        target = sub / ".notes" / "todo.txt"
        target.write_text(bomb)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kind, message = static.static_check(spec, sub)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024   # ru_maxrss: KiB on Linux
    assert kind == "bad_submission", (kind, message)
    assert message.startswith(f"{target.relative_to(sub)}: its #define macros expand to more than") and "fix:" in message
    assert grown_mb < 1500, grown_mb
    target.write_text("#define TWICE(x) x x\n#define PAIR A B\n" + " PAIR" * 1000 + "\n")   # ordinary macros pass
    assert static.static_check(spec, sub) is None


def _fake_library(tmp_path):
    """An include root holding cub/ (two headers) and an unrelated header; its real fingerprints."""
    from grader.static import fingerprints, strip_comments
    root = tmp_path / "include"
    (root / "cub" / "block").mkdir(parents=True)
    texts = {"cub/block/reduce.cuh": "template <int N> __device__ int block_reduce(int v) { "
                                      + " ".join(f"v = v + __shfl_xor_sync(~0u, v, {k});" for k in range(40)) + " return v; }",
             "cub/util.cuh": "namespace cub { " + " ".join(f"constexpr int k{k} = {k} * 3 + 1;" for k in range(40)) + " }",
             "other.h": "int unrelated_function_with_a_long_name(int a, int b) { return a * b + a - b; }"}
    for rel, text in texts.items():
        (root / rel).write_text(text)
    want = set()
    for rel in ("cub/block/reduce.cuh", "cub/util.cuh"):
        want.update(fingerprints(strip_comments(texts[rel], "x.cu")))
    return root, frozenset(want)


def test_library_fingerprints_are_cached_on_disk_and_recomputed_when_a_header_changes(tmp_path, monkeypatch):
    """Every grade's process once spent 2-9 s fingerprinting CUB and Thrust: the result is kept in the
    grader's cache folder, keyed by the headers' paths, sizes and times (and the fingerprinting code)."""
    from grader import static
    monkeypatch.setenv("GRADER_CACHE_DIR", str(tmp_path / "cache"))
    root, want = _fake_library(tmp_path)
    static.library_fingerprints.cache_clear()
    assert want and static.library_fingerprints(("cub/",), (str(root),)) == want
    files = list((tmp_path / "cache").glob("library-fingerprints-*.u32"))
    assert len(files) == 1
    static.library_fingerprints.cache_clear()
    real = static.fingerprints
    monkeypatch.setattr(static, "fingerprints", lambda *a, **k: pytest.fail("recomputed despite the cache"))
    assert static.library_fingerprints(("cub/",), (str(root),)) == want           # read back from the file
    monkeypatch.setattr(static, "fingerprints", real)
    header = root / "cub" / "util.cuh"
    header.write_text(header.read_text() + " namespace cub { constexpr int extra_one = 12345 * 7 + 99; }")
    static.library_fingerprints.cache_clear()
    changed = static.library_fingerprints(("cub/",), (str(root),))
    assert changed > want and len(list((tmp_path / "cache").glob("library-fingerprints-*.u32"))) == 2
    static.library_fingerprints.cache_clear()


@pytest.mark.parametrize("damage", ["truncated", "empty", "wrong_count"])
def test_a_damaged_fingerprint_cache_is_recomputed_not_trusted(tmp_path, monkeypatch, damage):
    from grader import static
    monkeypatch.setenv("GRADER_CACHE_DIR", str(tmp_path / "cache"))
    root, want = _fake_library(tmp_path)
    static.library_fingerprints.cache_clear()
    static.library_fingerprints(("cub/",), (str(root),))
    (cache,) = (tmp_path / "cache").glob("library-fingerprints-*.u32")
    data = cache.read_bytes()
    cache.write_bytes({"truncated": data[:-3], "empty": b"",
                       "wrong_count": (int.from_bytes(data[:8], "little") + 1).to_bytes(8, "little") + data[8:]}[damage])
    static.library_fingerprints.cache_clear()
    assert static.library_fingerprints(("cub/",), (str(root),)) == want
    assert cache.read_bytes() == data                                                # written whole again
    static.library_fingerprints.cache_clear()


def test_a_fingerprint_cache_written_without_the_secret_is_not_trusted_by_a_grading_run(tmp_path, monkeypatch):
    """Red-team pass 14b: code running unsandboxed as the grader's user (--sanitize, --profile,
    GRADER_ISOLATION=off) overwrote the cache with an empty set, and the copied-library check passed
    a verbatim CUB copy in every later grade. With $GRADER_SECRET set the file carries an HMAC under
    it; a file without one, or with a wrong one, is recomputed."""
    from grader import static
    monkeypatch.setenv("GRADER_CACHE_DIR", str(tmp_path / "cache"))
    root, want = _fake_library(tmp_path)
    monkeypatch.delenv("GRADER_SECRET", raising=False)
    static.library_fingerprints.cache_clear()
    static.library_fingerprints(("cub/",), (str(root),))          # a quick grade: an unauthenticated file
    (plain,) = (tmp_path / "cache").glob("library-fingerprints-*.u32")
    plain.write_bytes((0).to_bytes(8, "little"))                   # the poison: a valid, empty set
    static.library_fingerprints.cache_clear()
    assert static.library_fingerprints(("cub/",), (str(root),)) == frozenset()   # a student poisons only themselves
    monkeypatch.setenv("GRADER_SECRET", "course-secret")
    static.library_fingerprints.cache_clear()
    assert static.library_fingerprints(("cub/",), (str(root),)) == want          # grading ignores that file
    keyed = [p for p in (tmp_path / "cache").glob("library-fingerprints-*.u32") if p != plain]
    assert len(keyed) == 1 and keyed[0].name.split("-k")[0] == plain.name.removesuffix(".u32")
    keyed[0].write_bytes((0).to_bytes(8, "little") + b"\0" * 32)                # empty set, forged MAC
    static.library_fingerprints.cache_clear()
    assert static.library_fingerprints(("cub/",), (str(root),)) == want
    static.library_fingerprints.cache_clear()
    monkeypatch.setattr(static, "fingerprints", lambda *a, **k: pytest.fail("recomputed despite a valid MAC"))
    assert static.library_fingerprints(("cub/",), (str(root),)) == want          # its own file verifies
    static.library_fingerprints.cache_clear()


def test_work_started_after_a_timed_window_closed_is_read_as_late():
    """W (the timed calls synchronised), then the first work of any kind as an L line, until the B
    line of the next request the grader sent: the late work is handed over once, numbered with the
    K lines."""
    f = kt.TraceFile()
    t = SignedLines(f)
    try:
        t.write(b"R CUPTI 130001", b"K 1 + mine", b"S 1")
        assert f.names() == [kt.Launch("mine", True)] and f.status
        f.request_sent()                              # the timed round
        t.write(b"B 1", b"W 1", b"L 2 + mine")
        assert f.names() == [] and f.windows_closed == 1 and not f.error
        assert f.take_late() == [kt.Launch("mine", True)] and f.take_late() == []
        f.request_sent()                              # the next request reopens the window
        t.write(b"B 2", b"K 3 - cupy_copy", b"S 3")
        assert f.names() == [kt.Launch("cupy_copy", False)] and not f.error and not f.late
    finally:
        f.close()


@pytest.mark.parametrize("sent, lines, what", [
    (1, [b"B 1", b"W 1", b"B 1", b"L 2 + mine"], "request-start line the grader did not cause"),   # B from a cheat
    (1, [b"B 1", b"W 1", b"W 1"], "closed twice"),
    (1, [b"B 1", b"L 2 + mine"], "late-work line outside a closed timed window"),
    (0, [b"B 1"], "request-start line the grader did not cause"),
    # red-team: the trusted B of the timed request skipped, the submission's own B written after W
    (1, [b"K 2 + mine", b"W 2", b"B 2", b"K 3 + mine"], "closed before its request's start line"),
])
def test_marks_the_grader_did_not_cause_are_tampering(sent, lines, what):
    f = kt.TraceFile()
    t = SignedLines(f)
    try:
        t.write(b"R CUPTI 130001", b"K 1 + mine", b"S 1")
        f.names()
        for _ in range(sent):
            f.request_sent()
        t.write(*lines)
        f.names()
        assert "tampered with inside the worker" in f.error and what in f.error
    finally:
        f.close()


def test_no_b_line_is_expected_before_the_tracer_started():
    f = kt.TraceFile()
    t = SignedLines(f)
    try:
        f.request_sent()          # hello, preload: CUDA not initialised yet, so no B line
        t.write(b"R CUPTI 130001", b"K 1 + mine", b"S 1")
        f.names()
        f.request_sent()
        t.write(b"B 1", b"S 1")
        f.names()
        assert not f.error
    finally:
        f.close()


def test_a_failed_timed_round_without_w_is_its_own_error_not_tampering():
    """Red-team finding: solve raising (or the synchronisation reporting a CUDA error) in a timed
    round ends it before the W line; the reply's error is the report, not tampering."""
    import types
    from grader.sandbox import supervisor as sv
    f = kt.TraceFile()
    t = SignedLines(f)
    try:
        t.write(b"R CUPTI 130001", b"K 1 + mine", b"S 1")
        f.names()
        own = kt.OwnKernels(entries=frozenset({"mine"}), templates=frozenset())
        w = types.SimpleNamespace(trace=f, own_kernels=own, proc=None, _carried=[], own_kernels_traced=0,
                                  own_launched=set())
        f.request_sent()
        t.write(b"B 1", b"K 2 + mine")
        assert sv.Worker._foreign_kernels(w, "time", False) == "" and not f.error
        f.request_sent()
        t.write(b"B 2", b"K 3 + mine")
        assert "not marked (W line)" in sv.Worker._foreign_kernels(w, "time", True)
    finally:
        f.close()


def test_a_kernel_name_defined_in_two_cu_files_is_refused(tmp_path):
    """Red-team finding (twenty-fifth session, ex13): kernel.cu did the GEMM with a plain SIMT kernel
    named like the reference's, and decoy.cu (loaded by the worker's preload, never launched)
    defined a wgmma kernel of the same name: a launch is traced by name, so the required-PTX check
    read the decoy's PTX too and gave the plain kernel performance points. Two definitions of one
    kernel name across the .cu files are refused before anything runs, naming both files."""
    from grader.kernel import compile_source
    plain = 'extern "C" __global__ void gemm(float* c) { c[threadIdx.x] = 1.0f; }\n'
    decoy = ('extern "C" __global__ void gemm(float* c) {\n'
             '  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, '
             '{%8,%9}, {%0,%1,%2,%3};" : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(0), "r"(0), "r"(0), '
             '"r"(0), "r"(0), "r"(0));\n}\n')
    texts = {}
    for name, source in (("kernel.cu", plain), ("decoy.cu", decoy), ("other.cu", plain.replace("gemm", "pad"))):
        (tmp_path / name).write_text(source)
        texts[name] = compile_source(source, tmp_path / name, ("-std=c++17",), "sm_90")[1]
    own = kt.KernelPolicy((plain, decoy), tmp_path).judge(texts, {})
    assert own.duplicates == (("gemm", ("kernel.cu", "decoy.cu")),)
    assert own.forbidden_code() == ("kernel gemm is defined in kernel.cu and decoy.cu: the grader knows a launched "
                                    "kernel by its name, so each name must have one definition; fix: rename or "
                                    "remove the copy")
    distinct = kt.KernelPolicy((plain,), tmp_path).judge({"kernel.cu": texts["kernel.cu"], "other.cu": texts["other.cu"]}, {})
    assert distinct.duplicates == () and distinct.forbidden_code() == ""


def test_a_kernel_that_calls_through_a_function_pointer_is_refused(tmp_path):
    """Red-team pass 19: an own kernel called a device function of a module solution.py compiled
    itself (its address read with cuModuleGetGlobal, which the tracer does not see): library code
    ran inside a kernel traced as own. A kernel whose PTX calls through a pointer is refused before
    anything runs; direct calls of device functions stay fine."""
    from grader.kernel import compile_source
    by_pointer = ('typedef float (*Fn)(float);\n'
                  'extern "C" __global__ void k(const Fn* f, float* y) { y[threadIdx.x] = (*f)(y[threadIdx.x]); }\n')
    direct = ('__device__ __noinline__ float twice(float x) { return 2.0f * x; }\n'
              'extern "C" __global__ void k(float* y) { y[threadIdx.x] = twice(y[threadIdx.x]); }\n')
    judged = {}
    for name, source in (("pointer", by_pointer), ("direct", direct)):
        (tmp_path / "kernel.cu").write_text(source)
        ptx = compile_source(source, tmp_path / "kernel.cu", ("-std=c++17",), "sm_90")[1]
        judged[name] = kt.KernelPolicy((source,), tmp_path).judge({"kernel.cu": ptx}, {})
    assert judged["pointer"].indirect == ("k",)
    assert judged["pointer"].forbidden_code().startswith("kernel k calls through a function pointer")
    assert judged["direct"].indirect == () and judged["direct"].forbidden_code() == ""
