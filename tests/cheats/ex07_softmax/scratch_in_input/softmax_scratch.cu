// Row softmax that uses its input as scratch: x[r, :] = exp(x[r, :] - max) in place, then
// y = x / sum. One block per row (grid-stride over rows). Own kernels only (no library call).

extern "C" __global__ void softmax_rows_scratch(float* __restrict__ x, float* __restrict__ y,
                                                long long cols, long long row_end)
{
    __shared__ float sh[32];
    for (long long r = blockIdx.x; r < row_end; r += gridDim.x) {
        float* xr = x + r * cols;
        float* yr = y + r * cols;
        float m = __int_as_float(0xff800000);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
        m = block_max(m, sh);
        float s = 0.0f;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            const float e = expf(xr[j] - m);
            xr[j] = e;                       /* the input, overwritten */
            s += e;
        }
        s = block_sum(s, sh);
        const float inv = 1.0f / s;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] * inv;
    }
}
