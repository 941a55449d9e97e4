// Row softmax: one block per row (grid-stride over rows), max and Kahan-summed exp by block
// reductions, then a write pass. Rows [0, row_end) are computed.

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y,
                                        long long cols, long long row_end)
{
    __shared__ float sh[32];
    for (long long r = blockIdx.x; r < row_end; r += gridDim.x) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float m = __int_as_float(0xff800000);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
        m = block_max(m, sh);
        float s = 0.0f, comp = 0.0f;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            const float t = expf(xr[j] - m) - comp;
            const float u = s + t;
            comp = (u - s) - t;
            s = u;
        }
        s = block_sum(s, sh);
        const float inv = 1.0f / s;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) * inv;
    }
}
