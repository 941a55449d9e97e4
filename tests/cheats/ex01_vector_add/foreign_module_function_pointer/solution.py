# cheat: red-team pass 19: solution.py compiles a module of its own (cupy.RawModule, from a string the source checks read as Python) whose device function does the work and whose global holds that function's address; kernel.cu's kernel, launched from the own module and traced as own, reads the address (cuModuleGetGlobal moves no data) and calls through it, so the work runs in code the grader never checked (with CUB's scan in that module: a library's work at full speed)
import cupy as cp
import numpy as np

from grader.kernel import load

_FOREIGN = r'''
typedef float (*AddFn)(float, float);
extern "C" __device__ __noinline__ float foreign_add(float x, float y) { return x + y; }
extern "C" __device__ AddFn foreign_add_ptr = foreign_add;
'''
_foreign = cp.RawModule(code=_FOREIGN, options=("-rdc=true",))
_module = load("kernel.cu")
_add = _module.get_function("vector_add")


def solve(a, b, c):
    n = c.size
    if n == 0:
        return
    fn = _foreign.get_global("foreign_add_ptr")
    _add((max(1, min((n + 255) // 256, 65535)),), (256,), (a, b, c, np.int64(n), fn))
