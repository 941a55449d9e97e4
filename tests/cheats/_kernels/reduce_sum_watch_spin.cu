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

// Spins until x[0] differs from `seen` (the parent re-drawing the inputs in place) or `ns` pass,
// then sums x into acc: the "precompute while the worker is stopped" trick.
extern "C" __global__ void watch_and_sum(const volatile float* x, float seen, double* acc, long long n, long long ns) {
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    t = t0;
    while (x[0] == seen && t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        double s = 0.0;
        for (long long i = 0; i < n; ++i) s += x[i];
        acc[0] = s;
    }
}

// Keeps one SM busy for `ns` nanoseconds.
extern "C" __global__ void spin(long long ns) {
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    t = t0;
    while (t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
}
