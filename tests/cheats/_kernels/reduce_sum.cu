// A plain two-kernel reduction (shared by the ex04 cheats): block sums with atomicAdd into a
// double accumulator, then one thread writes the float result.
extern "C" __global__ void zero(double* acc) { acc[0] = 0.0; }

extern "C" __global__ void block_sum(const float* __restrict__ x, double* acc, long long n) {
    __shared__ float part[256];
    float s = 0.0f;
    for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += (long long)gridDim.x * 256LL) s += x[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(acc, (double)part[0]);
}

extern "C" __global__ void store(const double* acc, float* out) { out[0] = (float)acc[0]; }

