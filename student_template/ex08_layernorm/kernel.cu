// ex08_layernorm -- your kernel. Read exercises/ex08_layernorm/README.md first.
//
// For every row r of the row-major (rows, cols) float32 matrix x:
//   mean = sum(x[r, :]) / cols,  var = sum((x[r, :] - mean)^2) / cols,
//   y[r, c] = (x[r, c] - mean) / sqrt(var + eps) * gamma[c] + beta[c].
// solution.py launches ONE BLOCK OF 256 THREADS PER ROW (gridDim.x = rows); change the launch
// as you like once this works.

extern "C" __global__ void layernorm(const float* __restrict__ x, const float* __restrict__ gamma,
                                     const float* __restrict__ beta, float* __restrict__ y,
                                     long long rows, int cols, float eps)
{
    // TODO: block blockIdx.x normalises row r = blockIdx.x (row r starts at x + r * cols; do
    // that product in 64-bit).
    //   1. mean: each thread sums columns threadIdx.x, threadIdx.x + blockDim.x, ...; then a
    //      block reduction (warp shuffles + __shared__ + __syncthreads()).
    //   2. var: the same over (x - mean)^2. Subtract the mean first: the one-pass formula
    //      E[x^2] - mean^2 cancels catastrophically in float32 when |mean| >> std.
    //   3. y = (x - mean) * rsqrtf(var + eps) * gamma + beta.
    //   This reads x three times. The fast version reads it once: keep the row in registers
    //   (each thread holds its few elements), use 16-byte loads when cols % 4 == 0, and pick a
    //   warp per row for short rows.
}
