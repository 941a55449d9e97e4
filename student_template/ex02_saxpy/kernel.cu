// ex02_saxpy -- your kernel. Read exercises/ex02_saxpy/README.md first.
//
// y[i] = a * x[i] + y[i] for 0 <= i < n (float32, in place). x and y are views that may start at
// ANY 4-byte boundary (not necessarily 16-byte aligned, and not necessarily aligned alike).
// solution.py launches this kernel with a grid that is capped at a few dozen blocks per SM, so
// every thread must loop over the elements it owns.

extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y, long long n)
{
    // TODO: update y[i] for every i in [0, n).
    //   1. Correct first: a grid-stride loop with 64-bit indices (n can be 2^29). Read y[i],
    //      compute a * x[i] + y[i], store it back. Until you write this, y keeps its old
    //      values and every case fails.
    //   2. Then fast: 16-byte accesses (float4). Work out from y's address how many elements
    //      lie before its first 16-byte boundary; do those and the last few leftovers with
    //      scalar code, and the middle with float4 loads/stores of y. x may have a different
    //      misalignment: check what (x + head) allows (16, 8 or only 4 bytes) and load x
    //      accordingly -- a float4 load from an address that is not 16-byte aligned is an error.
}
