// A two-pass variant: per-block partial sums in double, then one block adds them up.
extern "C" __global__ void block_sum_pass1(const float* __restrict__ x, double* partial, long long n) {
    __shared__ double part[256];
    double s = 0.0;
    for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += (long long)gridDim.x * 256LL) s += x[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = part[0];
}

extern "C" __global__ void block_sum_pass2(const double* partial, float* out, int blocks) {
    __shared__ double part[256];
    double s = 0.0;
    for (int i = threadIdx.x; i < blocks; i += 256) s += partial[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = (float)part[0];
}
