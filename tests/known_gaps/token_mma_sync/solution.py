# cheat: a SIMT GEMM whose launched kernels execute one real mma.sync per warp on zero registers, adding exactly 0: required_ptx is met and tensor instructions do run, yet no product comes from them; an executed-instruction count alone would not catch it: the tensor work must be compared with the GEMM's FLOPs (2*M*N*K over the instruction's 4096 FLOPs per warp)
import cupy as cp
import numpy as np

from grader.kernel import load

_m = load("kernel.cu")


def solve(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    f = _m.get_function("gemm_f16" if a.dtype == np.float16 else "gemm_bf16")
    f(((N + 15) // 16, (M + 15) // 16), (16, 16), (a, b, c, np.int32(M), np.int32(N), np.int32(K)))
