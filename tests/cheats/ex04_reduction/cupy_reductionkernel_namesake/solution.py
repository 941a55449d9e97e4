# cheat: the sum is done by CuPy's reduction machinery (cupy.ReductionKernel, CuPy's generated block-tree reduction, the engine behind cupy.sum) compiled from solution.py, but named block_sum like the extern "C" kernel of kernel.cu: the trace records names only
import cupy

# CuPy writes the whole kernel (loads, block reduction, write-out); the name given is used verbatim as
# the extern "C" symbol: "block_sum", or "block_sum_pass1" and "block_sum_pass2" when CuPy's CUB
# accelerator (on by default) runs a full reduction in two passes. kernel.cu compiles all three.
_sum = cupy.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = (float)a", "0", "block_sum",
                            reduce_type="double")


def solve(x, out):
    _sum(x, out=out.reshape(()))
