// ex07_softmax -- your kernel. Read exercises/ex07_softmax/README.md first.
//
// y[r, :] = softmax(x[r, :]) for every row r of the row-major (rows, cols) float32 matrix x.
// solution.py launches ONE BLOCK PER ROW (gridDim.x = rows, blockDim.x = 256); change the
// launch as you like once this works.

extern "C" __global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y,
                                          long long rows, long long cols)
{
    // TODO: block blockIdx.x computes row r = blockIdx.x (row r starts at x + r * cols; do that
    // product in 64-bit).
    //   1. m = max over the row: each thread scans columns threadIdx.x, threadIdx.x + blockDim.x,
    //      ..., then a block reduction (warp shuffles + __shared__ + __syncthreads()).
    //   2. s = sum over the row of exp(x - m), same pattern. Subtracting m first is what keeps
    //      exp() from overflowing for inputs like 8000.
    //   3. y = exp(x - m) / s.
    //   This reads x three times. The fast version reads it once: keep the row in registers
    //   (one warp per row for short rows, 16-byte loads when cols % 4 == 0), or combine the max
    //   and the sum in one pass with a running max (rescale the sum when the max grows).
}
