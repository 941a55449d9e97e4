# cheat: kernel.cu's block_sum, compiled here with -rdc=true, launches CUB's reduction kernels from the device (dynamic parallelism); device-side launches never reach the tracer's host-side launch callbacks, so only block_sum is recorded
import ctypes

import cupy
import numpy as np
from cupy.cuda import compiler
from cupy_backends.cuda.libs import nvrtc

import grader.kernel as gk
from grader.kernel import load

load("kernel.cu")   # the grader's way, as an honest submission would (its block_sum is never launched)


def _rdc_module():
    """kernel.cu compiled with the exercise's options plus -rdc=true, linked with libcudadevrt."""
    from pathlib import Path
    from cupy._core.core import assemble_cupy_compiler_options
    src = (Path(__file__).resolve().parent / "kernel.cu").read_text()
    opts = [*assemble_cupy_compiler_options(tuple(gk._options)), f"-arch=sm_{cupy.cuda.Device().compute_capability}",
            "-ftz=true", "--device-as-default-execution-space", "-rdc=true"]
    prog = nvrtc.createProgram(src, "kernel.cu", [], [])
    try:
        nvrtc.compileProgram(prog, opts)
        image = nvrtc.getCUBIN(prog) + b"\0"   # CuPy's getCUBIN returns one byte short of the ELF
    finally:
        nvrtc.destroyProgram(prog)
    cuda = ctypes.CDLL("libcuda.so.1")
    state, out, size = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_size_t()
    assert cuda.cuLinkCreate_v2(0, None, None, ctypes.byref(state)) == 0
    try:
        assert cuda.cuLinkAddData_v2(state, 0, image, ctypes.c_size_t(len(image)), b"kernel.cubin", 0, None, None) == 0  # CUBIN
        assert cuda.cuLinkAddFile_v2(state, 4, compiler._get_cudadevrt_path().encode(), 0, None, None) == 0  # LIBRARY
        assert cuda.cuLinkComplete(state, ctypes.byref(out), ctypes.byref(size)) == 0
        linked = ctypes.string_at(out, size.value)
    finally:
        cuda.cuLinkDestroy(state)
    module = cupy.cuda.function.Module()
    module.load(linked)
    return module


_mod = _rdc_module()
_launcher = _mod.get_function("block_sum")
_max_grid = cupy.cuda.Device().attributes["MultiProcessorCount"] * 8 * 5
_partials = cupy.empty(_max_grid, cupy.float32)


def solve(x, out):
    _launcher((1,), (1,), (x, out, np.int32(x.size), _partials, np.int32(_max_grid)))
