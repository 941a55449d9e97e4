// A correct but slow reduction (a fixed grid of 66 blocks, one double per thread, a shared-memory
// tree, one double atomicAdd per block) and a padding kernel that only waits: the cheat times the
// padding and runs the reduction after the worker's reply.
extern "C" __global__ void zero(double* acc) { acc[0] = 0.0; }

extern "C" __global__ void block_sum(const float* __restrict__ x, double* acc, long long n) {
    __shared__ double part[256];
    double s = 0.0;
    for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += (long long)gridDim.x * 256LL) s += x[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(acc, part[0]);
}

extern "C" __global__ void store(const double* acc, float* out) { out[0] = (float)acc[0]; }

// One thread waits `ns` nanoseconds of the global timer: what the timed calls run.
extern "C" __global__ void pad(long long ns) {
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    t = t0;
    while (t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
}
