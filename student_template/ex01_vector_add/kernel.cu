// ex01_vector_add -- your kernel. Read exercises/ex01_vector_add/README.md first.
//
// c[i] = a[i] + b[i] for 0 <= i < n (float32). solution.py launches this kernel with a grid
// that does NOT have one thread per element (it is capped at a few dozen blocks per SM), so
// every thread must loop over the elements it owns.

extern "C" __global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, long long n)
{
    // TODO: write c[i] = a[i] + b[i] for every i in [0, n).
    //   1. Correct first: a grid-stride loop. Start at this thread's global index
    //      (blockIdx.x * blockDim.x + threadIdx.x) and step by the total number of threads in the
    //      grid (gridDim.x * blockDim.x). Do the index arithmetic in 64-bit (long long): n can
    //      exceed 2^31.
    //   2. Then fast: move 16 bytes per load/store (float4) when a, b and c are all 16-byte
    //      aligned, finish the n % 4 leftover elements with scalar code, and keep a plain scalar
    //      loop for misaligned pointers. Try several independent loads in flight per thread.
}
